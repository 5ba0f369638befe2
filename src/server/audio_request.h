// A request to OpenAI's /v1/audio/transcriptions or /v1/audio/translations:
// multipart/form-data as the SDKs send it, JSON with the audio as base64 or a
// data: URL (`file`, or its aliases `input_audio.data` and `audio`), or the
// raw audio bytes under an audio/* content type (the other fields then in
// the query string). Validation errors are 400s
// naming the field, a content type that is none of these a 415.
#pragma once

#include <string>

#include "audio/transcriber.h"
#include "http/message.h"

namespace hearth::server {

struct AudioRequest {
  std::string audio;  // the file's bytes, still encoded
  std::string model;
  std::string response_format = "json";
  bool stream = false;
  bool vad = false;  // find the speech first (options.vad_options, vad_trim)
  audio::TranscribeOptions options;
};

// translate: the translations route (task translate; language ignored).
AudioRequest parse_audio_request(const http::Request& req, bool translate);

// The JSON body of POST /v1/audio/sessions: the same fields but the audio
// (and stream and vad_trim, which sessions do not take); may be empty.
AudioRequest parse_audio_session_request(const http::Request& req);

}  // namespace hearth::server
