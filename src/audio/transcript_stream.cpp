#include "audio/transcript_stream.h"

#include <algorithm>
#include <stdexcept>

#include "audio/mel.h"

namespace hearth::audio {

namespace {

// Frames whose samples have all arrived: frame f reads samples within 200 of
// f * kHop, and frame 0's reflection reads sample 200.
int64_t final_frames(size_t samples) {
  constexpr int64_t kReach = kNfft / 2 + 1;
  return int64_t(samples) < kReach ? 0 : (int64_t(samples) - kReach) / kHop + 1;
}

}  // namespace

TranscriptStream::TranscriptStream(const WhisperConfig& config,
                                   const text::WhisperTokenizer& tokenizer,
                                   TranscribeOptions options)
    : n_mels_(config.n_mels), window_frames_(config.mel_frames()), options_(std::move(options)) {
  if (options_.vad_trim)
    throw std::invalid_argument("vad_trim is not supported while the audio is still arriving");
  options_.speech = nullptr;
  state_ = begin_transcript(tokenizer, config, options_);
}

void TranscriptStream::add_frames(int64_t end, int64_t length) {
  if (end <= frames_) return;
  raw_.resize(size_t(end) * size_t(n_mels_));
  log10_mel_frames(audio_, length, n_mels_, frames_, end - frames_,
                   std::span(raw_).subspan(size_t(frames_) * size_t(n_mels_)), n_mels_, 1);
  top_ = std::max(top_, *std::max_element(raw_.begin() + ptrdiff_t(frames_ * n_mels_), raw_.end()));
  frames_ = end;
}

void TranscriptStream::append(std::span<const float> samples) {
  if (finishing_) throw std::logic_error("audio appended to a finished transcript stream");
  audio_.insert(audio_.end(), samples.begin(), samples.end());
  // The length only matters for reflection at the end, which final frames never reach.
  add_frames(final_frames(audio_.size()), int64_t(audio_.size()) + kChunkSamples);
  // The VAD runs on every part, so that speech() keeps up with the audio.
  if (options_.vad) {
    const int64_t before = vad_.windows_done;
    options_.vad->extend(audio_, vad_, false);
    if (!heard_speech_ && vad_.windows_done > before)
      heard_speech_ = !speech_spans(vad_.probs, vad_.windows_done * kVadWindow,
                                    options_.vad_options)
                           .empty();
  }
}

std::optional<std::vector<SpeechSpan>> TranscriptStream::speech() const {
  if (!options_.vad) return std::nullopt;
  return speech_spans(vad_.probs, std::min<int64_t>(vad_.windows_done * kVadWindow, audio_.size()),
                      options_.vad_options);
}

std::vector<float> TranscriptStream::window(int64_t seek, int64_t size, float top) const {
  std::vector<float> out(size_t(n_mels_) * size_t(window_frames_), 0.0f);
  for (int64_t f = 0; f < size; ++f) {
    const float* frame = &raw_[size_t(seek + f) * size_t(n_mels_)];
    for (int m = 0; m < n_mels_; ++m)
      out[size_t(m) * size_t(window_frames_) + size_t(f)] = scale_log_mel(frame[m], top);
  }
  return out;
}

void TranscriptStream::advance(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                               ThreadPool& pool, const TranscribeHooks& hooks) {
  if (options_.vad && !heard_speech_) return;
  auto low = [&](int64_t seek) {  // the window's quietest value
    return *std::min_element(raw_.begin() + ptrdiff_t(seek * n_mels_),
                             raw_.begin() + ptrdiff_t((seek + window_frames_) * n_mels_));
  };
  // A failed step goes back to the state before it.
  auto step = [&](auto&& run) {
    const int64_t seek = state_.seek;
    EarlyWindow w{state_.mark(), seek, top_, low(seek)};
    try {
      run();
    } catch (...) {
      state_.rewind(w.before);
      throw;
    }
    early_.push_back(std::move(w));
  };
  if (state_.transcript.language.empty() && frames_ >= window_frames_)
    step([&] { detect_language(model, tokenizer, pool, state_, window(0, window_frames_, top_)); });
  while (!state_.transcript.language.empty() && state_.seek + window_frames_ <= frames_) {
    if (hooks.cancelled && hooks.cancelled()) throw Cancelled();
    step([&] {
      transcribe_window(model, tokenizer, pool, options_, hooks, state_,
                        window(state_.seek, window_frames_, top_), window_frames_, frames_);
    });
  }
}

Transcript TranscriptStream::finish(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                                    ThreadPool& pool, const TranscribeHooks& hooks) {
  finishing_ = true;  // the padding's frames and the VAD's last block are no longer final
  std::optional<std::vector<SpeechSpan>> speech;
  if (options_.vad) {
    options_.vad->extend(audio_, vad_, true);
    speech = speech_spans(vad_.probs, int64_t(audio_.size()), options_.vad_options);
    if (speech->empty()) return no_speech(audio_, options_);
  }
  // The rest of the frames, with transcribe()'s 30 s of padding.
  const int64_t length = int64_t(audio_.size()) + window_frames_ * kHop;
  add_frames(length / kHop, length);
  const int64_t content_frames = frames_ - window_frames_;

  // Back to the first early window the final clamp changes, if any.
  for (size_t i = 0; i < early_.size(); ++i) {
    const EarlyWindow& w = early_[i];
    if (top_ > w.top && w.low < top_ - 8.0f) {
      state_.rewind(w.before);
      redone_ = int64_t(early_.size() - i);
      early_.resize(i);
      break;
    }
  }
  if (state_.transcript.language.empty())
    detect_language(model, tokenizer, pool, state_, window(0, window_frames_, top_));
  while (state_.seek < content_frames) {
    if (hooks.cancelled && hooks.cancelled()) throw Cancelled();
    const int64_t size = std::min<int64_t>(window_frames_, content_frames - state_.seek);
    transcribe_window(model, tokenizer, pool, options_, hooks, state_,
                      window(state_.seek, size, top_), size, content_frames);
  }
  Transcript t = end_transcript(std::move(state_), tokenizer, content_frames);
  t.speech = std::move(speech);
  return t;
}

}  // namespace hearth::audio
