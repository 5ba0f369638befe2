#include "model/rope.h"

#include <algorithm>
#include <cmath>

namespace hearth {

RopeTable make_rope_table(const io::ModelConfig& c) {
  const int dim = c.head_dim, half = dim / 2;
  const double base = c.rope_theta;
  const auto& s = c.rope_scaling;
  RopeTable t;
  t.inv_freq.resize(half);
  // HF computes the base frequencies in float32.
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) inv[i] = float(1.0 / std::pow(base, double(2 * i) / dim));

  if (s.type == "linear") {
    for (int i = 0; i < half; ++i) inv[i] = float(inv[i] / s.factor);
  } else if (s.type == "llama3") {
    const double old_len = s.original_max_position_embeddings;
    const double low_wavelen = old_len / s.low_freq_factor;
    const double high_wavelen = old_len / s.high_freq_factor;
    for (int i = 0; i < half; ++i) {
      double f = inv[i], wavelen = 2 * M_PI / f;
      double scaled = wavelen > low_wavelen ? f / s.factor : f;
      bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      if (medium) {
        double smooth =
            (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        scaled = (1 - smooth) * scaled / s.factor + smooth * scaled;
      }
      inv[i] = float(scaled);
    }
  } else if (s.type == "yarn") {
    auto get_mscale = [](double scale, double m) {
      return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
    };
    if (s.attention_factor) {
      t.attention_scaling = float(*s.attention_factor);
    } else if (s.mscale && s.mscale_all_dim) {
      t.attention_scaling =
          float(get_mscale(s.factor, *s.mscale) / get_mscale(s.factor, *s.mscale_all_dim));
    } else {
      t.attention_scaling = float(get_mscale(s.factor, 1.0));
    }
    const double max_pos = s.original_max_position_embeddings;
    auto correction_dim = [&](double rotations) {
      return dim * std::log(max_pos / (rotations * 2 * M_PI)) / (2 * std::log(base));
    };
    double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
    if (s.truncate) low = std::floor(low), high = std::ceil(high);
    low = std::max(0.0, low), high = std::min(double(dim - 1), high);
    if (low == high) high += 0.001;
    for (int i = 0; i < half; ++i) {
      double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      double extrapolation_factor = 1 - ramp;
      double pos_freq = std::pow(base, double(2 * i) / dim);
      double extrapolated = 1 / pos_freq, interpolated = 1 / (s.factor * pos_freq);
      inv[i] =
          float(interpolated * (1 - extrapolation_factor) + extrapolated * extrapolation_factor);
    }
  }
  t.inv_freq = inv;
  return t;
}

}  // namespace hearth
