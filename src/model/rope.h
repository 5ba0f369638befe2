// Rotary embedding frequencies for each rope_scaling type, as Hugging Face's
// ROPE_INIT_FUNCTIONS compute them.
#pragma once

#include <vector>

#include "io/model_config.h"

namespace hearth {

struct RopeTable {
  std::vector<float> inv_freq;  // head_dim / 2 entries
  float attention_scaling = 1.0f;
};

RopeTable make_rope_table(const io::ModelConfig& config);

}  // namespace hearth
