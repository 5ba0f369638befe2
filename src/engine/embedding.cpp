#include "engine/embedding.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <utility>

namespace hearth {

void finish_embedding(std::vector<float>& v, int64_t dimensions) {
  if (dimensions > 0 && size_t(dimensions) < v.size()) v.resize(size_t(dimensions));
  double sum = 0;
  for (float x : v) sum += double(x) * x;
  if (sum == 0) return;
  const float scale = float(1.0 / std::sqrt(sum));
  for (float& x : v) x *= scale;
}

namespace {

// Cancels what is still queued if embed() leaves early.
struct InFlight {
  std::deque<std::pair<size_t, std::shared_ptr<RequestHandle>>> handles;  // (input index, handle)
  ~InFlight() {
    for (auto& [i, h] : handles) h->cancel();
  }
};

// Waits for the oldest in-flight input and stores its vector.
void collect(InFlight& flight, EmbeddingBatch& out, int64_t dimensions) {
  auto [index, handle] = std::move(flight.handles.front());
  flight.handles.pop_front();
  while (handle->next()) {
  }
  const FinishInfo& info = handle->finish();
  if (!info.error.empty()) throw std::runtime_error("input " + std::to_string(index) + ": " + info.error);
  if (info.reason == FinishReason::Cancelled || info.embedding.empty())
    throw std::runtime_error("input " + std::to_string(index) + " was cancelled");
  out.vectors[index] = info.embedding;
  finish_embedding(out.vectors[index], dimensions);
}

}  // namespace

EmbeddingBatch embed(Engine& engine, std::span<const std::vector<int32_t>> inputs, io::Pooling pooling,
                     int64_t dimensions,
                     const std::function<void(const std::shared_ptr<RequestHandle>&)>& on_submit) {
  EmbeddingBatch out;
  out.vectors.resize(inputs.size());
  InFlight flight;
  // At most one batch of a request's inputs at a time: a request of
  // thousands would otherwise fill the queue and turn every other client
  // away with 429s until it is done.
  const size_t most_in_flight = size_t(std::max(1, engine.options().max_batch));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (flight.handles.size() >= most_in_flight) collect(flight, out, dimensions);
    GenerationRequest request;
    request.prompt = inputs[i];
    request.embed = pooling;
    out.tokens += int64_t(inputs[i].size());
    for (;;) {
      try {
        flight.handles.emplace_back(i, engine.submit(request));
        break;
      } catch (const QueueFull&) {
        if (flight.handles.empty()) throw;
        collect(flight, out, dimensions);  // room for one more once our oldest is done
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(inputs.size() > 1 ? "input " + std::to_string(i) + ": " + e.what() : e.what());
      }
    }
    if (on_submit) on_submit(flight.handles.back().second);
  }
  while (!flight.handles.empty()) collect(flight, out, dimensions);
  return out;
}

}  // namespace hearth
