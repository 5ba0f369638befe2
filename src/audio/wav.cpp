#include "audio/wav.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "audio/audio_error.h"

namespace hearth::audio {

namespace {

constexpr uint16_t kFormatPcm = 1, kFormatFloat = 3, kFormatExtensible = 0xFFFE;
// The tail shared by every KSDATAFORMAT_SUBTYPE_* GUID; the first two bytes
// are the plain format tag.
constexpr uint8_t kGuidTail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                   0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};

uint16_t u16(const uint8_t* p) {
  return uint16_t(p[0] | p[1] << 8);
}
uint32_t u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

[[noreturn]] void fail(const std::string& what) {
  throw AudioError("invalid WAV file: " + what);
}

struct Format {
  uint16_t tag = 0;  // kFormatPcm or kFormatFloat, after resolving EXTENSIBLE
  int channels = 0;
  int sample_rate = 0;
  int bits = 0;  // container bits per sample
  int block_align = 0;
};

Format parse_fmt(const uint8_t* p, uint32_t size) {
  if (size < 16) fail("fmt chunk is " + std::to_string(size) + " bytes, less than 16");
  Format f;
  f.tag = u16(p);
  f.channels = u16(p + 2);
  const uint32_t rate = u32(p + 4);
  f.block_align = u16(p + 12);
  f.bits = u16(p + 14);
  if (f.tag == kFormatExtensible) {
    if (size < 40) fail("WAVE_FORMAT_EXTENSIBLE fmt chunk is shorter than 40 bytes");
    const int valid_bits = u16(p + 18);
    if (valid_bits > f.bits) fail("more valid bits than bits per sample");
    if (std::memcmp(p + 26, kGuidTail, sizeof kGuidTail) != 0) fail("unknown sub-format GUID");
    f.tag = u16(p + 24);
  }
  if (f.tag != kFormatPcm && f.tag != kFormatFloat) {
    char tag[8];
    std::snprintf(tag, sizeof tag, "0x%04X", unsigned(f.tag));
    throw CompressedWav(std::string("compressed WAV samples (format tag ") + tag + ")");
  }
  if (f.channels == 0) fail("zero channels");
  if (rate == 0 || rate > 0x7FFFFFFF) fail("sample rate " + std::to_string(rate));
  f.sample_rate = int(rate);
  const bool ok_bits = f.tag == kFormatPcm
                           ? (f.bits == 8 || f.bits == 16 || f.bits == 24 || f.bits == 32)
                           : (f.bits == 32 || f.bits == 64);
  if (!ok_bits)
    fail(std::to_string(f.bits) + "-bit " + (f.tag == kFormatPcm ? "integer" : "float") +
         " samples");
  if (f.block_align != f.channels * (f.bits / 8))
    fail("block align " + std::to_string(f.block_align) + " does not match " +
         std::to_string(f.channels) + " channels of " + std::to_string(f.bits) + " bits");
  return f;
}

// One sample of `bits` at p, as float.
float sample(bool is_float, int bits, const uint8_t* p) {
  if (is_float) {
    if (bits == 32) {
      float v;
      std::memcpy(&v, p, 4);  // WAV is little-endian, as are the CPUs hearth runs on
      return v;
    }
    double v;
    std::memcpy(&v, p, 8);
    return float(v);
  }
  switch (bits) {
    case 8:
      return float(int(p[0]) - 128) / 128.0f;
    case 16:
      return float(int16_t(u16(p))) / 32768.0f;
    case 24:
      return float(int32_t(uint32_t(p[0]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 24) >>
                   8) /
             8388608.0f;
    default:
      return float(int32_t(u32(p))) / 2147483648.0f;  // exact: a power-of-two scale
  }
}

}  // namespace

WavReader::WavReader(std::span<const uint8_t> bytes) {
  const uint8_t* b = bytes.data();
  const size_t n = bytes.size();
  if (n < 12 || std::memcmp(b, "RIFF", 4) != 0 || std::memcmp(b + 8, "WAVE", 4) != 0)
    fail("no RIFF/WAVE header");
  Format fmt;
  bool have_fmt = false;
  size_t data_size = 0;
  // The RIFF size field is not trusted (streamed files leave it wrong): the
  // chunks run to the end of the bytes.
  for (size_t pos = 12; pos + 8 <= n;) {
    const uint8_t* id = b + pos;
    const uint64_t size = u32(b + pos + 4);
    const size_t body = pos + 8, left = n - body;
    if (std::memcmp(id, "fmt ", 4) == 0) {
      if (have_fmt) fail("two fmt chunks");
      if (size > left) fail("fmt chunk runs past the end of the file");
      fmt = parse_fmt(b + body, uint32_t(size));
      have_fmt = true;
    } else if (std::memcmp(id, "data", 4) == 0) {
      if (data_) fail("two data chunks");
      data_ = b + body;
      data_size = size >= left ? left : size_t(size);  // 0xFFFFFFFF or cut short: what is there
    }
    if (size >= left) break;
    pos = body + size + (size & 1);
  }
  if (!have_fmt) fail("no fmt chunk");
  if (!data_) fail("no data chunk");
  frames_ = data_size / size_t(fmt.block_align);
  rate_ = fmt.sample_rate;
  channels_ = fmt.channels;
  bits_ = fmt.bits;
  float_ = fmt.tag == kFormatFloat;
}

void WavReader::read(size_t from, size_t n, float* out) const {
  const size_t width = size_t(bits_ / 8), count = n * size_t(channels_);
  const uint8_t* p = data_ + from * size_t(channels_) * width;
  for (size_t i = 0; i < count; ++i) {
    const float v = sample(float_, bits_, p + i * width);
    if (!std::isfinite(v)) throw AudioError("invalid WAV file: a float sample is NaN or infinite");
    out[i] = v;
  }
}

}  // namespace hearth::audio
