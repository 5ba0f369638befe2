// The decoded audio a server holds at once, all requests together: one-shot
// transcriptions' samples from their decode to their answer (running or
// waiting for the model), and dictation sessions' audio until they finish
// or are forgotten. A decode is charged block by block as it grows, and each
// holder owns its Charge, which gives the samples back when it goes: what
// the server holds is bounded by --max-audio-held whatever the queue and
// session limits allow one by one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "server/api_error.h"

namespace hearth::server {

struct AudioBudgetState;

class AudioBudget {
 public:
  explicit AudioBudget(double max_seconds);

  // Samples (16 kHz mono) held against the budget; move-only, given back when
  // destroyed or reset().
  class Charge {
   public:
    Charge() = default;
    Charge(Charge&& o) noexcept : budget_(std::move(o.budget_)), samples_(std::exchange(o.samples_, 0)) {}
    Charge& operator=(Charge&& o) noexcept {
      if (this != &o) {
        reset();
        budget_ = std::move(o.budget_);
        samples_ = std::exchange(o.samples_, 0);
      }
      return *this;
    }
    ~Charge() { reset(); }
    void reset();
    void absorb(Charge&& part);  // part's samples become this charge's (the same budget's)
    size_t samples() const { return samples_; }

   private:
    friend class AudioBudget;
    std::shared_ptr<AudioBudgetState> budget_;  // outlives the server if a charge does
    size_t samples_ = 0;
  };

  // Adds samples to a charge (a new one if it is empty), or throws ApiError:
  // 413 naming param when they never could fit (the charge, with `with`
  // samples its holder has charged elsewhere, would outgrow the budget),
  // else 429 audio_memory_full.
  void add(Charge& charge, size_t samples, const std::string& param, size_t with = 0);
  // Charges `charge` for samples in all: what a decode calls as it grows.
  void grow_to(Charge& charge, size_t samples, const std::string& param, size_t with = 0) {
    if (samples > charge.samples()) add(charge, samples - charge.samples(), param, with);
  }
  double max_seconds() const;
  double held_seconds() const;

 private:
  std::shared_ptr<AudioBudgetState> state_;
};

}  // namespace hearth::server
