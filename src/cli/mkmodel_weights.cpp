#include "cli/mkmodel_weights.h"

#include <cstring>
#include <stdexcept>

namespace hearth::cli::mkmodel {

json llama3_rope_scaling() {
  return {{"factor", 32.0},
          {"high_freq_factor", 4.0},
          {"low_freq_factor", 1.0},
          {"original_max_position_embeddings", 8192},
          {"rope_type", "llama3"}};
}

Spec make_spec(const std::string& preset, std::string arch) {
  Spec s;
  if (preset == "tiny") {
    if (arch.empty()) throw std::runtime_error("--arch is required with --preset tiny");
    s.arch = arch;
    s.hidden = 64, s.intermediate = 128, s.heads = 4, s.kv_heads = 2, s.head_dim = 16;
    s.vocab = 512, s.max_positions = 512;
    // Unit-variance projections and a wide embedding: attention matters and
    // the logits spread over several units, so greedy tokens vary and
    // top-1/top-2 margins are well above kernel rounding.
    s.linear_std = 0, s.embed_std = 0.5f, s.bias_std = 0.1f, s.norm_noise = 0.1f;
    s.qk_gain = 1.5f, s.o_gain = 2, s.qk_norm_mean = 1.5f;
    if (arch == "llama") {
      s.layers = 2, s.tied = true, s.rms_eps = 1e-5, s.rope_theta = 500000.0;
      s.rope_scaling = llama3_rope_scaling();
    } else if (arch == "mistral") {
      s.layers = 3, s.tied = false, s.rms_eps = 1e-5, s.rope_theta = 1000000.0;
    } else if (arch == "qwen2") {
      s.layers = 2, s.tied = false, s.rms_eps = 1e-6, s.rope_theta = 1000000.0;
    } else if (arch == "qwen3") {
      // head_dim * heads (128) != hidden (64), as in the real Qwen3 models.
      s.layers = 3, s.tied = true, s.rms_eps = 1e-6, s.rope_theta = 1000000.0, s.head_dim = 32;
    }
  } else if (preset == "qwen3-0.6b") {
    s.arch = arch.empty() ? "qwen3" : arch;
    s.hidden = 1024, s.intermediate = 3072, s.layers = 28, s.heads = 16, s.kv_heads = 8;
    s.head_dim = 128, s.vocab = 151936, s.max_positions = 40960;
    s.rms_eps = 1e-6, s.rope_theta = 1000000.0, s.tied = true;
    s.linear_std = 0.02f, s.embed_std = 0.02f, s.bias_std = 0.02f, s.norm_noise = 0.02f;
  } else if (preset == "llama-3.2-1b") {
    s.arch = arch.empty() ? "llama" : arch;
    s.hidden = 2048, s.intermediate = 8192, s.layers = 16, s.heads = 32, s.kv_heads = 8;
    s.head_dim = 64, s.vocab = 128256, s.max_positions = 131072;
    s.rms_eps = 1e-5, s.rope_theta = 500000.0, s.tied = true;
    s.rope_scaling = llama3_rope_scaling();
    s.linear_std = 0.02f, s.embed_std = 0.02f, s.bias_std = 0.02f, s.norm_noise = 0.02f;
  } else {
    throw std::runtime_error("unknown preset '" + preset +
                             "' (expected tiny, qwen3-0.6b or llama-3.2-1b)");
  }
  if (s.arch != "llama" && s.arch != "mistral" && s.arch != "qwen2" && s.arch != "qwen3")
    throw std::runtime_error("unknown architecture '" + s.arch +
                             "' (expected llama, mistral, qwen2 or qwen3)");
  return s;
}

const char* class_name(const std::string& arch) {
  if (arch == "llama") return "LlamaForCausalLM";
  if (arch == "mistral") return "MistralForCausalLM";
  if (arch == "qwen2") return "Qwen2ForCausalLM";
  return "Qwen3ForCausalLM";
}

uint64_t name_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

float round_to(DType t, float v) {
  if (t == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
  if (t == DType::F16) return f16_to_f32(f32_to_f16(v));
  return v;
}

void store(DType t, uint8_t* dst, int64_t i, float v) {
  if (t == DType::F32) {
    std::memcpy(dst + 4 * i, &v, 4);
  } else {
    uint16_t h = t == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace hearth::cli::mkmodel
