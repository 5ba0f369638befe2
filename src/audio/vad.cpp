#include "audio/vad.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>

#include "core/dtype.h"
#include "core/ops.h"

namespace hearth::audio {

namespace {

constexpr int kRate = 16000;
constexpr int kFft = 256, kHop = 128, kBins = kFft / 2 + 1;  // the STFT front end
constexpr int kFrames = 4;    // STFT frames of one window: (64 + 512 + 64 - 256) / 128 + 1
constexpr int kHidden = 128;  // LSTM state
constexpr int kStrides[4] = {1, 2, 2, 1};
// Windows whose front end and encoder run as one batch of matmuls; bounds the
// scratch memory for long audio (about 1.7 MB a window here).
constexpr int kBlock = 256;

// The container whisper.cpp's convert-silero-vad-to-ggml.py writes, all
// little-endian int32: magic "lmgg", the type string, version, window and
// context sizes, the layer sizes; then tensors until the end of the file,
// each n_dims, name length, type (0 f32, 1 f16), dims (ggml order: fastest
// first), name, data.
class Reader {
 public:
  Reader(std::vector<uint8_t> bytes, std::string file)
      : b_(std::move(bytes)), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("Silero VAD file " + file_ + ": " + what);
  }
  bool done() const { return pos_ == b_.size(); }
  const uint8_t* take(size_t n, const char* what) {
    if (b_.size() - pos_ < n) fail(std::string("truncated (in ") + what + ")");
    pos_ += n;
    return b_.data() + pos_ - n;
  }
  int32_t i32(const char* what) {
    int32_t v;
    std::memcpy(&v, take(4, what), 4);
    return v;
  }
  void expect(const char* what, int32_t want) {
    const int32_t got = i32(what);
    if (got != want)
      fail(std::string(what) + " is " + std::to_string(got) + ", expected " + std::to_string(want));
  }

 private:
  std::vector<uint8_t> b_;
  std::string file_;
  size_t pos_ = 0;
};

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

Matrix f32_matrix(const std::vector<float>& w, int64_t rows, int64_t cols) {
  Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.data = w.data();
  return m;
}

}  // namespace

std::unique_ptr<SileroVad> SileroVad::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("Silero VAD file " + file.string() + ": cannot be opened");
  Reader r({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}, file.string());

  // The header: only the one architecture exists, so every size must be its.
  if (r.i32("magic") != 0x67676d6c) r.fail("not a ggml file (bad magic)");
  const int32_t type_len = r.i32("model type");
  if (type_len < 0 || type_len > 64) r.fail("bad model type length");
  const char* type = reinterpret_cast<const char*>(r.take(size_t(type_len), "model type"));
  if (std::string(type, size_t(type_len)) != "silero-16k")
    r.fail("model type is '" + std::string(type, size_t(type_len)) + "', expected 'silero-16k'");
  r.take(12, "version");  // major, minor, patch of silero-vad: informative only
  r.expect("window size", kVadWindow);
  r.expect("context size", kVadContext);
  r.expect("encoder layers", 4);
  auto vad = std::unique_ptr<SileroVad>(new SileroVad);
  const int channels[5] = {kBins, 128, 64, 64, kHidden};
  for (int l = 0; l < 4; ++l) {
    Conv& c = vad->encoder_[l];
    c.in = channels[l];
    c.out = channels[l + 1];
    c.stride = kStrides[l];
    r.expect("encoder input channels", c.in);
    r.expect("encoder output channels", c.out);
    r.expect("encoder kernel size", 3);
  }
  r.expect("LSTM input size", kHidden);
  r.expect("LSTM hidden size", kHidden);
  r.expect("final conv input", kHidden);
  r.expect("final conv output", 1);

  // Each tensor's destination and its dims in ggml order.
  std::vector<float> bias_ih, bias_hh, out_bias;
  struct Slot {
    std::vector<float>* data;
    std::vector<int32_t> dims;
  };
  const std::string enc = "_model.encoder.";
  std::map<std::string, Slot> slots = {
      {"_model.stft.forward_basis_buffer", {&vad->stft_basis_, {kFft, 1, 2 * kBins}}},
      {"_model.decoder.rnn.weight_ih", {&vad->lstm_ih_, {kHidden, 4 * kHidden}}},
      {"_model.decoder.rnn.weight_hh", {&vad->lstm_hh_, {kHidden, 4 * kHidden}}},
      {"_model.decoder.rnn.bias_ih", {&bias_ih, {4 * kHidden}}},
      {"_model.decoder.rnn.bias_hh", {&bias_hh, {4 * kHidden}}},
      {"_model.decoder.decoder.2.weight", {&vad->out_weight_, {kHidden}}},
      {"_model.decoder.decoder.2.bias", {&out_bias, {}}},
  };
  for (int l = 0; l < 4; ++l) {
    Conv& c = vad->encoder_[l];
    const std::string p = enc + std::to_string(l) + ".reparam_conv.";
    slots[p + "weight"] = {&c.weight, {3, c.in, c.out}};
    slots[p + "bias"] = {&c.bias, {c.out}};
  }

  while (!r.done()) {
    const int32_t n_dims = r.i32("tensor header");
    const int32_t name_len = r.i32("tensor header");
    const int32_t dtype = r.i32("tensor header");
    if (n_dims < 0 || n_dims > 4) r.fail("tensor with " + std::to_string(n_dims) + " dims");
    if (name_len <= 0 || name_len > 256) r.fail("bad tensor name length");
    if (dtype != 0 && dtype != 1) r.fail("tensor type " + std::to_string(dtype) + " (not f32/f16)");
    std::vector<int32_t> dims(static_cast<size_t>(n_dims));
    for (int32_t& d : dims) d = r.i32("tensor dims");
    const char* name_p = reinterpret_cast<const char*>(r.take(size_t(name_len), "tensor name"));
    const std::string name(name_p, size_t(name_len));
    const auto slot = slots.find(name);
    if (slot == slots.end()) r.fail("unexpected tensor '" + name + "'");
    if (dims != slot->second.dims) r.fail("tensor '" + name + "' has the wrong shape");
    size_t n = 1;
    for (int32_t d : dims) n *= size_t(d);  // the shape matched: small and positive
    const uint8_t* p = r.take(n * (dtype == 0 ? 4 : 2), name.c_str());
    std::vector<float>& out = *slot->second.data;
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (dtype == 0) {
        std::memcpy(&out[i], p + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
    }
    slots.erase(slot);  // a second copy of a tensor is an unexpected one
  }
  if (!slots.empty()) r.fail("tensor '" + slots.begin()->first + "' is missing");

  vad->lstm_bias_.resize(4 * kHidden);
  for (int i = 0; i < 4 * kHidden; ++i) vad->lstm_bias_[i] = bias_ih[i] + bias_hh[i];
  vad->out_bias_ = out_bias[0];
  return vad;
}

