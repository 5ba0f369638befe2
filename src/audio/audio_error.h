// The one error the audio layer throws for bad input: audio that cannot be
// parsed or decoded. Its message is written for the client that sent the
// bytes ("WAV data chunk ends inside a sample frame"), so the server can hand
// it back as an HTTP 400 as it is.
#pragma once

#include <stdexcept>
#include <string>

namespace hearth::audio {

struct AudioError : std::runtime_error {
  explicit AudioError(const std::string& what) : std::runtime_error(what) {}
};

// A WAV file whose samples are compressed (mu-law, A-law, ADPCM...): not
// for the exact PCM reader, but FFmpeg decodes them.
struct CompressedWav : AudioError {
  using AudioError::AudioError;
};

// Well-formed audio, but longer than the caller's limit: a server answers it
// as too large (413), not as malformed.
struct AudioTooLong : AudioError {
  using AudioError::AudioError;
};

// Audio within the length limit, but with more input samples (rate x
// channels) than the decoder reads for it: also too large.
struct TooManyInputSamples : AudioTooLong {
  using AudioTooLong::AudioTooLong;
};

// Thrown out of decode_audio() and transcribe() when the caller's
// cancelled() says so (the client has gone). No AudioError: the input was fine.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("the audio work was cancelled") {}
};

}  // namespace hearth::audio
