// GGUF (llama.cpp): the same weights under llama.cpp's names and layout, as
// convert_hf_to_gguf.py writes them: 1-D tensors in F32, matrices in the
// chosen type (F16 where a row is not whole quantization blocks), q/k rows of
// the llama architecture permuted for its interleaved rotary pairs.
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "cli/mkmodel_weights.h"
#include "core/quantize.h"

namespace hearth::cli::mkmodel {

namespace fs = std::filesystem;

namespace {

// llama.cpp's architecture name: Mistral converts as llama.
std::string gguf_arch(const std::string& arch) { return arch == "mistral" ? "llama" : arch; }

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight".
std::string gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> kParts[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.", "attn_q."},
      {"self_attn.k_proj.", "attn_k."},
      {"self_attn.v_proj.", "attn_v."},
      {"self_attn.o_proj.", "attn_output."},
      {"self_attn.q_norm.", "attn_q_norm."},
      {"self_attn.k_norm.", "attn_k_norm."},
      {"mlp.gate_proj.", "ffn_gate."},
      {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."},
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string layers = "model.layers.";
  if (hf.rfind(layers, 0) == 0) {
    size_t dot = hf.find('.', layers.size());
    std::string rest = hf.substr(dot + 1);
    for (const auto& [from, to] : kParts)
      if (rest.rfind(from, 0) == 0)
        return "blk." + hf.substr(layers.size(), dot - layers.size()) + "." + to +
               rest.substr(std::strlen(from));
  }
  throw std::logic_error("no GGUF name for " + hf);
}

// Encodes rows x cols floats as `type` (cols a multiple of its block size).
void encode_rows(io::GgmlType type, const float* src, int64_t rows, int64_t cols, uint8_t* dst) {
  const int64_t row_bytes = cols / io::ggml_block_elems(type) * io::ggml_block_bytes(type);
  constexpr int64_t kRows = 64;
  parallel_for((rows + kRows - 1) / kRows, [&](int64_t b) {
    for (int64_t r = b * kRows; r < std::min(rows, (b + 1) * kRows); ++r) {
      const float* x = src + r * cols;
      uint8_t* out = dst + r * row_bytes;
      switch (type) {
        case io::GgmlType::F32: std::memcpy(out, x, size_t(cols) * 4); break;
        case io::GgmlType::F16: for (int64_t i = 0; i < cols; ++i) store(DType::F16, out, i, x[i]); break;
        case io::GgmlType::BF16: for (int64_t i = 0; i < cols; ++i) store(DType::BF16, out, i, x[i]); break;
        case io::GgmlType::Q8_0: io::quantize_q8_0(x, cols, out); break;
        case io::GgmlType::Q4_0: io::quantize_q4_0(x, cols, out); break;
      }
    }
  });
}

// llama3 rope scaling as a per-frequency divisor (convert_hf_to_gguf.py's
// rope_freqs tensor; llama.cpp divides each rotary frequency by it).
std::vector<float> llama3_rope_factors(const Spec& s) {
  const json& r = s.rope_scaling;
  double factor = r.value("factor", 8.0), low = r.value("low_freq_factor", 1.0),
         high = r.value("high_freq_factor", 4.0);
  double old_ctx = r.value("original_max_position_embeddings", 8192.0);
  double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (int64_t i = 0; i < s.head_dim; i += 2) {
    float freq = 1.0f / std::pow(float(s.rope_theta), float(i) / float(s.head_dim));
    double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(float(factor));
    } else {
      double smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(float(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

// Token list, scores and types (llama.cpp's llama_token_type) from a
// tokenizer.json whose vocab already has vocab_size entries.
void add_gguf_tokenizer(io::GgufWriter& w, const fs::path& tokenizer_json, int64_t vocab_size) {
  json tok;
  {
    std::ifstream in(tokenizer_json);
    if (!in) throw std::runtime_error("cannot read " + tokenizer_json.string());
    tok = json::parse(in);
  }
  const json& model = tok["model"];
  enum : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUnused = 5, kByte = 6 };
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(size_t(vocab_size), 0);
  auto set = [&](int64_t id, const std::string& piece) {
    if (id < 0 || id >= vocab_size)
      throw std::runtime_error(tokenizer_json.string() + ": token id " + std::to_string(id) +
                               " outside the vocabulary of " + std::to_string(vocab_size));
    tokens[size_t(id)] = piece;
    types[size_t(id)] = kNormal;
  };
  const bool spm = model.value("type", "") == "BPE" && model.value("byte_fallback", false);
  if (!model["vocab"].is_object())
    throw std::runtime_error("--gguf: " + tokenizer_json.string() +
                             " has no BPE vocab (model.vocab object)");
  for (const auto& [piece, id] : model["vocab"].items()) set(id.get<int64_t>(), piece);
  std::string unk = model.value("unk_token", json()).is_string() ? model["unk_token"].get<std::string>() : "";
  for (const auto& t : tok["added_tokens"]) {
    int64_t id = t["id"].get<int64_t>();
    std::string content = t["content"].get<std::string>();
    set(id, content);
    if (t.value("special", false)) types[size_t(id)] = content == unk ? kUnknown : kControl;
  }
  std::vector<float> scores(size_t(vocab_size), 0.0f);
  for (int64_t id = 0; id < vocab_size; ++id) {
    std::string& piece = tokens[size_t(id)];
    int32_t& type = types[size_t(id)];
    if (type == 0) {  // an id the tokenizer does not use
      piece = "[PAD" + std::to_string(id) + "]", type = kUnused;
    } else if (type == kNormal && piece.rfind("<unused_", 0) == 0) {
      type = kUnused;  // write_tokenizer's padding
    } else if (type == kNormal && spm && piece.size() == 6 && piece.rfind("<0x", 0) == 0 &&
               piece[5] == '>' && std::isxdigit(uint8_t(piece[3])) && std::isxdigit(uint8_t(piece[4]))) {
      type = kByte;
    }
    // SentencePiece merges the pair of highest score first; a BPE vocab lists
    // merge results in merge order, so -id keeps that order.
    if (type == kNormal) scores[size_t(id)] = -float(id);
  }
  if (spm) {
    w.add_string("tokenizer.ggml.model", "llama");
  } else {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "default");
  }
  w.add_array("tokenizer.ggml.tokens", tokens);
  if (spm) w.add_array("tokenizer.ggml.scores", scores);
  w.add_array("tokenizer.ggml.token_type", types);
  if (!spm) {
    std::vector<std::string> merges;
    for (const auto& m : model["merges"])
      merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m[0].get<std::string>() + " " + m[1].get<std::string>());
    w.add_array("tokenizer.ggml.merges", merges);
  }
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  auto unk_it = model["vocab"].find(unk);
  if (!unk.empty() && unk_it != model["vocab"].end())
    w.add_u32("tokenizer.ggml.unknown_token_id", unk_it->get<uint32_t>());
  w.add_bool("tokenizer.ggml.add_bos_token", spm);
  w.add_bool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace

GgufOptions parse_gguf(const std::string& v) {
  if (v == "f32") return {io::GgmlType::F32, io::GgufFileType::ALL_F32};
  if (v == "f16") return {io::GgmlType::F16, io::GgufFileType::MOSTLY_F16};
  if (v == "bf16") return {io::GgmlType::BF16, io::GgufFileType::MOSTLY_BF16};
  if (v == "q8_0") return {io::GgmlType::Q8_0, io::GgufFileType::MOSTLY_Q8_0};
  if (v == "q4_0") return {io::GgmlType::Q4_0, io::GgufFileType::MOSTLY_Q4_0};
  throw std::runtime_error("unknown --gguf '" + v + "' (expected f16, q8_0, q4_0, bf16 or f32)");
}

void write_gguf(const Spec& s, GgufOptions opt, uint64_t seed, const std::string& label,
                const fs::path& tokenizer_json, const fs::path& path) {
  io::GgufWriter w;
  const std::string a = gguf_arch(s.arch);
  w.add_string("general.architecture", a);
  w.add_string("general.name", label);
  w.add_u32("general.file_type", uint32_t(opt.file_type));
  w.add_u32("general.quantization_version", 2);
  w.add_u32(a + ".vocab_size", uint32_t(s.vocab));
  w.add_u32(a + ".context_length", uint32_t(s.max_positions));
  w.add_u32(a + ".embedding_length", uint32_t(s.hidden));
  w.add_u32(a + ".block_count", uint32_t(s.layers));
  w.add_u32(a + ".feed_forward_length", uint32_t(s.intermediate));
  w.add_u32(a + ".attention.head_count", uint32_t(s.heads));
  w.add_u32(a + ".attention.head_count_kv", uint32_t(s.kv_heads));
  w.add_u32(a + ".attention.key_length", uint32_t(s.head_dim));
  w.add_u32(a + ".attention.value_length", uint32_t(s.head_dim));
  w.add_u32(a + ".rope.dimension_count", uint32_t(s.head_dim));
  w.add_f32(a + ".rope.freq_base", float(s.rope_theta));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", float(s.rms_eps));
  add_gguf_tokenizer(w, tokenizer_json, s.vocab);

  if (s.rope_scaling.is_object() && s.rope_scaling.value("rope_type", "") == "llama3") {
    auto factors = llama3_rope_factors(s);
    w.add_tensor("rope_freqs.weight", io::GgmlType::F32, {int64_t(factors.size())},
                 [factors](uint8_t* dst) { std::memcpy(dst, factors.data(), factors.size() * 4); });
  } else if (!s.rope_scaling.is_null()) {
    throw std::runtime_error("--gguf: rope_scaling other than llama3 is not written");
  }

  const bool permute = a == "llama";
  for_each_weight(
      s,
      [&](const std::string& name, int64_t n, float mean, float std) {
        w.add_tensor(gguf_name(name), io::GgmlType::F32, {n}, [=](uint8_t* dst) {
          generate(seed, name, n, mean, std, [&](int64_t i, float v) { store(DType::F32, dst, i, v); });
        });
      },
      [&](const std::string& module, int64_t rows, int64_t cols, float std) {
        const std::string name = module + ".weight";
        io::GgmlType type = cols % io::ggml_block_elems(opt.type) ? io::GgmlType::F16 : opt.type;
        // convert_hf_to_gguf.py's LlamaModel.permute: within each head, rows
        // (half, j) -> (j, half), so rotary pairs become adjacent rows.
        int64_t heads = 0;
        if (permute && module.ends_with("q_proj")) heads = s.heads;
        if (permute && module.ends_with("k_proj")) heads = s.kv_heads;
        w.add_tensor(gguf_name(name), type, {rows, cols}, [=](uint8_t* dst) {
          std::vector<float> m(size_t(rows * cols));
          if (heads) {
            const int64_t D = rows / heads, half = D / 2;
            generate(seed, name, rows * cols, 0.0f, std, [&](int64_t i, float v) {
              int64_t r = i / cols, h = r / D, k = r % D;
              int64_t to = h * D + (k % half) * 2 + k / half;
              m[size_t(to * cols + i % cols)] = v;
            });
          } else {
            generate(seed, name, rows * cols, 0.0f, std, [&](int64_t i, float v) { m[size_t(i)] = v; });
          }
          encode_rows(type, m.data(), rows, cols, dst);
        });
      });
  w.write(path.string());
}

}  // namespace hearth::cli::mkmodel
