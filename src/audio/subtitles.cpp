#include "audio/subtitles.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace hearth::audio {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n\r\f\v") + 1 - b);
}

// A cue's text, with "-->" (the cue timing arrow) made harmless, as
// openai-whisper does, and no blank line (one ends a cue in SRT and VTT, and
// Whisper's vocabulary has newlines): a run of line breaks becomes one.
std::string cue_text(const std::string& s) {
  std::string out = trim(s);
  for (size_t at; (at = out.find("-->")) != std::string::npos;) out.replace(at, 3, "->");
  std::string lines;
  for (char c : out) {
    if (c == '\r') c = '\n';
    if (c != '\n' || lines.empty() || lines.back() != '\n') lines += c;
  }
  return lines;
}

}  // namespace

std::string format_timestamp(double seconds, bool always_hours, char decimal) {
  const long long ms = std::llround(std::max(0.0, seconds) * 1000.0);
  const long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, rest = ms % 1000;
  char buf[48];
  if (always_hours || h > 0)
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", h, m, s, decimal, rest);
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld%c%03lld", m, s, decimal, rest);
  return buf;
}

nlohmann::ordered_json vocabulary_json(const VocabularyUsage& v) {
  return {{"terms", v.terms},
          {"used", v.used},
          {"prompt_tokens", v.prompt_tokens},
          {"dropped", v.dropped}};
}

nlohmann::ordered_json speech_json(const std::vector<SpeechSpan>& spans) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const SpeechSpan& sp : spans) out.push_back({{"start", sp.start}, {"end", sp.end}});
  return out;
}

nlohmann::ordered_json transcript_json(const Transcript& t, bool verbose, const std::string& task,
                                       bool with_words) {
  if (!verbose) return {{"text", t.text}};
  nlohmann::ordered_json segments = nlohmann::ordered_json::array();
  nlohmann::ordered_json all_words = nlohmann::ordered_json::array();
  for (const Segment& s : t.segments) {
    nlohmann::ordered_json words = nlohmann::ordered_json::array();
    for (const Word& w : s.words) {
      words.push_back(
          {{"word", w.word}, {"start", w.start}, {"end", w.end}, {"probability", w.probability}});
      // OpenAI's top-level words: the word without its leading space, no probability.
      const size_t b = w.word.find_first_not_of(' ');
      all_words.push_back({{"word", b == std::string::npos ? "" : w.word.substr(b)},
                           {"start", w.start},
                           {"end", w.end}});
    }
    segments.push_back({{"id", s.id},
                        {"seek", s.seek},
                        {"start", s.start},
                        {"end", s.end},
                        {"text", s.text},
                        {"tokens", s.tokens},
                        {"temperature", s.temperature},
                        {"avg_logprob", s.avg_logprob},
                        {"compression_ratio", s.compression_ratio},
                        {"no_speech_prob", s.no_speech_prob}});
    if (with_words) segments.back()["words"] = std::move(words);
  }
  nlohmann::ordered_json body{{"task", task},
                              {"language", t.language},
                              {"duration", t.duration},
                              {"text", t.text},
                              {"segments", segments}};
  if (with_words) body["words"] = std::move(all_words);
  if (t.speech) body["speech"] = speech_json(*t.speech);  // when the VAD ran
  return body;
}

bool is_transcript_format(std::string_view format) {
  for (const char* f : {"json", "text", "srt", "verbose_json", "vtt"})
    if (format == f) return true;
  return false;
}

FormattedTranscript format_transcript(const Transcript& t, const std::string& format,
                                      const std::string& task, bool with_words) {
  if (!is_transcript_format(format))
    throw std::invalid_argument(
        "response_format must be json, text, srt, verbose_json or vtt, not '" + format + "'");
  if (format == "text") return {t.text + "\n", "text/plain; charset=utf-8"};
  if (format == "json" || format == "verbose_json")
    return {transcript_json(t, format == "verbose_json", task, with_words).dump(),
            "application/json"};
  const bool srt = format == "srt";
  std::string out = srt ? "" : "WEBVTT\n\n";
  int index = 1;
  for (const Segment& s : t.segments) {
    const std::string text = cue_text(s.text);
    if (text.empty()) continue;
    if (srt) out += std::to_string(index++) + "\n";
    out += format_timestamp(s.start, srt, srt ? ',' : '.') + " --> " +
           format_timestamp(s.end, srt, srt ? ',' : '.') + "\n" + text + "\n\n";
  }
  return {out, srt ? "application/x-subrip; charset=utf-8" : "text/vtt; charset=utf-8"};
}

}  // namespace hearth::audio
