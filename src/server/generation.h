// One running request seen as text: pulls token events from the engine,
// detokenizes them incrementally, applies the stop strings (never showing
// one in part), and pairs each token's logprobs with the text that carried
// it. Protocol-neutral: the OpenAI routes turn its pieces into JSON or SSE.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/stop_matcher.h"
#include "text/tokenizer/tokenizer.h"

namespace hearth::server {

struct TokenLogprob {
  int32_t id = 0;
  std::string text;  // the token as text ("" while it is an incomplete UTF-8 sequence)
  // Its bytes in the reply: the text's, or where the token holds part of a
  // character (alone it is no valid UTF-8), its own bytes, so that joined
  // they give the reply's bytes.
  std::string bytes;
  int64_t chars = 0;  // code points of the reply's text this token completes (0 within a character)
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // alternatives (id, log p), best first
};

struct Piece {
  std::string text;
  std::vector<TokenLogprob> logprobs;  // only when logprobs were asked for
  bool empty() const { return text.empty() && logprobs.empty(); }
};

class GenerationStream {
 public:
  GenerationStream(std::shared_ptr<RequestHandle> handle, const text::Tokenizer& tokenizer,
                   std::vector<std::string> stops, std::vector<int32_t> eos_ids, bool logprobs);

  // Blocks for the next piece to send. Returns false once the generation is
  // over and everything has been handed out; finish_reason() etc. are then set.
  bool next(Piece& out);

  // "stop" (EOS or a stop string), "length" (max_tokens or the context end),
  // "cancelled" (the client left or the server is shutting down).
  const std::string& finish_reason() const { return finish_reason_; }
  const std::string& error() const { return error_; }  // set if the engine failed the request
  bool request_fault() const { return request_fault_; }  // the error is the request's own
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const { return completion_tokens_; }
  // True once the engine has closed the request (info() is valid only then).
  bool finished() const { return finished_; }
  const FinishInfo& info() const { return handle_->finish(); }
  // Seconds from construction to the first token event (0 if none came).
  double time_to_first_token() const { return ttft_; }
  void cancel() { handle_->cancel(); }
  // Every token the engine produced (EOS included), and the text handed out.
  const std::vector<int32_t>& generated_ids() const { return ids_; }
  const std::string& text() const { return text_; }
  bool stopped_by_string() const { return stop_.stopped(); }
  const std::string& stop_string() const { return stop_.matched(); }  // the stop string that ended it
  RequestHandle& handle() { return *handle_; }

 private:
  void finish();
  bool next_piece(Piece& out);
  void release(size_t up_to_bytes, bool partial, Piece& out);

  std::shared_ptr<RequestHandle> handle_;
  const text::Tokenizer& tok_;
  text::StreamDecoder decoder_;
  StopMatcher stop_;
  std::vector<int32_t> eos_;
  bool want_logprobs_;
  std::chrono::steady_clock::time_point start_;
  double ttft_ = 0;

  // Tokens whose logprobs wait until their text is released: [start, end)
  // byte offsets in the text fed to the stop matcher.
  struct Pending {
    TokenLogprob lp;
    size_t start, end;
  };
  std::deque<Pending> pending_;
  size_t fed_ = 0, emitted_ = 0;

  bool done_ = false, finished_ = false;
  std::string finish_reason_, error_;
  bool request_fault_ = false;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  std::vector<int32_t> ids_;
  std::string text_;
};

}  // namespace hearth::server
