// decode_audio on arbitrary bytes: the WAV parser, or whatever FFmpeg's audio
// demuxers and decoders make of them. AudioError is the documented answer to
// bad input; a result must be non-empty, finite and within the duration cap.
// The cap is a minute here so that expanding inputs stay inside libFuzzer's
// memory limit.
#include <cmath>
#include <exception>
#include <span>
#include <vector>

#include "audio/audio_error.h"
#include "audio/decode.h"
#include "fuzz_support.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr double kSeconds = 60;
  try {
    const std::vector<float> out = audio::decode_audio(std::span(data, size), kSeconds);
    HEARTH_FUZZ_CHECK(!out.empty());
    HEARTH_FUZZ_CHECK(out.size() <= size_t(kSeconds * audio::kSampleRate));
    for (float v : out) HEARTH_FUZZ_CHECK(std::isfinite(v));
  } catch (const audio::AudioError&) {
    // refused, with a message for the client
  } catch (const std::exception& e) {
    fuzz::unexpected("decode_audio", e.what());
  }
  return 0;
}
