#include "server/audio_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "core/base64.h"
#include "http/multipart.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "text/json_shape.h"
#include "text/tokenizer/whisper.h"

namespace hearth::server {

namespace {

// A query-string component: %XX escapes and '+' for space.
std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit((unsigned char)s[i + 1]) &&
               std::isxdigit((unsigned char)s[i + 2])) {
      out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A JSON audio value: base64, or a data: URL holding base64.
std::string audio_from_json(const std::string& value, const std::string& field) {
  std::string_view b64 = value;
  if (b64.starts_with("data:")) {
    const size_t comma = b64.find(',');
    if (comma == std::string_view::npos ||
        b64.substr(0, comma).find(";base64") == std::string_view::npos)
      throw bad_request(field,
                        "'" + field + "' must be a base64 data: URL (data:audio/...;base64,...)");
    b64.remove_prefix(comma + 1);
  }
  std::string bytes;
  if (!base64_decode(b64, bytes)) throw bad_request(field, "'" + field + "' is not valid base64");
  return bytes;
}

// The request's fields as strings, whatever the encoding: multipart form
// values, or JSON values rendered (strings as they are).
struct Fields {
  std::map<std::string, std::string> values;
  std::vector<std::string> granularities;
  std::optional<std::vector<std::string>> vocabulary;
  std::optional<std::string> get(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  }
};

double parse_number(const std::string& v, const std::string& field) {
  try {
    size_t used = 0;
    const double value = std::stod(v, &used);
    if (used == v.size()) return value;
  } catch (const std::exception&) {
  }
  throw bad_request(field, "'" + field + "' must be a number");
}

int parse_integer(const std::string& v, const std::string& field, int lo, int hi) {
  const double value = parse_number(v, field);
  if (!(value >= lo && value <= hi) || value != std::floor(value))
    throw bad_request(field, "'" + field + "' must be an integer from " + std::to_string(lo) +
                                 " to " + std::to_string(hi));
  return int(value);
}

constexpr size_t kMaxTerms = 1000, kMaxTermBytes = 200;
// Only the last 223 tokens of a prompt condition the decoder; this many
// bytes hold them with room to spare, and bound the work on the rest.
constexpr size_t kMaxPromptBytes = 65536;

// Counted as they come: a field of millions of commas must not become
// millions of strings before the limit is checked.
void add_term(std::string term, Fields& f) {
  if (!f.vocabulary) f.vocabulary.emplace();
  if (f.vocabulary->size() == kMaxTerms)
    throw bad_request("vocabulary", "'vocabulary' takes at most " + std::to_string(kMaxTerms) + " terms");
  f.vocabulary->push_back(std::move(term));
}

void add_terms(const json& terms, Fields& f) {
  if (!terms.is_array()) wrong_type("vocabulary", "an array of strings", terms);
  if (!f.vocabulary) f.vocabulary.emplace();
  for (const json& t : terms) {
    if (!t.is_string()) wrong_type("vocabulary", "an array of strings", t);
    add_term(t.get<std::string>(), f);
  }
}

// segment or word, each once however often it is given.
void add_granularity(const std::string& g, Fields& f) {
  if (g != "segment" && g != "word")
    throw bad_request("timestamp_granularities[]", "'timestamp_granularities[]' takes segment or word");
  if (std::find(f.granularities.begin(), f.granularities.end(), g) == f.granularities.end())
    f.granularities.push_back(g);
}

// A form or query value: a JSON array of strings, or terms separated by commas.
void add_terms(const std::string& value, Fields& f) {
  if (value.starts_with("[")) {
    if (!text::json_within_limits(value)) throw bad_request("vocabulary", "'vocabulary' is not a valid JSON array");
    return add_terms(json::parse(value), f);
  }
  for (size_t at = 0, end; at <= value.size(); at = end + 1) {
    end = std::min(value.find(',', at), value.size());
    add_term(value.substr(at, end - at), f);
  }
}

// A form part or query-string field; the list fields may repeat, with or
// without the [] of form arrays.
void add_form_field(const std::string& name, const std::string& value, Fields& f) {
  if (name == "timestamp_granularities[]" || name == "timestamp_granularities") add_granularity(value, f);
  else if (name == "vocabulary[]" || name == "vocabulary") add_terms(value, f);
  else f.values[name] = value;
}

bool parse_bool(const std::string& v, const std::string& field) {
  const std::string l = http::ascii_lower(v);
  if (l == "true" || l == "1") return true;
  if (l == "false" || l == "0") return false;
  throw bad_request(field, "'" + field + "' must be true or false");
}

// A JSON body's fields but the audio.
void json_fields(const json& body, Fields& f) {
  for (const auto& [key, value] : body.items()) {
    if (key == "file" || key == "input_audio" || key == "audio" || value.is_null()) continue;
    if (key == "timestamp_granularities") {
      if (!value.is_array()) wrong_type(key, "an array", value);
      for (const json& g : value) {
        if (!g.is_string()) wrong_type(key, "an array of strings", g);
        add_granularity(g.get<std::string>(), f);
      }
    } else if (key == "vocabulary") {
      add_terms(value, f);
    } else {
      f.values[key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
}

void apply_fields(const Fields& f, AudioRequest& r, bool translate);

}  // namespace

AudioRequest parse_audio_request(const http::Request& req, bool translate) {
  AudioRequest r;
  Fields f;
  const std::string content_type = req.header("Content-Type");
  const std::string type = http::media_type(content_type);
  std::optional<std::string> boundary;
  try {
    boundary = http::multipart_boundary(content_type);
  } catch (const http::MultipartError& e) {
    throw ApiError(400, e.what());
  }
  if (boundary) {
    std::vector<http::FormPart> parts;
    try {
      parts = http::parse_multipart(req.body, *boundary);
    } catch (const http::MultipartError& e) {
      throw ApiError(400, std::string("malformed multipart body: ") + e.what());
    }
    bool have_file = false;
    for (const http::FormPart& p : parts) {
      if (p.name == "file") {
        r.audio.assign(p.data);
        have_file = true;
      } else {
        add_form_field(p.name, std::string(p.data), f);
      }
    }
    if (!have_file) throw bad_request("file", "'file' is required: the audio to transcribe");
  } else if (type == "application/json" ||
             (type.empty() && !req.body.empty() && req.body[0] == '{')) {
    const json body = parse_body(req.body);
    if (const json* file = field(body, "file")) {
      if (!file->is_string()) wrong_type("file", "a base64 string or a data: URL", *file);
      r.audio = audio_from_json(file->get<std::string>(), "file");
    } else if (const json* input = field(body, "input_audio")) {
      if (!input->is_object() || !input->contains("data") || !(*input)["data"].is_string())
        throw bad_request("input_audio.data", "'input_audio.data' must be a base64 string");
      r.audio = audio_from_json((*input)["data"].get<std::string>(), "input_audio.data");
    } else if (const json* audio = field(body, "audio")) {
      if (!audio->is_string()) wrong_type("audio", "a base64 string or a data: URL", *audio);
      r.audio = audio_from_json(audio->get<std::string>(), "audio");
    } else {
      throw bad_request("file", "'file' is required: the audio as base64 or a data: URL");
    }
    json_fields(body, f);
  } else if (type.starts_with("audio/") || type.starts_with("video/") ||
             type == "application/octet-stream") {
    // The audio itself; the other fields, if any, in the query string.
    r.audio = req.body;
    for (size_t at = 0; at < req.query.size();) {
      size_t end = std::min(req.query.find('&', at), req.query.size());
      const std::string pair = req.query.substr(at, end - at);
      const size_t eq = pair.find('=');
      if (eq != std::string::npos) add_form_field(percent_decode(pair.substr(0, eq)), percent_decode(pair.substr(eq + 1)), f);
      at = end + 1;
    }
  } else {
    throw ApiError(415,
                   "unsupported content type '" + content_type +
                       "': send multipart/form-data, application/json or the audio itself",
                   "invalid_request_error", {}, "unsupported_media_type");
  }

  apply_fields(f, r, translate);
  if (r.audio.empty()) throw bad_request("file", "the audio file is empty");
  return r;
}

AudioRequest parse_audio_session_request(const http::Request& req) {
  AudioRequest r;
  Fields f;
  const std::string content_type = req.header("Content-Type");
  const std::string type = http::media_type(content_type);
  if (!req.body.empty()) {
    if (type != "application/json" && !type.empty())
      throw ApiError(415, "unsupported content type '" + content_type + "': send application/json",
                     "invalid_request_error", {}, "unsupported_media_type");
    const json body = parse_body(req.body);
    for (const char* audio : {"file", "input_audio", "audio"})
      if (body.contains(audio))
        throw bad_request(audio, std::string("'") + audio +
                                     "' does not belong here: send the audio to the session's "
                                     "/audio route");
    json_fields(body, f);
  }
  const bool translate = f.get("task").value_or("transcribe") == "translate";
  if (auto task = f.get("task"); task && *task != "transcribe" && *task != "translate")
    throw bad_request("task", "'task' must be transcribe or translate");
  apply_fields(f, r, translate);
  if (r.stream)
    throw bad_request("stream", "a session answers each part of the audio with the segments so "
                                "far; 'stream' is not needed");
  if (r.options.vad_trim)
    throw bad_request("vad_trim", "'vad_trim' is not supported while the audio is still arriving");
  return r;
}

namespace {

void apply_fields(const Fields& f, AudioRequest& r, bool translate) {
  r.model = f.get("model").value_or("");
  r.response_format = f.get("response_format").value_or("json");
  static const char* kFormats[] = {"json", "text", "srt", "verbose_json", "vtt"};
  if (std::find(std::begin(kFormats), std::end(kFormats), r.response_format) == std::end(kFormats))
    throw bad_request("response_format",
                      "'response_format' must be json, text, srt, verbose_json or vtt");
  if (auto s = f.get("stream")) r.stream = parse_bool(*s, "stream");
  audio::TranscribeOptions& o = r.options;
  for (const std::string& g : f.granularities)
    if (g == "word") o.word_timestamps = true;
  o.task = translate ? "translate" : "transcribe";
  if (!translate) o.language = f.get("language").value_or("");
  // Checked here, not only at decoding, which audio without speech skips.
  if (!o.language.empty()) {
    const std::string_view code = text::whisper_language_code(o.language);
    if (code.empty()) throw bad_request("language", "'language' " + o.language + " is not a language Whisper knows");
    o.language = code;
  }
  o.initial_prompt = f.get("prompt").value_or("");
  if (o.initial_prompt.size() > kMaxPromptBytes)
    throw bad_request("prompt", "'prompt' takes at most " + std::to_string(kMaxPromptBytes) +
                                    " bytes (only its last 223 tokens are used)");
  if (auto t = f.get("temperature")) {
    const double value = parse_number(*t, "temperature");
    if (!(value >= 0 && value <= 1))
      throw bad_request("temperature", "'temperature' must be between 0 and 1");
    // 0 (the default) is openai-whisper's fallback ladder; above it, that temperature only.
    if (value > 0) o.temperatures = {float(value)};
  }
  if (auto v = f.get("vad")) r.vad = parse_bool(*v, "vad");
  if (auto v = f.get("vad_trim")) o.vad_trim = parse_bool(*v, "vad_trim");
  if (auto v = f.get("vad_threshold")) {
    const double t = parse_number(*v, "vad_threshold");
    if (!(t > 0 && t < 1))
      throw bad_request("vad_threshold", "'vad_threshold' must be between 0 and 1");
    o.vad_options.threshold = float(t);
  }
  if (auto v = f.get("vad_min_speech_ms")) {
    const double ms = parse_number(*v, "vad_min_speech_ms");
    if (!(ms >= 0 && ms <= 60000) || ms != std::floor(ms))
      throw bad_request("vad_min_speech_ms",
                        "'vad_min_speech_ms' must be an integer from 0 to 60000");
    o.vad_options.min_speech_ms = int(ms);
  }
  if (auto v = f.get("beam_size")) o.beam_size = parse_integer(*v, "beam_size", 1, 16);
  if (auto v = f.get("best_of")) o.best_of = parse_integer(*v, "best_of", 1, 16);
  if (f.vocabulary) {
    for (std::string term : *f.vocabulary) {
      term.erase(0, term.find_first_not_of(" \t\n\r"));
      term.erase(term.find_last_not_of(" \t\n\r") + 1);
      if (term.empty() || term.size() > kMaxTermBytes)
        throw bad_request("vocabulary", "each 'vocabulary' term must be 1 to " +
                                            std::to_string(kMaxTermBytes) + " bytes of text");
      o.vocabulary.push_back(std::move(term));
    }
  }
  if ((o.vad_trim || f.get("vad_threshold") || f.get("vad_min_speech_ms")) && !r.vad)
    throw bad_request("vad", "vad_trim, vad_threshold and vad_min_speech_ms need \"vad\": true");
}

}  // namespace

}  // namespace hearth::server
