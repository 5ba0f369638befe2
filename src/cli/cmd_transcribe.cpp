// hearth transcribe: speech to text with a Whisper checkpoint, as
// openai-whisper's command line does it, with a progress bar on stderr.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "audio/decode.h"
#include "audio/subtitles.h"
#include "audio/transcript_stream.h"
#include "audio/transcriber.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/elapsed.h"
#include "core/read_file.h"

namespace hearth::cli {

namespace {

namespace fs = std::filesystem;

const char* kHelp =
    R"(usage: hearth transcribe FILE --model DIR [options]

  FILE                 audio: WAV, or any container FFmpeg reads (mp3, flac, ogg, m4a, webm...)
  --model DIR          a Whisper checkpoint (Hugging Face layout, with its .tiktoken vocabulary)
  --format F           text (default) | json | verbose_json | srt | vtt
  --language L         language code or name (default: detected on the first 30 s)
  --translate          translate to English instead of transcribing
  --temperature T      a single temperature (default: the fallback ladder 0, 0.2, ..., 1.0)
  --no-fallback        decode once per window at the first temperature
  --beam-size N        beam search with N beams at temperature 0 (default: greedy)
  --patience P         beam search ends after round(N * P) finished candidates (default: 1)
  --best-of N          sample N candidates per window above temperature 0, keep the likeliest
  --sample-len N       tokens sampled per window at most (default: 224)
  --vad FILE           find the speech first with this Silero VAD (silero-v6.2.0-ggml.bin); no
                       speech: an empty transcript, Whisper not run
  --vad-threshold T    speech probability threshold (default: 0.5)
  --vad-min-speech-ms N  shorter speech is ignored (default: 250)
  --vad-trim           transcribe only from the first speech to the last (0.5 s around them)
  --without-timestamps sample text only (one segment per window)
  --word-timestamps    times per word (openai-whisper's alignment; "words" in verbose_json)
  --initial-prompt T   text that conditions the first window
  --suppress-tokens L  comma-separated token ids to suppress; -1 (default) is the non-speech set
  --seed S             seed of the sampled fallbacks (default 0)
  --threads N          kernel threads (default: physical cores)
  --logits K           print one JSON line per decoding step of the first window, the
                       chosen token and the top-K raw logits: {"step", "token", "top"}
  --mel FILE.npy       use this log-mel window (float32 [n_mels, 3000]) instead of FILE
  --vocabulary A,B,C   terms to spell as given, fitted after the initial prompt (what did not
                       fit is said on stderr)
  --stream-ms N        feed the audio in N ms parts through a streaming session (as the
                       server's /v1/audio/sessions do); the transcript is the same
  --timings            print where the time went as one JSON line on stderr: load_ms (model
                       and vocabulary), transcribe_ms (log-mel, encoder, decoder), audio_s,
                       windows and encoder_ms, decodes, tokens and decoder_ms (Whisper's encoder and
                       decoder; the audio file's decoding is outside transcribe_ms), threads
)";

// A float32 C-order .npy of shape [rows, cols].
std::vector<float> read_npy(const fs::path& path, int64_t rows, int64_t cols) {
  const std::string bytes = read_file(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error(path.string() + " is not a .npy file");
  const size_t header_len =
      bytes[6] == 1 ? size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8 : size_t(-1);
  const size_t data = 10 + header_len;
  if (header_len == size_t(-1) || data > bytes.size())
    throw std::runtime_error(path.string() + ": only .npy version 1 is read");
  const std::string header = bytes.substr(10, header_len);
  const std::string shape = "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
  if (header.find("'<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos ||
      header.find(shape) == std::string::npos || bytes.size() - data != size_t(rows * cols) * 4)
    throw std::runtime_error(path.string() + " must be float32 " + shape + " in C order");
  std::vector<float> out(size_t(rows * cols));
  std::memcpy(out.data(), bytes.data() + data, out.size() * 4);
  return out;
}

}  // namespace

int cmd_transcribe(int argc, char** argv) {
  Args args(
      argc, argv,
      {"help", "translate", "no-fallback", "without-timestamps", "word-timestamps", "vad-trim",
       "timings"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  args.allow_only({"model",
                   "format",
                   "language",
                   "translate",
                   "temperature",
                   "no-fallback",
                   "without-timestamps",
                   "word-timestamps",
                   "initial-prompt",
                   "suppress-tokens",
                   "seed",
                   "threads",
                   "logits",
                   "mel",
                   "beam-size",
                   "patience",
                   "best-of",
                   "sample-len",
                   "vad",
                   "vad-threshold",
                   "vad-min-speech-ms",
                   "vad-trim",
                   "timings",
                   "vocabulary",
                   "stream-ms"});
  if (!args.has("model"))
    throw std::runtime_error("--model DIR (a Whisper checkpoint) is required");
  const bool from_mel = args.has("mel");
  if (args.positional().size() != (from_mel ? 0u : 1u))
    throw std::runtime_error(from_mel ? "--mel replaces FILE" : "expected one audio FILE");
  const std::string format = args.str("format", "text");
  if (!audio::is_transcript_format(format))  // before an hour of audio, not after
    throw std::runtime_error("--format must be text, json, verbose_json, srt or vtt, not '" + format + "'");

  using Clock = std::chrono::steady_clock;
  const auto load_start = Clock::now();
  const fs::path dir = args.str("model");
  auto model = WhisperModel::load(dir);
  const text::WhisperTokenizer tokenizer =
      text::WhisperTokenizer::load_dir(dir, model->config().vocab_size);
  const double load_ms = ms_since(load_start);
  const int threads = thread_count(args);
  ThreadPool pool(threads);

  audio::TranscribeOptions options;
  options.task = args.has("translate") ? "translate" : "transcribe";
  options.language = args.str("language");
  if (args.has("temperature")) options.temperatures = {float(args.number("temperature", 0))};
  if (args.has("no-fallback")) options.temperatures.resize(1);
  options.without_timestamps = args.has("without-timestamps");
  options.word_timestamps = args.has("word-timestamps");
  options.beam_size = int(args.integer("beam-size", 0));
  options.patience = float(args.number("patience", 1.0));
  options.best_of = int(args.integer("best-of", 0));
  options.sample_len = int(args.integer("sample-len", 0));
  if (options.sample_len < 0) throw std::runtime_error("--sample-len must be positive");
  if (options.beam_size < 0 || options.beam_size > 16 || options.best_of < 0 ||
      options.best_of > 16 || !(options.patience > 0))
    throw std::runtime_error("--beam-size and --best-of must be 0 to 16, --patience positive");
  std::unique_ptr<audio::SileroVad> vad;
  if (args.has("vad")) {
    vad = audio::SileroVad::load(args.str("vad"));
    options.vad = vad.get();
    options.vad_options.threshold = float(args.number("vad-threshold", 0.5));
    options.vad_options.min_speech_ms = int(args.integer("vad-min-speech-ms", 250));
    options.vad_trim = args.has("vad-trim");
    if (!(options.vad_options.threshold > 0 && options.vad_options.threshold < 1) ||
        options.vad_options.min_speech_ms < 0)
      throw std::runtime_error("--vad-threshold must be in (0, 1), --vad-min-speech-ms >= 0");
  } else if (args.has("vad-trim") || args.has("vad-threshold") || args.has("vad-min-speech-ms")) {
    throw std::runtime_error("--vad-trim, --vad-threshold and --vad-min-speech-ms need --vad FILE");
  }
  options.initial_prompt = args.str("initial-prompt");
  for (size_t at = 0, end; args.has("vocabulary") && at <= args.str("vocabulary").size();
       at = end + 1) {
    const std::string terms = args.str("vocabulary");
    end = std::min(terms.find(',', at), terms.size());
    options.vocabulary.push_back(terms.substr(at, end - at));
  }
  options.suppress_tokens = args.str("suppress-tokens", "-1");
  options.seed = args.seed("seed", 0);

  audio::TranscribeHooks hooks;
  const int logits_k = int(args.integer("logits", 0));
  if (logits_k > 0)
    hooks.first_window_steps = [&](int step, std::span<const float> logits, int32_t token) {
      std::cout << nlohmann::json{{"step", step},
                                  {"token", token},
                                  {"top", top_logits(logits, logits_k)}}
                       .dump()
                << "\n";
    };
  const bool bar = logits_k == 0 && isatty(fileno(stderr));
  if (bar)
    hooks.on_progress = [](int64_t done, int64_t total) {
      const int width = 40, filled = total ? int(width * done / total) : width;
      std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(size_t(filled), '#').c_str(),
                   std::string(size_t(width - filled), ' ').c_str(),
                   total ? int(100 * done / total) : 100);
    };

  audio::Transcript transcript;
  double transcribe_ms = 0;
  nlohmann::json stream_stats;  // with --stream-ms
  if (from_mel) {
    const int64_t frames = model->config().mel_frames();
    const std::vector<float> mel = read_npy(args.str("mel"), model->config().n_mels, frames);
    const auto t0 = Clock::now();
    transcript =
        audio::transcribe_mel(*model, tokenizer, pool, mel, frames, frames, options, hooks);
    transcribe_ms = ms_since(t0);
  } else {
    const std::string bytes = read_file(args.positional()[0]);
    const std::vector<float> samples = audio::decode_audio(as_bytes(bytes));
    const auto t0 = Clock::now();
    if (const int64_t part = args.integer("stream-ms", 0) * audio::kSampleRate / 1000;
        part > 0) {
      audio::TranscriptStream stream(model->config(), tokenizer, options);
      for (size_t at = 0; at < samples.size(); at += size_t(part)) {
        stream.append(std::span(samples).subspan(at, std::min(samples.size() - at, size_t(part))));
        stream.advance(*model, tokenizer, pool);
      }
      const int64_t early = stream.windows_transcribed();
      transcript = stream.finish(*model, tokenizer, pool, hooks);
      stream_stats = {{"early_windows", early}, {"redone", stream.windows_redone()}};
    } else if (args.has("stream-ms")) {
      throw std::runtime_error("--stream-ms must be positive");
    } else {
      transcript = audio::transcribe(*model, tokenizer, pool, samples, options, hooks);
    }
    transcribe_ms = ms_since(t0);
  }
  if (transcript.vocabulary && !transcript.vocabulary->dropped.empty()) {
    std::string dropped;
    for (const std::string& t : transcript.vocabulary->dropped) dropped += " '" + t + "'";
    std::fprintf(stderr, "vocabulary: %zu of %zu terms fit the prompt; dropped:%s\n",
                 transcript.vocabulary->used, transcript.vocabulary->terms, dropped.c_str());
  }
  if (bar) std::fputs("\n", stderr);
  if (args.has("timings")) {
    const audio::TranscribeTimings& t = transcript.timings;
    std::cerr << nlohmann::json{{"load_ms", load_ms},
                                {"transcribe_ms", transcribe_ms},
                                {"audio_s", transcript.duration},
                                {"windows", t.windows},
                                {"encoder_ms", t.encoder_ms},
                                {"decodes", t.decodes},
                                {"tokens", t.tokens},
                                {"decoder_ms", t.decoder_ms},
                                {"threads", threads},
                                {"stream", stream_stats}}
                     .dump()
              << "\n";
  }
  if (logits_k > 0) return 0;
  std::cout
      << audio::format_transcript(transcript, format, options.task, options.word_timestamps).body;
  if (format == "json" || format == "verbose_json") std::cout << "\n";
  return 0;
}

}  // namespace hearth::cli
