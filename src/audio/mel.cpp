#include "audio/mel.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <string>
#include <thread>

#include "audio/decode.h"
#include "core/thread_pool.h"

namespace hearth::audio {

namespace {

// Slaney's mel scale (librosa's default, htk=False): linear below 1 kHz,
// logarithmic above.
constexpr double kMelLinear = 200.0 / 3, kMinLogHz = 1000, kMinLogMel = kMinLogHz / kMelLinear;
const double kLogStep = std::log(6.4) / 27;

double hz_to_mel(double hz) {
  return hz < kMinLogHz ? hz / kMelLinear : kMinLogMel + std::log(hz / kMinLogHz) / kLogStep;
}
double mel_to_hz(double mel) {
  return mel < kMinLogMel ? mel * kMelLinear : kMinLogHz * std::exp(kLogStep * (mel - kMinLogMel));
}

// The r2c plan is made once and shared: fftwf_execute_dft_r2c with each
// thread's own arrays is thread-safe, but FFTW's planner is not, so planning
// holds a lock. FFTW_ESTIMATE keeps the plan, and so the results, the same on
// every run.
std::mutex planner;
fftwf_plan r2c_plan() {
  static const fftwf_plan plan = [] {
    std::lock_guard lock(planner);
    float* in = fftwf_alloc_real(kNfft);
    fftwf_complex* out = fftwf_alloc_complex(kFreqBins);
    const fftwf_plan p = fftwf_plan_dft_r2c_1d(kNfft, in, out, FFTW_ESTIMATE);
    fftwf_free(in);
    fftwf_free(out);
    if (!p) throw std::runtime_error("FFTW could not plan a 400-point FFT");
    return p;
  }();
  return plan;
}

struct FftwFree {
  void operator()(void* p) const { fftwf_free(p); }
};

// The nonzero span of each filter row: a mel band covers a few FFT bins.
struct Band {
  int begin = 0, end = 0;
};

}  // namespace

std::vector<float> mel_filters(int n_mels) {
  if (n_mels < 1 || n_mels > 512) throw std::invalid_argument("n_mels " + std::to_string(n_mels));
  const double top = hz_to_mel(kSampleRate / 2.0);
  std::vector<double> hz(size_t(n_mels) + 2);  // band edges, evenly spaced in mels
  for (size_t i = 0; i < hz.size(); ++i) hz[i] = mel_to_hz(top * double(i) / double(n_mels + 1));
  std::vector<float> w(size_t(n_mels) * kFreqBins);
  for (int m = 0; m < n_mels; ++m) {
    const double lo = hz[m], mid = hz[m + 1], hi = hz[m + 2];
    const double norm = 2.0 / (hi - lo);  // Slaney: each filter has unit area
    for (int k = 0; k < kFreqBins; ++k) {
      const double f = double(k) * kSampleRate / kNfft;
      const double rise = (f - lo) / (mid - lo), fall = (hi - f) / (hi - mid);
      w[size_t(m) * kFreqBins + k] = float(std::max(0.0, std::min(rise, fall)) * norm);
    }
  }
  return w;
}

void log10_mel_frames(std::span<const float> audio, int64_t length, int n_mels, int64_t first,
                      int64_t count, std::span<float> out, int64_t frame_stride,
                      int64_t mel_stride) {
  if (length < int64_t(audio.size()) || first < 0 || count < 0 || first + count > length / kHop)
    throw std::invalid_argument("log-mel frames outside the signal");
  static std::mutex tables_lock;  // the filterbank and its bands, made once per mel count
  struct Tables {
    std::vector<float> filters;
    std::vector<Band> bands;
  };
  static std::map<int, Tables> tables;
  const Tables* t = nullptr;
  {
    std::lock_guard lock(tables_lock);
    auto [it, made] = tables.try_emplace(n_mels);
    if (made) {
      it->second.filters = mel_filters(n_mels);
      for (int m = 0; m < n_mels; ++m) {
        const float* row = &it->second.filters[size_t(m) * kFreqBins];
        int b = 0, e = kFreqBins;
        while (b < e && row[b] == 0) ++b;
        while (e > b && row[e - 1] == 0) --e;
        it->second.bands.push_back({b, e});
      }
    }
    t = &it->second;
  }
  static const std::vector<float> window = [] {  // periodic Hann, as torch.hann_window(400)
    std::vector<float> w(kNfft);
    for (int k = 0; k < kNfft; ++k)
      w[size_t(k)] = float(0.5 - 0.5 * std::cos(2 * std::numbers::pi * k / kNfft));
    return w;
  }();

  // Sample j of the signal reflect-padded by kNfft / 2 on each side (numpy's
  // mode='reflect', repeated where the signal is shorter than the padding).
  constexpr int64_t kEdge = kNfft / 2;
  const int64_t period = 2 * (length - 1);
  const auto sample = [&](int64_t j) {
    int64_t i = j - kEdge;
    if (i < 0 || i >= length) {
      i = period > 0 ? std::abs(i) % period : 0;
      if (i >= length) i = period - i;
    }
    return i < int64_t(audio.size()) ? audio[size_t(i)] : 0.0f;
  };

  const fftwf_plan plan = r2c_plan();
  std::unique_ptr<float, FftwFree> in(fftwf_alloc_real(kNfft));
  std::unique_ptr<fftwf_complex, FftwFree> spectrum(fftwf_alloc_complex(kFreqBins));
  if (!in || !spectrum) throw std::bad_alloc();
  float power[kFreqBins];
  for (int64_t f = 0; f < count; ++f) {
    const int64_t start = (first + f) * kHop;  // in the padded signal
    if (start >= kEdge && start + kNfft - kEdge <= int64_t(audio.size())) {
      const float* frame = audio.data() + (start - kEdge);
      for (int k = 0; k < kNfft; ++k) in.get()[k] = frame[k] * window[size_t(k)];
    } else {
      for (int k = 0; k < kNfft; ++k) in.get()[k] = sample(start + k) * window[size_t(k)];
    }
    fftwf_execute_dft_r2c(plan, in.get(), spectrum.get());
    for (int k = 0; k < kFreqBins; ++k) {
      const float re = spectrum.get()[k][0], im = spectrum.get()[k][1];
      power[k] = re * re + im * im;
    }
    for (int m = 0; m < n_mels; ++m) {
      const float* row = &t->filters[size_t(m) * kFreqBins];
      float sum = 0;
      for (int k = t->bands[size_t(m)].begin; k < t->bands[size_t(m)].end; ++k)
        sum += row[k] * power[k];
      out[size_t(f * frame_stride + m * mel_stride)] = std::log10(std::max(sum, 1e-10f));
    }
  }
}

LogMel log_mel_spectrogram(std::span<const float> audio, int n_mels, int64_t padding) {
  if (padding < 0) throw std::invalid_argument("negative mel padding");
  if (n_mels < 1 || n_mels > 512) throw std::invalid_argument("n_mels " + std::to_string(n_mels));
  const int64_t n = int64_t(audio.size()) + padding;
  LogMel mel;
  mel.n_mels = n_mels;
  mel.frames = n / kHop;  // 1 + n / kHop STFT frames, less the last one Whisper drops
  if (mel.frames == 0) return mel;
  mel.data.resize(size_t(n_mels) * size_t(mel.frames));
  const auto run = [&](int64_t t0, int64_t t1) {
    log10_mel_frames(audio, n, n_mels, t0, t1 - t0, std::span(mel.data).subspan(size_t(t0)), 1,
                     mel.frames);
  };
  // A few milliseconds per thousand frames: threads pay off from a few seconds of audio.
  const int64_t threads = std::clamp<int64_t>(mel.frames / 1000, 1, ThreadPool::default_threads());
  std::vector<std::jthread> workers;
  for (int64_t i = 1; i < threads; ++i)
    workers.emplace_back(run, mel.frames * i / threads, mel.frames * (i + 1) / threads);
  run(0, mel.frames / threads);
  workers.clear();  // joins

  const float top = *std::max_element(mel.data.begin(), mel.data.end());
  for (float& v : mel.data) v = scale_log_mel(v, top);
  return mel;
}

}  // namespace hearth::audio
