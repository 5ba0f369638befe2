#include "server/audio_budget.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "audio/decode.h"
#include "core/seconds_text.h"

namespace hearth::server {

struct AudioBudgetState {
  std::mutex mutex;
  size_t held = 0;  // samples
  size_t max = 0;
};

namespace {

std::string samples_text(size_t samples) { return seconds_text(double(samples) / audio::kSampleRate); }

}  // namespace

AudioBudget::AudioBudget(double max_seconds) : state_(std::make_shared<AudioBudgetState>()) {
  state_->max = size_t(std::min(max_seconds * audio::kSampleRate, 1e18));
}

void AudioBudget::Charge::reset() {
  if (!budget_) return;
  const std::shared_ptr<AudioBudgetState> budget = std::move(budget_);  // alive while locked
  std::lock_guard lock(budget->mutex);
  budget->held -= std::exchange(samples_, 0);
}

void AudioBudget::Charge::absorb(Charge&& part) {
  if (!part.budget_) return;
  if (budget_ && budget_ != part.budget_) throw std::logic_error("charges of two budgets");
  budget_ = std::move(part.budget_);
  samples_ += std::exchange(part.samples_, 0);
}

void AudioBudget::add(Charge& charge, size_t samples, const std::string& param, size_t with) {
  if (charge.budget_ && charge.budget_ != state_) throw std::logic_error("a charge of another budget");
  std::lock_guard lock(state_->mutex);
  // Both are held, so at most max; but `with` may be stale (its holder let
  // go meanwhile), hence the min below.
  const size_t mine = charge.samples_ + with;
  if (samples > state_->max - std::min(mine, state_->max))
    throw ApiError(413,
                   "the server holds at most " + samples_text(state_->max) +
                       " of decoded audio (--max-audio-held); this would be over " +
                       samples_text(mine + samples),
                   "invalid_request_error", param, "request_too_large");
  if (samples > state_->max - state_->held)
    throw ApiError(429,
                   "the server holds " + samples_text(state_->held) + " of decoded audio, the most it holds is " +
                       samples_text(state_->max) + " (--max-audio-held); retry when other transcriptions are done",
                   "resource_admission", {}, "audio_memory_full");
  state_->held += samples;
  charge.budget_ = state_;
  charge.samples_ += samples;
}

double AudioBudget::max_seconds() const { return double(state_->max) / audio::kSampleRate; }

double AudioBudget::held_seconds() const {
  std::lock_guard lock(state_->mutex);
  return double(state_->held) / audio::kSampleRate;
}

}  // namespace hearth::server
