#include "server/generation.h"

#include "core/elapsed.h"
#include "text/unicode.h"

#include <algorithm>

namespace hearth::server {

GenerationStream::GenerationStream(std::shared_ptr<RequestHandle> handle, const text::Tokenizer& tokenizer,
                                   std::vector<std::string> stops, std::vector<int32_t> eos_ids, bool logprobs)
    : handle_(std::move(handle)),
      tok_(tokenizer),
      decoder_(tokenizer),
      stop_(std::move(stops)),
      eos_(std::move(eos_ids)),
      want_logprobs_(logprobs),
      start_(std::chrono::steady_clock::now()) {}

void GenerationStream::release(size_t up_to, bool partial, Piece& out) {
  // Whole tokens up to `up_to`; with `partial`, also a token that began before it.
  while (!pending_.empty()) {
    const Pending& p = pending_.front();
    const bool ok = p.end <= up_to || (partial && p.start < up_to);
    if (!ok) break;
    out.logprobs.push_back(std::move(pending_.front().lp));
    pending_.pop_front();
  }
}

void GenerationStream::finish() {
  // Wait for the engine to close the channel (a cancelled request closes at
  // its next step), dropping anything it sent after we stopped listening.
  while (handle_->next()) {
  }
  const FinishInfo& info = handle_->finish();
  prompt_tokens_ = info.prompt_tokens;
  error_ = info.error;
  request_fault_ = info.request_fault;
  if (stop_.stopped()) finish_reason_ = "stop";
  else if (info.reason == FinishReason::Stop) finish_reason_ = "stop";
  else if (info.reason == FinishReason::Length) finish_reason_ = "length";
  else finish_reason_ = "cancelled";
  finished_ = true;
}

bool GenerationStream::next(Piece& out) {
  const bool more = next_piece(out);
  text_ += out.text;
  return more;
}

bool GenerationStream::next_piece(Piece& out) {
  out = Piece{};
  if (done_) return false;
  for (;;) {
    if (finished_) {
      done_ = true;
      return false;
    }
    std::optional<TokenEvent> ev = handle_->next();
    if (!ev) {
      finish();
      if (!stop_.stopped()) {
        std::string tail = decoder_.flush();
        fed_ += tail.size();
        out.text = stop_.push(tail);
        if (stop_.stopped()) finish_reason_ = "stop";  // the held-back tail completed a stop string
        else out.text += stop_.flush();
        emitted_ += out.text.size();
        if (want_logprobs_) release(emitted_, stop_.stopped(), out);
        if (!stop_.stopped()) {
          for (auto& p : pending_) out.logprobs.push_back(std::move(p.lp));
        }
      }
      pending_.clear();
      done_ = out.empty();
      return !done_;
    }

    if (completion_tokens_ == 0) ttft_ = seconds_since(start_);
    ++completion_tokens_;
    ids_.push_back(ev->token);
    if (std::find(eos_.begin(), eos_.end(), ev->token) != eos_.end()) continue;  // not shown

    std::string text = decoder_.push(ev->token);
    if (want_logprobs_) {
      TokenLogprob lp;
      lp.id = ev->token;
      lp.text = text.empty() ? tok_.decode(std::span<const int32_t>(&ev->token, 1)) : text;
      std::string raw = tok_.token_bytes(ev->token);
      lp.bytes = text.empty() || !text::unicode::is_valid(raw) ? std::move(raw) : text;
      lp.chars = int64_t(text::unicode::count_code_points(text));
      lp.logprob = ev->logprob;
      lp.top = std::move(ev->top);
      pending_.push_back({std::move(lp), fed_, fed_ + text.size()});
    }
    fed_ += text.size();
    out.text = stop_.push(text);
    emitted_ += out.text.size();
    if (stop_.stopped()) {
      handle_->stop();  // ends as stopped: the engine counts no cancel and keeps no checkpoint
      if (want_logprobs_) release(emitted_, true, out);
      pending_.clear();
      finish();
      return true;  // the text before the stop string (perhaps ""), then done
    }
    if (want_logprobs_) release(emitted_, false, out);
    if (!out.empty()) return true;
  }
}

}  // namespace hearth::server
