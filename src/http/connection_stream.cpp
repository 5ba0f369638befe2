// The streamed side of a connection: a worker writes the body through a
// StreamWriter into the StreamState it shares with the I/O thread, which
// hands the queued bytes to the socket (drain_stream), ends the body
// (end_stream), and asks a quiet event stream's client whether it is still
// there (probe_stream).
#include <chrono>
#include <cstdio>

#include "core/elapsed.h"
#include "http/connection.h"

namespace hearth::http {

using boost::system::error_code;

namespace {

std::string hex(size_t n) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%zx", n);
  return buf;
}

}  // namespace

void queue_stream_bytes(StreamState& state, std::string_view bytes, bool chunked) {
  if (chunked) state.queued += hex(bytes.size()) + "\r\n";
  state.queued += bytes;
  if (chunked) state.queued += "\r\n";
  state.unsent += bytes.size() + (chunked ? hex(bytes.size()).size() + 4 : 0);
}

namespace {

class StreamWriter final : public StreamSink {
 public:
  StreamWriter(std::shared_ptr<StreamState> state, std::function<void()> post_flush, bool chunked,
               double timeout, size_t cap, double min_rate)
      : state_(std::move(state)),
        post_flush_(std::move(post_flush)),
        chunked_(chunked),
        timeout_(timeout),
        cap_(cap),
        min_rate_(min_rate) {}

  bool write(std::string_view bytes) override {
    std::unique_lock lock(state_->mutex);
    if (state_->closed) return false;
    if (bytes.empty()) return true;  // a zero-size chunk would end the body
    queue_stream_bytes(*state_, bytes, chunked_);
    if (!state_->flush_posted) {
      state_->flush_posted = true;
      post_flush_();
    }
    if (state_->unsent <= cap_) return true;
    // A client that reads nothing for the write timeout is dropped, and so is
    // one that reads, but slower than min_rate_ over all the time this worker
    // has waited on it: a trickle would otherwise hold the worker for as long
    // as the rest of the body takes at its pace (hours, for a few MB).
    const auto t0 = std::chrono::steady_clock::now();
    const size_t unsent = state_->unsent;
    const bool room = state_->drained.wait_for(lock, std::chrono::duration<double>(timeout_), [&] {
      return state_->closed || state_->unsent <= cap_;
    });
    waited_ += seconds_since(t0);
    drained_ += double(unsent - std::min(unsent, state_->unsent));
    const bool too_slow = waited_ > timeout_ && drained_ < min_rate_ * waited_;
    if (!room || too_slow) state_->closed = state_->abandoned = true;  // end_stream() closes
    return !state_->closed;
  }

 private:
  std::shared_ptr<StreamState> state_;
  std::function<void()> post_flush_;
  bool chunked_;
  double timeout_;
  size_t cap_;
  double min_rate_;
  double waited_ = 0, drained_ = 0;  // seconds this writer waited for room, bytes sent meanwhile
};

}  // namespace

void Connection::stream_body(const StreamProvider& provider,
                             const std::shared_ptr<StreamState>& state, bool chunked) {
  auto post_flush = [self = shared_from_this()] {
    asio::post(self->server_.io, [self] { guarded(*self, [&] { self->drain_stream(); }); });
  };
  StreamWriter writer(state, post_flush, chunked, server_.limits.write_timeout,
                      server_.limits.stream_buffer_bytes, server_.limits.min_stream_rate);
  try {
    provider(writer);
  } catch (const std::exception& e) {  // the head is out: the client sees the body cut short
    std::fprintf(stderr, "hearth: a streamed response failed: %s\n", e.what());
    std::lock_guard lock(state->mutex);
    state->abandoned = true;
  }
  {
    std::lock_guard lock(state->mutex);
    state->finished = true;
  }
  asio::post(server_.io, [self = shared_from_this()] { guarded(*self, [&] { self->end_stream(); }); });
}

// Hands what the worker queued to the socket.
void Connection::drain_stream() {
  if (!stream_ || phase_ == Phase::Closed) return;
  std::string bytes;
  {
    std::lock_guard lock(stream_->mutex);
    bytes.swap(stream_->queued);
    stream_->flush_posted = false;
  }
  if (head_only_) {  // counted as sent at once
    std::lock_guard lock(stream_->mutex);
    stream_->unsent -= bytes.size();
    stream_->drained.notify_all();
    return;
  }
  if (!bytes.empty()) write(std::move(bytes), true);
  flush();
}

void Connection::end_stream() {
  if (!stream_ || phase_ == Phase::Closed) return;
  bool abandoned;
  {
    std::lock_guard lock(stream_->mutex);
    abandoned = stream_->abandoned;
  }
  if (abandoned) return close();  // a body cut short must not end like a whole one
  drain_stream();
  if (chunked_ && !head_only_) write("0\r\n\r\n");
  ending_ = true;
  flush();
}

// An event stream can go quiet for long (a request queued or prefilling, a
// long transcription): a client that closed its side meanwhile is asked as
// probe() does, with an SSE comment, which clients ignore, put between two
// of the writer's events (each write is a whole event). A client gone for
// good answers it with a reset, and the request is cancelled.
void Connection::probe_stream() {
  if (phase_ != Phase::Responding || !stream_ || !event_stream_ || head_only_) return;
  {
    std::lock_guard lock(stream_->mutex);
    if (stream_->closed || stream_->finished) return;
    queue_stream_bytes(*stream_, ":\n\n", chunked_);
  }
  drain_stream();
  probe_again(&Connection::probe_stream);
}

// The streaming worker, if any, stops at its next write.
void Connection::close_stream() {
  if (!stream_) return;
  std::lock_guard lock(stream_->mutex);
  stream_->closed = true;
  stream_->drained.notify_all();
}

}  // namespace hearth::http
