// hearth mel: the audio layer's input half, for checks from outside (the NumPy
// comparison in tests/numerics/test_audio.py): an audio file's Whisper log-mel
// spectrogram, its decoded 16 kHz samples, or the mel filterbank, written as
// float32 .npy files.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "audio/decode.h"
#include "audio/mel.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/read_file.h"

namespace hearth::cli {

namespace {

const char* kUsage =
    "usage: hearth mel FILE [--n-mels 80|128] [--padding SAMPLES] --out OUT.npy\n"
    "       hearth mel FILE --samples --out OUT.npy\n"
    "       hearth mel --filters N --out OUT.npy\n"
    "  Decodes FILE (WAV, MP3, FLAC, Ogg, M4A, WebM, ...) to 16 kHz mono and writes its Whisper\n"
    "  log-mel spectrogram, float32 [n_mels, frames].\n"
    "  --n-mels N      mel bands: 80 (Whisper up to large-v2, the default) or 128 (large-v3)\n"
    "  --padding N     zero samples appended before the STFT (Whisper's transcribe uses 480000)\n"
    "  --samples       write the decoded samples instead, float32 [n]\n"
    "  --filters N     write the N-band mel filterbank instead, float32 [N, 201]\n";

// A NumPy .npy file (format 1.0) of little-endian float32.
void write_npy(const std::string& path, const std::vector<int64_t>& shape,
               const std::vector<float>& data) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // (n,) keeps its comma, (a, b) does not
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');  // the header ends on a 64-byte boundary
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t len = uint16_t(header.size());
  out.write(magic, 8);
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()),
            std::streamsize(data.size() * sizeof(float)));
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int cmd_mel(int argc, char** argv) {
  Args args(argc, argv, {"samples", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.allow_only({"n-mels", "padding", "samples", "filters", "out", "help"});
  if (!args.has("out")) throw std::runtime_error(std::string("give --out FILE.npy\n") + kUsage);
  const std::string out = args.str("out");
  if (args.has("filters")) {
    const int n = int(args.integer("filters", 80));
    write_npy(out, {n, audio::kFreqBins}, audio::mel_filters(n));
    return 0;
  }
  if (args.positional().size() != 1)
    throw std::runtime_error(std::string("give one audio FILE\n") + kUsage);
  const std::string bytes = read_file(args.positional()[0]);
  const std::vector<float> samples = audio::decode_audio(as_bytes(bytes));
  if (args.has("samples")) {
    write_npy(out, {int64_t(samples.size())}, samples);
    return 0;
  }
  const int n_mels = int(args.integer("n-mels", 80));
  if (n_mels != 80 && n_mels != 128) throw std::runtime_error("--n-mels must be 80 or 128");
  const audio::LogMel mel = audio::log_mel_spectrogram(samples, n_mels, args.integer("padding", 0));
  write_npy(out, {mel.n_mels, mel.frames}, mel.data);
  return 0;
}

}  // namespace hearth::cli
