// POST /v1/embeddings (OpenAI) and POST /api/embed (Ollama): each input is
// tokenized (special tokens as the checkpoint's tokenizer adds them), queued
// in the engine as an embedding request, pooled as the checkpoint says and
// L2-normalized (engine/embedding.h).
#include <cstring>
#include <mutex>

#include "server/server_impl.h"

namespace hearth::server {

namespace {

std::string base64(std::span<const float> v) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes(v.size() * 4);  // little-endian float32, as numpy's frombuffer reads it
  std::memcpy(bytes.data(), v.data(), bytes.size());
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
    out += kAlphabet[n >> 18 & 63];
    out += kAlphabet[n >> 12 & 63];
    out += i + 1 < bytes.size() ? kAlphabet[n >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// The handles of one request's inputs, cancelled together when its client leaves.
struct EmbeddingFlight {
  Server::Impl& s;
  std::mutex mutex;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  bool client_gone = false;
  std::shared_ptr<void> client_watch;  // cancel_all() if the client goes

  explicit EmbeddingFlight(Server::Impl& server) : s(server) {}
  ~EmbeddingFlight() {
    client_watch.reset();
    for (auto& h : handles) s.end_flight(h);
  }
  // Throws once the client is gone, so embed() queues no more of its inputs.
  void add(const std::shared_ptr<RequestHandle>& h) {
    s.begin_flight(h);
    std::lock_guard lock(mutex);
    handles.push_back(h);
    if (client_gone) throw std::runtime_error("the client went away");
  }
  void cancel_all() {
    std::lock_guard lock(mutex);
    client_gone = true;
    for (auto& h : handles) h->cancel();
  }
};

}  // namespace

ojson Server::Impl::embedding_info() const {
  if (!model.pooling_error.empty()) return {{"available", false}, {"error", model.pooling_error}};
  return {{"available", true},
          {"pooling", io::pooling_name(model.pooling.pooling)},
          {"pooling_source", model.pooling.source.empty() ? "default (no Sentence Transformers config)"
                                                           : model.pooling.source},
          {"normalized", true},
          {"dimensions", engine->model().config().hidden_size}};
}

EmbeddingBatch Server::Impl::embed(const http::Request& req, const EmbeddingsRequest& r) {
  if (!model.pooling_error.empty()) throw ApiError(400, model.pooling_error, "invalid_request_error", "model");
  const int64_t hidden = engine->model().config().hidden_size;
  if (r.dimensions > hidden)
    throw bad_request("dimensions", "'dimensions' is " + std::to_string(r.dimensions) + "; this model's embeddings have " +
                                        std::to_string(hidden));
  const int64_t ctx = engine->ctx_size();
  std::vector<std::vector<int32_t>> inputs;
  inputs.reserve(r.inputs.size());
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    std::vector<int32_t> ids = r.inputs[i].is_ids ? r.inputs[i].ids : tok->encode(r.inputs[i].text, true);
    if (ids.empty()) throw bad_request("input", "input " + std::to_string(i) + " has no tokens");
    if (int64_t(ids.size()) > ctx) {
      if (!r.truncate)
        throw bad_request("input", "input " + std::to_string(i) + " has " + std::to_string(ids.size()) +
                                       " tokens; this model's context holds " + std::to_string(ctx),
                          "context_length_exceeded");
      ids.resize(size_t(ctx));
    }
    inputs.push_back(std::move(ids));
  }
  ++metrics.embedding_requests;
  metrics.embedding_inputs += int64_t(inputs.size());
  EmbeddingFlight flight(*this);
  flight.client_watch = req.client->on_gone([&flight] { flight.cancel_all(); });
  try {
    return hearth::embed(*engine, inputs, model.pooling.pooling, r.dimensions,
                         [&flight](const std::shared_ptr<RequestHandle>& h) { flight.add(h); });
  } catch (const QueueFull&) {
    ++metrics.rejected_queue_full;
    throw ApiError(429, "the request queue is full (" + std::to_string(opt.max_queue) + " waiting); retry later",
                   "resource_admission", {}, "queue_full");
  } catch (const std::invalid_argument& e) {
    throw bad_request("input", e.what());
  } catch (const std::runtime_error& e) {
    if (draining) throw ApiError(503, "the server is shutting down", "server_error", {}, "server_shutting_down");
    throw ApiError(500, std::string("embedding failed: ") + e.what(), "server_error");
  }
}

void Server::Impl::openai_embeddings(const http::Request& req, http::Response& res) {
  const EmbeddingsRequest r = parse_openai_embeddings(parse_body(req.body));
  const EmbeddingBatch batch = embed(req, r);
  ojson data = ojson::array();
  for (size_t i = 0; i < batch.vectors.size(); ++i) {
    ojson item = {{"object", "embedding"}, {"index", i}};
    if (r.base64) item["embedding"] = base64(batch.vectors[i]);
    else item["embedding"] = batch.vectors[i];
    data.push_back(std::move(item));
  }
  res.set_content(dump(ojson{{"object", "list"},
                             {"data", std::move(data)},
                             {"model", model.id},
                             {"usage", {{"prompt_tokens", batch.tokens}, {"total_tokens", batch.tokens}}}}),
                  "application/json");
}

void Server::Impl::ollama_embed(const http::Request& req, http::Response& res) {
  const Clock::time_point t0 = Clock::now();
  const EmbeddingBatch batch = embed(req, parse_ollama_embed(parse_body(req.body)));
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  res.set_content(dump(ojson{{"model", model.id},
                             {"embeddings", batch.vectors},
                             {"total_duration", ns},
                             {"load_duration", 0},
                             {"prompt_eval_count", batch.tokens}}),
                  "application/json");
}

}  // namespace hearth::server