std::vector<float> SileroVad::probabilities(std::span<const float> samples) const {
  VadState state;
  extend(samples, state, true);
  return std::move(state.probs);
}

void SileroVad::extend(std::span<const float> samples, VadState& state, bool final) const {
  // Blocks of kBlock windows from the first, as for a whole clip, so the
  // matmuls, and so the probabilities, are the same however the audio came.
  int64_t n_windows = (int64_t(samples.size()) + kVadWindow - 1) / kVadWindow;
  if (!final) n_windows = int64_t(samples.size()) / (kBlock * kVadWindow) * kBlock;
  if (n_windows <= state.windows_done) return;
  std::vector<float>& probs = state.probs;
  probs.resize(static_cast<size_t>(n_windows));
  // Window i's model input is samples [512 i - 64, 512 i + 512): the
  // previous window's last 64 (zeros before the first), zeros past the end.
  const int64_t n_samples = int64_t(samples.size());
  auto sample = [&](int64_t i) { return i >= 0 && i < n_samples ? samples[size_t(i)] : 0.0f; };

  ThreadPool pool(1);  // one thread: the calls stay independent, the work is small
  const Matrix basis = f32_matrix(stft_basis_, 2 * kBins, kFft);
  const Matrix w_ih = f32_matrix(lstm_ih_, 4 * kHidden, kHidden);
  const Matrix w_hh = f32_matrix(lstm_hh_, 4 * kHidden, kHidden);
  std::vector<float> frames, spectrum, act, cols, next, gates;
  std::vector<float>& h = state.h;
  std::vector<float>& c = state.c;
  h.resize(kHidden, 0.0f), c.resize(kHidden, 0.0f);
  std::vector<float> hh(4 * kHidden);

  for (int64_t w0 = state.windows_done; w0 < n_windows; w0 += kBlock) {
    const int nw = int(std::min<int64_t>(kBlock, n_windows - w0));
    // STFT: 576 samples reflect-padded on the right by 64 (torch's reflect
    // leaves out the edge sample), four frames of 256 every 128, one matmul
    // with the basis, magnitudes of the 129 bins.
    frames.resize(size_t(nw) * kFrames * kFft);
    for (int w = 0; w < nw; ++w) {
      const int64_t first = (w0 + w) * kVadWindow - kVadContext;
      constexpr int n = kVadContext + kVadWindow;
      for (int f = 0; f < kFrames; ++f)
        for (int k = 0; k < kFft; ++k) {
          const int t = f * kHop + k;
          frames[(size_t(w) * kFrames + f) * kFft + k] =
              sample(first + (t < n ? t : 2 * n - 2 - t));
        }
    }
    spectrum.resize(size_t(nw) * kFrames * 2 * kBins);
    matmul(pool, basis, frames.data(), int64_t(nw) * kFrames, spectrum.data());
    act.resize(size_t(nw) * kFrames * kBins);
    for (size_t f = 0; f < size_t(nw) * kFrames; ++f)
      for (int b = 0; b < kBins; ++b) {
        const float re = spectrum[f * 2 * kBins + b], im = spectrum[f * 2 * kBins + kBins + b];
        act[f * kBins + b] = std::sqrt(re * re + im * im);
      }

    // Encoder: each conv as a matmul over im2col rows [in][3]; time steps
    // 4 -> 4 -> 2 -> 1 -> 1 per window, activations [window][time][channel].
    int steps = kFrames;
    for (const Conv& conv : encoder_) {
      const int out_steps = (steps - 1) / conv.stride + 1;
      cols.assign(size_t(nw) * out_steps * conv.in * 3, 0.0f);
      for (int w = 0; w < nw; ++w)
        for (int t = 0; t < out_steps; ++t) {
          float* row = &cols[(size_t(w) * out_steps + t) * conv.in * 3];
          for (int k = 0; k < 3; ++k) {
            const int s = t * conv.stride + k - 1;  // padding 1
            if (s < 0 || s >= steps) continue;
            const float* x = &act[(size_t(w) * steps + s) * conv.in];
            for (int ch = 0; ch < conv.in; ++ch) row[ch * 3 + k] = x[ch];
          }
        }
      next.resize(size_t(nw) * out_steps * conv.out);
      matmul(pool, f32_matrix(conv.weight, conv.out, int64_t(conv.in) * 3), cols.data(),
             int64_t(nw) * out_steps, next.data());
      for (size_t i = 0; i < next.size(); ++i)
        next[i] = std::max(0.0f, next[i] + conv.bias[i % size_t(conv.out)]);
      act.swap(next);
      steps = out_steps;
    }

    // LSTM: the input half of the gates for the whole block at once, then
    // window by window the recurrent half and the state update.
    gates.resize(size_t(nw) * 4 * kHidden);
    matmul(pool, w_ih, act.data(), nw, gates.data());
    for (int w = 0; w < nw; ++w) {
      matmul(pool, w_hh, h.data(), 1, hh.data());
      const float* g = &gates[size_t(w) * 4 * kHidden];
      float logit = out_bias_;
      for (int j = 0; j < kHidden; ++j) {
        auto gate = [&](int q) {
          return g[q * kHidden + j] + hh[q * kHidden + j] + lstm_bias_[q * kHidden + j];
        };
        c[j] = sigmoid(gate(1)) * c[j] + sigmoid(gate(0)) * std::tanh(gate(2));
        h[j] = sigmoid(gate(3)) * std::tanh(c[j]);
        logit += out_weight_[j] * std::max(0.0f, h[j]);
      }
      probs[size_t(w0 + w)] = sigmoid(logit);
    }
  }
  state.windows_done = n_windows;
}

