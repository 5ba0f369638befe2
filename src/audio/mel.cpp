#include "audio/mel.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
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

LogMel log_mel_spectrogram(std::span<const float> audio, int n_mels, int64_t padding) {
  if (padding < 0) throw std::invalid_argument("negative mel padding");
  const std::vector<float> filters = mel_filters(n_mels);
  const int64_t len = int64_t(audio.size()), n = len + padding;
  LogMel mel;
  mel.n_mels = n_mels;
  mel.frames = n / kHop;  // 1 + n / kHop STFT frames, less the last one Whisper drops
  if (mel.frames == 0) return mel;

  // The signal, zero-padded, then reflect-padded by kNfft / 2 on each side.
  constexpr int64_t kEdge = kNfft / 2;
  std::vector<float> x(size_t(n + 2 * kEdge), 0.0f);
  std::copy(audio.begin(), audio.end(), x.begin() + kEdge);
  const int64_t period = 2 * (n - 1);  // n >= kHop here
  const auto reflect = [&](int64_t j) {
    j = std::abs(j) % period;
    return j < n ? j : period - j;
  };
  for (int64_t i = 0; i < kEdge; ++i) {
    x[size_t(i)] = x[size_t(kEdge + reflect(i - kEdge))];
    x[size_t(n + kEdge + i)] = x[size_t(kEdge + reflect(n + i))];
  }

  std::vector<float> window(kNfft);  // periodic Hann, as torch.hann_window(400)
  for (int k = 0; k < kNfft; ++k)
    window[k] = float(0.5 - 0.5 * std::cos(2 * std::numbers::pi * k / kNfft));
  std::vector<Band> bands(static_cast<size_t>(n_mels));
  for (int m = 0; m < n_mels; ++m) {
    const float* row = &filters[size_t(m) * kFreqBins];
    int b = 0, e = kFreqBins;
    while (b < e && row[b] == 0) ++b;
    while (e > b && row[e - 1] == 0) --e;
    bands[size_t(m)] = {b, e};
  }

  const fftwf_plan plan = r2c_plan();
  mel.data.resize(size_t(n_mels) * size_t(mel.frames));
  const auto run = [&](int64_t t0, int64_t t1) {
    std::unique_ptr<float, FftwFree> in(fftwf_alloc_real(kNfft));
    std::unique_ptr<fftwf_complex, FftwFree> out(fftwf_alloc_complex(kFreqBins));
    if (!in || !out) throw std::bad_alloc();
    float power[kFreqBins];
    for (int64_t t = t0; t < t1; ++t) {
      const float* frame = &x[size_t(t * kHop)];
      for (int k = 0; k < kNfft; ++k) in.get()[k] = frame[k] * window[k];
      fftwf_execute_dft_r2c(plan, in.get(), out.get());
      for (int k = 0; k < kFreqBins; ++k) {
        const float re = out.get()[k][0], im = out.get()[k][1];
        power[k] = re * re + im * im;
      }
      for (int m = 0; m < n_mels; ++m) {
        const float* row = &filters[size_t(m) * kFreqBins];
        float sum = 0;
        for (int k = bands[size_t(m)].begin; k < bands[size_t(m)].end; ++k)
          sum += row[k] * power[k];
        mel.data[size_t(m) * size_t(mel.frames) + size_t(t)] = std::log10(std::max(sum, 1e-10f));
      }
    }
  };
  // A few milliseconds per thousand frames: threads pay off from a few seconds of audio.
  const int64_t threads = std::clamp<int64_t>(mel.frames / 1000, 1, ThreadPool::default_threads());
  std::vector<std::jthread> workers;
  for (int64_t i = 1; i < threads; ++i)
    workers.emplace_back(run, mel.frames * i / threads, mel.frames * (i + 1) / threads);
  run(0, mel.frames / threads);
  workers.clear();  // joins

  const float floor = *std::max_element(mel.data.begin(), mel.data.end()) - 8.0f;
  for (float& v : mel.data) v = (std::max(v, floor) + 4.0f) / 4.0f;
  return mel;
}

}  // namespace hearth::audio
