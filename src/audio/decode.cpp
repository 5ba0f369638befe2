#include "audio/decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>
}

#include "audio/audio_error.h"
#include "audio/wav.h"
#include "core/seconds_text.h"

namespace hearth::audio {

namespace {

constexpr int kMinRate = 1000, kMaxRate = 768000, kMaxChannels = 64;
// About the lowest bit rate speech codecs go to (AMR at 4.75 kb/s, Opus at 6).
constexpr double kMinBytesPerSecond = 500;
// The demuxers FFmpeg may pick: audio containers only. Without this list it
// would also accept playlists (HLS, concat) that open other files or URLs.
constexpr const char* kFormats =
    "mp3,flac,ogg,mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,aac,wav,w64,aiff,caf,amr,asf,au";

struct FreeFormat {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct FreeIo {
  void operator()(AVIOContext* io) const {
    av_freep(&io->buffer);  // FFmpeg may have replaced the buffer it was given
    avio_context_free(&io);
  }
};
struct FreeCodec {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FreePacket {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FreeFrame {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct FreeSwr {
  void operator()(SwrContext* s) const { swr_free(&s); }
};

std::string av_error(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

[[noreturn]] void fail(const std::string& what) {
  throw AudioError("could not decode audio: " + what);
}

template <typename T>
T* check_alloc(T* p) {
  if (!p) throw std::bad_alloc();
  return p;
}

void check_shape(int rate, int channels) {
  if (rate < kMinRate || rate > kMaxRate)
    throw AudioError("unsupported sample rate " + std::to_string(rate) +
                     " Hz (1 kHz to 768 kHz are)");
  if (channels < 1 || channels > kMaxChannels)
    throw AudioError("unsupported channel count " + std::to_string(channels) + " (1 to 64 are)");
}

// What one decode may make and read, and whether to go on at all.
struct Limits {
  size_t max_samples;  // 16 kHz mono output
  // Input samples, every channel counted: kInputPerOutput per output sample
  // (768 kHz mono, or 48 kHz in 16 channels), so that a small upload of
  // compressed silence at a high rate in many channels, which makes little
  // output, cannot take minutes of CPU to read.
  uint64_t max_input;
  const std::function<bool()>& cancelled;
  const std::function<void(size_t)>& grew;
  uint64_t input = 0;
};
constexpr uint64_t kInputPerOutput = 48;

AudioTooLong too_long(const Limits& limits) {
  return AudioTooLong("the audio is longer than " + seconds_text(double(limits.max_samples) / kSampleRate));
}

// Averages the channels to mono and resamples to 16 kHz float, appending to
// `out`. swr's own downmix weights channels by speaker position; a custom
// matrix of 1/n makes it the plain mean.
class Resampler {
 public:
  Resampler(int channels, AVSampleFormat format, int rate, std::vector<float>& out, Limits& limits)
      : channels_(channels), format_(format), rate_(rate), out_(out), limits_(limits) {
    check_shape(rate, channels);
    AVChannelLayout in, mono = AV_CHANNEL_LAYOUT_MONO;
    av_channel_layout_default(&in, channels);
    SwrContext* s = nullptr;
    int err = swr_alloc_set_opts2(&s, &mono, AV_SAMPLE_FMT_FLT, kSampleRate, &in, format, rate, 0,
                                  nullptr);
    swr_.reset(s);
    if (err >= 0 && channels > 1) {
      const std::vector<double> mean(size_t(channels), 1.0 / channels);
      err = swr_set_matrix(s, mean.data(), channels);
    }
    if (err >= 0) err = swr_init(s);
    if (err < 0)
      fail("cannot convert " + std::to_string(channels) + " channels at " + std::to_string(rate) +
           " Hz (" + av_error(err) + ")");
  }

  bool matches(int channels, int format, int rate) const {
    return channels == channels_ && format == format_ && rate == rate_;
  }

  // n samples per channel, in the layout of the format given (planar or not).
  void push(const uint8_t* const* data, int n) {
    if (limits_.cancelled && limits_.cancelled()) throw Cancelled();
    limits_.input += uint64_t(n) * uint64_t(channels_);
    if (limits_.input > limits_.max_input)
      throw TooManyInputSamples("the audio holds more than " + std::to_string(limits_.max_input) +
                         " samples across its channels (" + seconds_text(double(limits_.max_samples) / kSampleRate) +
                         " at 768 kHz, or at 48 kHz in 16 channels)");
    const int cap = swr_get_out_samples(swr_.get(), n);
    if (cap < 0) fail(av_error(cap));
    const size_t old = out_.size();
    out_.resize(old + size_t(cap));
    uint8_t* dst = reinterpret_cast<uint8_t*>(out_.data() + old);
    const int got = swr_convert(swr_.get(), &dst, cap, const_cast<const uint8_t**>(data), n);
    if (got < 0) fail(av_error(got));
    out_.resize(old + size_t(got));
    if (out_.size() > limits_.max_samples) throw too_long(limits_);
    if (limits_.grew && got > 0) limits_.grew(out_.size());
  }

  void finish() { push(nullptr, 0); }  // the samples the resampler's filter still holds

 private:
  std::unique_ptr<SwrContext, FreeSwr> swr_;
  int channels_;
  int format_;
  int rate_;
  std::vector<float>& out_;
  Limits& limits_;
};

// Room for about `seconds` of output (one more block when it is known
// exactly), so the samples do not grow by doubling past twice their size.
void reserve_for(double seconds, std::vector<float>& out, size_t max_samples) {
  if (seconds > 0) out.reserve(size_t(std::min(seconds * kSampleRate * 1.01 + 4096, double(max_samples) + 4096)));
}

void decode_wav(std::span<const uint8_t> bytes, std::vector<float>& out, Limits& limits) {
  const WavReader wav(bytes);
  Resampler r(wav.channels(), AV_SAMPLE_FMT_FLT, wav.sample_rate(), out, limits);  // checks the shape
  // The length is exact (the data chunk was cut to the bytes there): a file
  // too long is refused before a sample is converted.
  const double seconds = double(wav.frames()) / wav.sample_rate();
  if (seconds * kSampleRate > double(limits.max_samples)) throw too_long(limits);
  reserve_for(seconds, out, limits.max_samples);
  constexpr size_t kBlock = size_t(1) << 16;  // frames per call: swr counts in int
  std::vector<float> block(std::min(kBlock, wav.frames()) * size_t(wav.channels()));
  for (size_t f = 0; f < wav.frames(); f += kBlock) {
    const size_t n = std::min(kBlock, wav.frames() - f);
    wav.read(f, n, block.data());
    const uint8_t* plane = reinterpret_cast<const uint8_t*>(block.data());
    r.push(&plane, int(n));
  }
  r.finish();
}

// The upload, as FFmpeg's I/O reads it.
struct Reader {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
};

int read_bytes(void* opaque, uint8_t* buf, int size) {
  auto* r = static_cast<Reader*>(opaque);
  const size_t n = std::min(size_t(std::max(size, 0)), r->bytes.size() - r->pos);
  if (n == 0) return AVERROR_EOF;
  std::memcpy(buf, r->bytes.data() + r->pos, n);
  r->pos += n;
  return int(n);
}

int64_t seek_bytes(void* opaque, int64_t offset, int whence) {
  auto* r = static_cast<Reader*>(opaque);
  const int64_t size = int64_t(r->bytes.size());
  if (whence & AVSEEK_SIZE) return size;
  whence &= ~AVSEEK_FORCE;
  const int64_t base = whence == SEEK_SET   ? 0
                       : whence == SEEK_CUR ? int64_t(r->pos)
                       : whence == SEEK_END ? size
                                            : -1;
  if (base < 0 || offset < -base || offset > size - base) return AVERROR(EINVAL);
  r->pos = size_t(base + offset);
  return int64_t(r->pos);
}

// Demuxers must not open anything beyond the bytes they were given.
int refuse_open(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
  return AVERROR(EPERM);
}

void decode_ffmpeg(std::span<const uint8_t> bytes, std::vector<float>& out, Limits& limits) {
  static std::once_flag quiet;
  std::call_once(quiet,
                 [] { av_log_set_level(AV_LOG_QUIET); });  // errors come back as AudioError instead

  Reader reader{bytes};
  constexpr int kIoBuffer = 1 << 15;
  auto* buffer = check_alloc(static_cast<uint8_t*>(av_malloc(kIoBuffer)));
  std::unique_ptr<AVIOContext, FreeIo> io(
      avio_alloc_context(buffer, kIoBuffer, 0, &reader, read_bytes, nullptr, seek_bytes));
  if (!io) {
    av_free(buffer);
    throw std::bad_alloc();
  }
  AVFormatContext* raw = check_alloc(avformat_alloc_context());
  raw->pb = io.get();
  raw->flags |= AVFMT_FLAG_CUSTOM_IO;
  raw->io_open = refuse_open;
  AVDictionary* opts = nullptr;
  av_dict_set(&opts, "format_whitelist", kFormats, 0);
  int err = avformat_open_input(&raw, nullptr, nullptr, &opts);  // frees raw when it fails
  av_dict_free(&opts);
  if (err < 0) fail("not a supported audio format (" + av_error(err) + ")");
  std::unique_ptr<AVFormatContext, FreeFormat> fmt(raw);  // closed before io is freed
  if ((err = avformat_find_stream_info(fmt.get(), nullptr)) < 0) fail(av_error(err));

  const AVStream* stream = nullptr;
  for (unsigned i = 0; i < fmt->nb_streams && !stream; ++i)
    if (fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) stream = fmt->streams[i];
  if (!stream) throw AudioError("the file has no audio stream");
  const AVCodec* codec = avcodec_find_decoder(stream->codecpar->codec_id);
  if (!codec)
    fail(std::string("unsupported codec ") + avcodec_get_name(stream->codecpar->codec_id));
  std::unique_ptr<AVCodecContext, FreeCodec> ctx(check_alloc(avcodec_alloc_context3(codec)));
  if ((err = avcodec_parameters_to_context(ctx.get(), stream->codecpar)) < 0) fail(av_error(err));
  ctx->pkt_timebase = stream->time_base;
  if ((err = avcodec_open2(ctx.get(), codec, nullptr)) < 0) fail(av_error(err));

  // A duration the header claims is trusted only as far as the upload could
  // hold it (a 1 KB file that claims 3 hours reserves no 700 MB).
  if (fmt->duration > 0)
    reserve_for(std::min(double(fmt->duration) / AV_TIME_BASE, double(bytes.size()) / kMinBytesPerSecond), out,
                limits.max_samples);
  std::unique_ptr<AVPacket, FreePacket> packet(check_alloc(av_packet_alloc()));
  std::unique_ptr<AVFrame, FreeFrame> frame(check_alloc(av_frame_alloc()));
  std::optional<Resampler> resampler;
  // Sends one packet (nullptr: end of stream) and resamples every frame it
  // gives. A damaged packet loses its own frames, as with the ffmpeg command
  // line: a file with nothing left decodes to no samples, an error.
  const auto decode = [&](const AVPacket* p) {
    int e = avcodec_send_packet(ctx.get(), p);
    if (e == AVERROR_INVALIDDATA) return;
    if (e < 0) fail(av_error(e));
    while ((e = avcodec_receive_frame(ctx.get(), frame.get())) >= 0) {
      const int channels = frame->ch_layout.nb_channels;
      if (!resampler || !resampler->matches(channels, frame->format, frame->sample_rate)) {
        if (resampler) resampler->finish();  // the format changed mid-stream
        resampler.reset();
        resampler.emplace(channels, AVSampleFormat(frame->format), frame->sample_rate, out, limits);
      }
      resampler->push(frame->extended_data, frame->nb_samples);
      av_frame_unref(frame.get());
    }
    if (e != AVERROR(EAGAIN) && e != AVERROR_EOF && e != AVERROR_INVALIDDATA) fail(av_error(e));
  };
  while ((err = av_read_frame(fmt.get(), packet.get())) >= 0) {
    if (packet->stream_index == stream->index) decode(packet.get());
    av_packet_unref(packet.get());
  }
  if (err != AVERROR_EOF) fail(av_error(err));
  decode(nullptr);
  if (resampler) resampler->finish();
}

}  // namespace

bool looks_like_wav(std::span<const uint8_t> bytes) {
  return bytes.size() >= 12 && std::memcmp(bytes.data(), "RIFF", 4) == 0 &&
         std::memcmp(bytes.data() + 8, "WAVE", 4) == 0;
}

std::vector<float> decode_audio(std::span<const uint8_t> bytes, double max_seconds,
                                const std::function<bool()>& cancelled, const std::function<void(size_t)>& grew) {
  if (bytes.empty()) throw AudioError("the audio is empty");
  const size_t max_samples = size_t(std::clamp(max_seconds, 0.0, 1e9) * kSampleRate);
  Limits limits{max_samples, uint64_t(max_samples) * kInputPerOutput, cancelled, grew};
  std::vector<float> out;
  bool pcm_wav = looks_like_wav(bytes);
  if (pcm_wav) {
    try {
      decode_wav(bytes, out, limits);
    } catch (const CompressedWav&) {
      pcm_wav = false;
    }
  }
  if (!pcm_wav) decode_ffmpeg(bytes, out, limits);
  // What waits for a transcription holds only its samples (a copy: only
  // when a duration the file did not say left much room).
  if (out.capacity() - out.size() > out.size() / 8) out.shrink_to_fit();
  if (out.empty()) throw AudioError("the audio holds no samples");
  // Float codecs can carry NaN or infinity, which would poison the whole log-mel.
  if (!std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }))
    throw AudioError("the audio holds NaN or infinite samples");
  clip_to_full_scale(out);
  return out;
}

void clip_to_full_scale(std::span<float> samples) {
  for (float& v : samples) v = std::clamp(v, -1.0f, 1.0f);
}

}  // namespace hearth::audio
