// hearth vad: Silero voice activity detection on an audio file, for use and
// for checks from outside (tests/numerics/test_vad.py compares the
// per-window probabilities with a NumPy forward): the speech spans as JSON,
// and with --probabilities the model's output for every 512-sample window.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "audio/decode.h"
#include "audio/vad.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/read_file.h"

namespace hearth::cli {

namespace {

const char* kUsage =
    "usage: hearth vad FILE --model VAD.bin [options]\n"
    "  Decodes FILE (WAV, MP3, FLAC, Ogg, M4A, WebM, ...) to 16 kHz mono and prints its speech\n"
    "  spans as JSON: {\"duration\", \"spans\": [{\"start\", \"end\"}, ...]} in seconds.\n"
    "  --model FILE        Silero VAD weights in whisper.cpp's ggml container\n"
    "                      (silero-v6.2.0-ggml.bin)\n"
    "  --threshold T       speech probability that starts a span (default 0.5)\n"
    "  --min-speech-ms N   shorter spans are dropped (default 250)\n"
    "  --min-silence-ms N  silence that ends a span (default 100)\n"
    "  --speech-pad-ms N   padding on each side of a span (default 30)\n"
    "  --probabilities     also print \"probabilities\": one per 512-sample window (32 ms)\n";

}  // namespace

int cmd_vad(int argc, char** argv) {
  Args args(argc, argv, {"probabilities", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.allow_only({"model", "threshold", "min-speech-ms", "min-silence-ms", "speech-pad-ms",
                   "probabilities", "help"});
  if (!args.has("model")) throw std::runtime_error(std::string("give --model FILE\n") + kUsage);
  if (args.positional().size() != 1)
    throw std::runtime_error(std::string("give one audio FILE\n") + kUsage);

  audio::VadOptions options;
  options.threshold = float(args.number("threshold", options.threshold));
  // Durations up to an hour, so the sample counts the rules compute stay exact.
  auto ms = [&](const char* name, int fallback) {
    const long long v = args.integer(name, fallback);
    if (v < 0 || v > 3600000) throw std::runtime_error(std::string("--") + name + " out of range");
    return int(v);
  };
  options.min_speech_ms = ms("min-speech-ms", options.min_speech_ms);
  options.min_silence_ms = ms("min-silence-ms", options.min_silence_ms);
  options.speech_pad_ms = ms("speech-pad-ms", options.speech_pad_ms);
  if (!(options.threshold > 0 && options.threshold < 1))
    throw std::runtime_error("--threshold must be between 0 and 1");

  const auto vad = audio::SileroVad::load(args.str("model"));
  const std::string bytes = read_file(args.positional()[0]);
  const std::vector<float> samples = audio::decode_audio(as_bytes(bytes));

  const std::vector<float> probs = vad->probabilities(samples);
  nlohmann::json spans = nlohmann::json::array();
  for (const audio::SpeechSpan& s : audio::speech_spans(probs, int64_t(samples.size()), options))
    spans.push_back({{"start", s.start}, {"end", s.end}});
  nlohmann::json out = {{"duration", double(samples.size()) / 16000.0}, {"spans", spans}};
  if (args.has("probabilities")) out["probabilities"] = probs;
  std::cout << out << "\n";
  return 0;
}

}  // namespace hearth::cli