std::vector<SpeechSpan> speech_spans(std::span<const float> probs, int64_t samples,
                                     const VadOptions& o) {
  struct Span {
    int64_t start, end;
  };
  const int64_t min_silence = int64_t(kRate) * o.min_silence_ms / 1000;
  const int64_t min_speech = int64_t(kRate) * o.min_speech_ms / 1000;
  const int64_t pad = int64_t(kRate) * o.speech_pad_ms / 1000;
  const int64_t merge_gap = kRate * 200 / 1000;
  const float neg_threshold = std::max(o.threshold - 0.15f, 0.01f);

  // Hysteresis: speech starts at a window >= threshold and ends at the first
  // window of a run below neg_threshold that lasts min_silence; a window back
  // above threshold cancels the run.
  std::vector<Span> spans;
  bool in_speech = false;
  int64_t start = 0, temp_end = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const float p = probs[i];
    const int64_t at = int64_t(i) * kVadWindow;
    if (p >= o.threshold) temp_end = 0;
    if (p >= o.threshold && !in_speech) {
      in_speech = true;
      start = at;
      continue;
    }
    if (p < neg_threshold && in_speech) {
      if (!temp_end) temp_end = at;
      if (at - temp_end < min_silence) continue;
      if (temp_end - start > min_speech) spans.push_back({start, temp_end});
      in_speech = false;
      temp_end = 0;
    }
  }
  if (in_speech && samples - start > min_speech) spans.push_back({start, samples});

  // whisper.cpp's post-processing: merge spans closer than 200 ms, then drop
  // what is still shorter than min_speech.
  std::vector<Span> merged;
  for (const Span& s : spans) {
    if (!merged.empty() && s.start - merged.back().end < merge_gap)
      merged.back().end = s.end;
    else
      merged.push_back(s);
  }
  std::erase_if(merged, [&](const Span& s) { return s.end - s.start < min_speech; });

  // Padding: the full pad on each side, or half the gap each where the gap
  // between two spans is less than two pads.
  std::vector<SpeechSpan> out;
  for (size_t i = 0; i < merged.size(); ++i) {
    Span& s = merged[i];
    if (i == 0) s.start = std::max<int64_t>(0, s.start - pad);
    if (i + 1 < merged.size()) {
      Span& n = merged[i + 1];
      const int64_t gap = n.start - s.end;
      const int64_t grow = gap < 2 * pad ? gap / 2 : pad;
      s.end = std::min(samples, s.end + grow);
      n.start = std::max<int64_t>(0, n.start - grow);
    } else {
      s.end = std::min(samples, s.end + pad);
    }
    out.push_back({double(s.start) / kRate, double(s.end) / kRate});
  }
  return out;
}

}  // namespace hearth::audio
