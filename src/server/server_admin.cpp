// The admin routes' content: the model objects, /stats and /metrics.
#include <malloc.h>

#include <sstream>

#include "core/elapsed.h"
#include "server/server_impl.h"

namespace hearth::server {

ojson Server::Impl::model_object() const {
  return {{"id", model.id},
          {"object", "model"},
          {"created", model.created},
          {"owned_by", "hearth"},
          {"architecture", model.architecture},
          {"context_length", engine->ctx_size()},
          {"generates_text", engine->model().has_output_head()},
          {"embedding", embedding_info()}};
}

ojson Server::Impl::whisper_model_object() const {
  return {{"id", transcription->model_id()},
          {"object", "model"},
          {"created", started_unix},
          {"owned_by", "hearth"},
          {"architecture", "whisper"},
          {"context_length", whisper_context},
          {"transcription", true}};
}

void Server::Impl::trim_if_idle() const {
  // Freed heap goes back to the OS only when asked; do it while idle so RSS
  // reflects what is live.
  if (metrics.in_flight.load() == 0) {
    const EngineStats st = engine ? engine->stats() : EngineStats{};
    if (st.queued == 0 && st.running == 0) malloc_trim(0);
  }
}

ojson Server::Impl::stats() const {
  trim_if_idle();
  const ProcessMemory mem = process_memory();
  const double uptime = seconds_since(started);
  const auto& m = metrics;
  const ojson server = {{"version", kVersion},
                        {"sanitized", kSanitized},
                        {"host", opt.host},
                        {"port", port},
                        {"started", started_unix},
                        {"uptime_seconds", uptime},
                        {"api_key_required", !opt.api_key.empty()},
                        {"max_body_bytes", opt.max_body_bytes},
                        {"shutting_down", draining.load()},
                        {"http_requests_total", m.http_total()},
                        {"requests_in_flight", m.in_flight.load()}};
  if (!engine)  // transcription only: no queue, KV, prompt cache or generation
    return {{"server", server},
            {"model",
             {{"id", model.id},
              {"path", model.dir.string()},
              {"architecture", model.architecture},
              {"context_length", whisper_context}}},
            {"memory",
             {{"rss_bytes", mem.rss_bytes},
              {"peak_rss_bytes", mem.peak_rss_bytes},
              {"virtual_bytes", mem.virtual_bytes}}},
            {"transcription", transcription->status()}};
  const EngineStats st = engine->stats();
  const double decode_s = double(m.decode_us.load()) / 1e6;
  const auto& cfg = engine->model().config();
  const AdmissionInfo& ad = engine->admission();
  const ResponseStoreStats rs = responses.stats();
  ojson prompt_cache = {{"enabled", false}};
  if (auto c = engine->cache_stats())
    prompt_cache = {{"enabled", true},
                    {"entries", c->entries},
                    {"bytes", c->bytes},
                    {"max_bytes", c->max_bytes},
                    {"hits", c->hits},
                    {"misses", c->misses},
                    {"hit_tokens", c->hit_tokens},
                    {"session_hits", c->session_hits},
                    {"session_misses", c->session_misses},
                    {"sessions", c->sessions},
                    {"prefix_scans", c->prefix_scans},
                    {"evictions", c->evictions}};
  ojson ssd_cache = nullptr;
  if (auto d = engine->ssd_stats()) {
    const auto c = engine->cache_stats();
    ssd_cache = {{"dir", engine->options().ssd_dir.string()},
                 {"entries", d->entries},
                 {"bytes", d->bytes},
                 {"max_bytes", d->max_bytes},
                 {"other_namespaces_bytes", d->other_bytes},
                 {"restores", d->restores},
                 {"restored_blocks", c->restored_blocks},
                 {"spills", d->spills},
                 {"restore_ms_total", c->restore_ms_total},
                 {"demotions", c->demotions},
                 {"pending_spill_bytes", d->pending_spill_bytes},
                 {"pending_spills", d->pending_spills},
                 {"writes_paused", d->paused},
                 {"write_pauses", d->pauses},
                 {"dropped_spills", d->dropped_spills},
                 {"failed_spills", d->failed_spills},
                 {"skipped_files", d->skipped},
                 {"evicted", d->evicted},
                 {"cap_lowerings", d->cap_lowerings},
                 {"last_error", d->last_error},
                 {"longest_durable_prefix_tokens", engine->longest_durable_prefix_tokens()}};
  }
  ojson out = {
      {"server", server},
      {"model",
       {{"id", model.id},
        {"path", model.dir.string()},
        {"architecture", model.architecture},
        {"vocab_size", cfg.vocab_size},
        {"context_length", engine->ctx_size()},
        {"layers", cfg.num_layers},
        {"hidden_size", cfg.hidden_size},
        {"weight_bytes", engine->model().weight_bytes()},
        {"threads", engine->threads()}}},
      {"queue",
       {{"queued", st.queued},
        {"running", st.running},
        {"max_queue", opt.max_queue},
        {"max_batch", opt.max_batch},
        {"rejected_total", st.requests_rejected}}},
      {"memory",
       {{"rss_bytes", mem.rss_bytes},
        {"peak_rss_bytes", mem.peak_rss_bytes},
        {"virtual_bytes", mem.virtual_bytes},
        {"weight_bytes", engine->model().weight_bytes()},
        {"kv_bytes", st.kv_bytes},
        {"kv_blocks_total", st.kv_blocks_total},
        {"kv_blocks_free", st.kv_blocks_free},
        {"kv_blocks_cached", st.kv_blocks_cached},
        {"kv_sequences", st.sequences}}},
      {"admission",
       {{"max_safe_context", ad.max_safe_context},
        {"enforced_context_tokens", ad.enforced_context_tokens},
        {"memory_budget_bytes", ad.memory_budget_bytes},
        {"usable_bytes", ad.usable_bytes},
        {"ssd_queue_bytes", ad.ssd_queue_bytes},
        {"weights_bytes", ad.weights_bytes},
        {"preemptions", st.preemptions},
        {"pressure_evictions", st.pressure_evictions}}},
      {"prompt_cache", prompt_cache},
      {"response_store",
       {{"entries", rs.entries}, {"bytes", rs.bytes}, {"max_bytes", rs.max_bytes}, {"ttl_ms", rs.ttl_ms}}},
      {"generation",
       {{"requests_total", st.requests_total},
        {"chat_requests", m.chat_requests.load()},
        {"completion_requests", m.completion_requests.load()},
        {"messages_requests", m.messages_requests.load()},
        {"responses_requests", m.responses_requests.load()},
        {"embedding_requests", m.embedding_requests.load()},
        {"embedding_inputs", m.embedding_inputs.load()},
        {"streamed_requests", m.streamed_requests.load()},
        {"completed", m.completed.load()},
        {"cancelled", m.client_cancelled.load()},
        {"failed", m.failed.load()},
        {"engine_cancelled", st.requests_cancelled},
        {"engine_failed", st.requests_failed},
        {"prompt_tokens_total", st.prompt_tokens_total},
        {"cached_tokens_total", st.cached_tokens_total},
        {"checkpoints", st.checkpoints},
        {"checkpoints_saved", st.checkpoints_saved},
        {"checkpoints_resumed", st.checkpoints_resumed},
        {"generated_tokens_total", st.generated_tokens_total},
        {"engine_steps", st.steps},
        {"time_to_first_token_avg_seconds",
         m.time_to_first_token.count() ? m.time_to_first_token.sum() / double(m.time_to_first_token.count()) : 0.0},
        {"decode_tokens_per_second_avg", decode_s > 0 ? double(m.decode_tokens.load()) / decode_s : 0.0}}},
  };
  if (!ssd_cache.is_null()) out["ssd_cache"] = ssd_cache;  // present only with --ssd-cache
  if (transcription) out["transcription"] = transcription_status();  // only with --whisper-model
  return out;
}

std::string Server::Impl::prometheus() const {
  trim_if_idle();
  const ProcessMemory mem = process_memory();
  std::ostringstream o;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << value << '\n';
  };
  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " histogram\n";
    auto b = h.buckets();
    for (size_t i = 0; i < b.size(); ++i) o << name << "_bucket{le=\"" << Histogram::kBounds[i] << "\"} " << b[i] << '\n';
    o << name << "_bucket{le=\"+Inf\"} " << h.count() << '\n';
    o << name << "_sum " << h.sum() << '\n' << name << "_count " << h.count() << '\n';
  };
  o << "# HELP hearth_http_requests_total HTTP requests answered, by route and status.\n"
       "# TYPE hearth_http_requests_total counter\n";
  for (const auto& [key, n] : metrics.http_counts())
    o << "hearth_http_requests_total{route=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << '\n';
  const auto& m = metrics;
  metric("hearth_uptime_seconds", "gauge", "Seconds since the server started.",
         seconds_since(started));
  metric("hearth_process_resident_memory_bytes", "gauge", "Resident set size.", mem.rss_bytes);
  metric("hearth_process_peak_resident_memory_bytes", "gauge", "Peak resident set size.", mem.peak_rss_bytes);
  if (!engine) return o.str();  // transcription only: the rest is the chat engine's
  const EngineStats st = engine->stats();
  metric("hearth_requests_in_flight", "gauge", "Generation requests being answered.", m.in_flight.load());
  metric("hearth_queue_waiting", "gauge", "Requests waiting for a batch slot.", st.queued);
  metric("hearth_queue_running", "gauge", "Requests being generated.", st.running);
  metric("hearth_queue_max", "gauge", "Queue limit (--max-queue).", opt.max_queue);
  metric("hearth_requests_rejected_total", "counter", "Requests refused with 429 because the queue was full.",
         st.requests_rejected);
  metric("hearth_generation_requests_total", "counter", "Requests accepted by the engine.", st.requests_total);
  metric("hearth_generation_completed_total", "counter", "Requests answered in full.", m.completed.load());
  metric("hearth_generation_cancelled_total", "counter", "Requests cancelled (client gone or shutdown).",
         m.client_cancelled.load());
  metric("hearth_generation_failed_total", "counter", "Requests the engine failed.", m.failed.load());
  metric("hearth_prompt_tokens_total", "counter", "Prompt tokens prefilled.", st.prompt_tokens_total);
  metric("hearth_generated_tokens_total", "counter", "Tokens generated.", st.generated_tokens_total);
  metric("hearth_engine_steps_total", "counter", "Engine batch steps run.", st.steps);
  metric("hearth_kv_blocks_total", "gauge", "KV pool blocks.", st.kv_blocks_total);
  metric("hearth_kv_blocks_free", "gauge", "KV pool blocks free.", st.kv_blocks_free);
  metric("hearth_kv_blocks_cached", "gauge", "KV pool blocks held only by the prompt cache, which it could give back.", st.kv_blocks_cached);
  metric("hearth_kv_bytes", "gauge", "KV pool size in bytes.", st.kv_bytes);
  metric("hearth_preemptions_total", "counter", "Requests that gave back their KV and resumed later.",
         st.preemptions);
  metric("hearth_cached_tokens_total", "counter", "Prompt tokens taken from the prompt cache.",
         st.cached_tokens_total);
  metric("hearth_generation_checkpoints", "gauge", "Cancelled requests kept for resumption.", st.checkpoints);
  metric("hearth_generation_checkpoints_resumed_total", "counter", "Requests resumed from a checkpoint.",
         st.checkpoints_resumed);
  if (auto c = engine->cache_stats()) {
    metric("hearth_prompt_cache_entries", "gauge", "Blocks indexed by the prompt cache.", c->entries);
    metric("hearth_prompt_cache_bytes", "gauge", "Bytes of the blocks indexed by the prompt cache.", c->bytes);
    metric("hearth_prompt_cache_max_bytes", "gauge", "Prompt cache capacity (--prompt-cache).", c->max_bytes);
    metric("hearth_prompt_cache_hits_total", "counter", "Requests that reused cached blocks (found at admission, read back or shared).", c->hits);
    metric("hearth_prompt_cache_misses_total", "counter", "Requests that reused no cached block.", c->misses);
    metric("hearth_prompt_cache_session_hits_total", "counter", "Requests continuing their session's checkpoint.",
           c->session_hits);
    metric("hearth_prompt_cache_session_misses_total", "counter", "Requests of a session with an edited history.",
           c->session_misses);
    metric("hearth_prompt_cache_prefix_scans_total", "counter", "Prefix lookups run.", c->prefix_scans);
    metric("hearth_prompt_cache_evictions_total", "counter", "Blocks evicted from the prompt cache.", c->evictions);
  }
  if (auto d = engine->ssd_stats()) {
    const auto c = engine->cache_stats();
    metric("hearth_ssd_cache_entries", "gauge", "Blocks on SSD.", d->entries);
    metric("hearth_ssd_cache_bytes", "gauge", "Bytes of the blocks on SSD.", d->bytes);
    metric("hearth_ssd_cache_max_bytes", "gauge", "SSD cache capacity in effect (--ssd-cache-max, less while the disk is full).",
           d->max_bytes);
    metric("hearth_ssd_cache_restores_total", "counter", "Blocks read back from SSD.", d->restores);
    metric("hearth_ssd_cache_spills_total", "counter", "Blocks written to SSD.", d->spills);
    metric("hearth_ssd_cache_restore_seconds_total", "counter", "Time spent reading prefixes back from SSD.",
           c->restore_ms_total / 1000);
    metric("hearth_ssd_cache_demotions_total", "counter", "Idle blocks dropped from RAM once on SSD.", c->demotions);
    metric("hearth_ssd_cache_pending_spill_bytes", "gauge", "Bytes waiting to be written.", d->pending_spill_bytes);
    metric("hearth_ssd_cache_dropped_spills_total", "counter", "Writes dropped because the queue was full.",
           d->dropped_spills);
    metric("hearth_ssd_cache_failed_spills_total", "counter", "Writes that failed.", d->failed_spills);
    metric("hearth_ssd_cache_cap_lowerings_total", "counter", "Times a full disk brought the capacity down.",
           d->cap_lowerings);
    metric("hearth_ssd_cache_skipped_files_total", "counter", "Corrupt, foreign or half-written files removed.",
           d->skipped);
  }
  metric("hearth_weight_bytes", "gauge", "Model weights in bytes.", engine->model().weight_bytes());
  histogram("hearth_time_to_first_token_seconds", "From acceptance to the first generated token.",
            m.time_to_first_token);
  histogram("hearth_request_duration_seconds", "From acceptance to the last token.", m.request_duration);
  metric("hearth_decode_seconds_total", "counter", "Time spent decoding after the first token.",
         double(m.decode_us.load()) / 1e6);
  metric("hearth_decode_tokens_total", "counter", "Tokens decoded after the first one.", m.decode_tokens.load());
  return o.str();
}

}  // namespace hearth::server
