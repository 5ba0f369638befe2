// A transcript in the response formats of OpenAI's audio routes and
// openai-whisper's writers: text, json, verbose_json, srt and vtt.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "audio/transcriber.h"

namespace hearth::audio {

struct FormattedTranscript {
  std::string body;
  std::string content_type;
};

// The json (verbose: verbose_json) response as JSON, for callers that add to it.
nlohmann::ordered_json transcript_json(const Transcript& t, bool verbose, const std::string& task,
                                       bool with_words = false);
// Speech spans as [{"start", "end"}] in seconds.
nlohmann::ordered_json speech_json(const std::vector<SpeechSpan>& spans);
// {terms, used, prompt_tokens, dropped}
nlohmann::ordered_json vocabulary_json(const VocabularyUsage& usage);

// format: text | json | verbose_json | srt | vtt; task goes into verbose_json,
// and with_words adds "words" to it (per segment and for the whole clip).
// Throws std::invalid_argument for another format.
// json, text, srt, verbose_json or vtt: what format_transcript() writes.
bool is_transcript_format(std::string_view format);
FormattedTranscript format_transcript(const Transcript& t, const std::string& format,
                                      const std::string& task, bool with_words = false);

// "HH:MM:SS,mmm" (srt) or "MM:SS.mmm", with hours when needed (vtt).
std::string format_timestamp(double seconds, bool always_hours, char decimal);

}  // namespace hearth::audio
