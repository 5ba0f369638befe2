#include "server/audio_budget.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

#include "audio/decode.h"

namespace hearth::server {

struct AudioBudgetState {
  std::mutex mutex;
  size_t held = 0;  // samples
  size_t max = 0;
};

namespace {

std::string seconds_text(size_t samples) { return std::to_string(samples / audio::kSampleRate) + " s"; }

}  // namespace

AudioBudget::AudioBudget(double max_seconds) : state_(std::make_shared<AudioBudgetState>()) {
  state_->max = size_t(std::min(max_seconds * audio::kSampleRate, 1e18));
}

void AudioBudget::Charge::reset() {
  if (!budget_) return;
  {
    std::lock_guard lock(budget_->mutex);
    budget_->held -= samples_;
  }
  budget_.reset();
  samples_ = 0;
}

ApiError AudioBudget::refusal(const Charge& charge, size_t samples, const std::string& param) const {
  std::lock_guard lock(state_->mutex);
  if (samples > state_->max - charge.samples_)
    return ApiError(413,
                    "the server holds at most " + seconds_text(state_->max) +
                        " of decoded audio (--max-audio-held); this would be over " +
                        seconds_text(charge.samples_ + samples),
                    "invalid_request_error", param, "request_too_large");
  return ApiError(429,
                  "the server holds " + seconds_text(state_->held) + " of decoded audio, the most it holds is " +
                      seconds_text(state_->max) + " (--max-audio-held); retry when other transcriptions are done",
                  "resource_admission", {}, "audio_memory_full");
}

void AudioBudget::add(Charge& charge, size_t samples, const std::string& param) {
  if (charge.budget_ && charge.budget_ != state_) throw std::logic_error("a charge of another budget");
  {
    std::lock_guard lock(state_->mutex);
    if (samples <= state_->max - state_->held && samples <= state_->max - charge.samples_) {
      state_->held += samples;
      charge.budget_ = state_;
      charge.samples_ += samples;
      return;
    }
  }
  throw refusal(charge, samples, param);
}

double AudioBudget::room_seconds() const {
  std::lock_guard lock(state_->mutex);
  return double(state_->max - state_->held) / audio::kSampleRate;
}

double AudioBudget::max_seconds() const { return double(state_->max) / audio::kSampleRate; }

double AudioBudget::held_seconds() const {
  std::lock_guard lock(state_->mutex);
  return double(state_->held) / audio::kSampleRate;
}

}  // namespace hearth::server
