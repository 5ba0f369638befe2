#include "model/llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/bf16_matmul.h"
#include "core/int8_matmul.h"
#include "core/ops.h"

namespace hearth {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void expect_shape(const io::TensorInfo& t, std::vector<int64_t> want) {
  if (t.shape != want)
    throw std::runtime_error("tensor " + t.describe() +
                             " does not match config.json, which implies " + shape_str(want));
}

void expect_float(const io::TensorInfo& t) {
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw std::runtime_error("tensor " + t.describe() + " must be F32, F16 or BF16");
}

// Tensor names start with "model." unless the checkpoint was saved from the
// bare model (an embedding checkpoint).
std::string module_prefix(const io::Safetensors& w) {
  return !w.find("model.embed_tokens.weight") && w.find("embed_tokens.weight") ? "" : "model.";
}

// The activations' dtype follows the embedding table's (its scales', when quantized).
DType native_kv_type_of(const io::Safetensors& w) {
  const std::string embed = module_prefix(w) + "embed_tokens";
  const io::TensorInfo* scales = w.find(embed + ".scales");
  const DType stored = scales ? scales->dtype : w.get(embed + ".weight").dtype;
  return stored == DType::F32 ? DType::F32 : DType::BF16;
}

}  // namespace

CheckpointFootprint LlamaModel::footprint(const std::filesystem::path& dir) {
  CheckpointFootprint f;
  f.config = io::ModelConfig::load(dir);
  const io::Safetensors weights = io::Safetensors::open_dir(dir, io::Safetensors::Use::Metadata);
  f.weight_bytes = weights.total_bytes();
  f.native_kv_type = native_kv_type_of(weights);
  return f;
}

std::unique_ptr<LlamaModel> LlamaModel::load(const std::filesystem::path& dir) {
  std::unique_ptr<LlamaModel> m(new LlamaModel());
  m->dir_ = dir;
  m->config_ = io::ModelConfig::load(dir);
  m->weights_ = io::Safetensors::open_dir(dir);
  m->rope_ = make_rope_table(m->config_);
  m->load_weights();
  // A tensor the config does not call for (biases with attention_bias
  // false, a layer past num_hidden_layers) would be a silent difference
  // from the checkpoint's own model: said, as transformers says it.
  if (const std::vector<std::string> unread = m->unread_tensors(); !unread.empty()) {
    std::string names;
    for (size_t i = 0; i < unread.size() && i < 3; ++i) names += (i ? ", " : "") + unread[i];
    std::fprintf(stderr, "hearth: warning: %zu tensors of %s are not used by the model config.json describes (%s%s)\n",
                 unread.size(), dir.string().c_str(), names.c_str(), unread.size() > 3 ? ", ..." : "");
  }
  return m;
}

std::vector<std::string> LlamaModel::unread_tensors() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : weights_.tensors()) {
    if (read_.count(&info)) continue;
    // Skipped by every loader: rotary tables (recomputed), a tied model's
    // stored head (the embedding serves).
    if (name.ends_with("rotary_emb.inv_freq")) continue;
    if (config_.tie_word_embeddings && name.starts_with("lm_head.")) continue;
    out.push_back(name);
  }
  return out;
}

Matrix LlamaModel::load_matrix(const std::string& module, int64_t rows, int64_t cols) {
  const io::TensorInfo& w = weights_.get(module + ".weight");
  read_.insert(&w);
  Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.data = w.data;
  const io::TensorInfo* scales = weights_.find(module + ".scales");
  if (!scales) {
    expect_float(w);
    expect_shape(w, {rows, cols});
    m.dtype = w.dtype;
    return m;
  }
  // MLX decides "quantized" by the presence of .scales; config.json says how.
  if (!config_.quantization && !config_.quant_overrides.count(module))
    throw std::runtime_error("tensor " + scales->describe() +
                             " marks a quantized layer, but config.json has no \"quantization\"");
  io::QuantSpec spec = config_.quant_for(module);
  if (spec.bits == 0)
    throw std::runtime_error("config.json says " + module + " is not quantized, but " +
                             scales->describe() + " exists");
  if (cols % spec.group_size != 0)
    throw std::runtime_error(module + ": input size " + std::to_string(cols) +
                             " is not a multiple of the group size " +
                             std::to_string(spec.group_size));
  const io::TensorInfo& biases = weights_.get(module + ".biases");
  read_.insert({scales, &biases});
  if (w.dtype != DType::U32)
    throw std::runtime_error("tensor " + w.describe() + " must be U32 (packed codes)");
  expect_shape(w, {rows, cols * spec.bits / 32});
  expect_float(*scales);
  expect_shape(*scales, {rows, cols / spec.group_size});
  expect_shape(biases, {rows, cols / spec.group_size});
  if (biases.dtype != scales->dtype)
    throw std::runtime_error("tensor " + biases.describe() + " must have the dtype of its scales");
  m.dtype = DType::U32;
  m.bits = spec.bits;
  m.group_size = spec.group_size;
  m.scale_dtype = scales->dtype;
  m.scales = scales->data;
  m.biases = biases.data;
  return m;
}

std::vector<float> LlamaModel::load_vector(const std::string& name, int64_t n) {
  const io::TensorInfo& t = weights_.get(name);
  read_.insert(&t);
  expect_float(t);
  expect_shape(t, {n});
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = load_as_f32(t.dtype, t.data, i);
  return v;
}

void LlamaModel::load_weights() {
  const auto& c = config_;
  const int64_t hidden = c.hidden_size, q_dim = int64_t(c.num_heads) * c.head_dim,
                kv_dim = int64_t(c.num_kv_heads) * c.head_dim, inter = c.intermediate_size;
  prefix_ = module_prefix(weights_);
  embed_ = load_matrix(prefix_ + "embed_tokens", c.vocab_size, hidden);
  if (c.tie_word_embeddings)
    lm_head_ = embed_;
  else if (prefix_.empty() && !weights_.find("lm_head.weight"))
    lm_head_.rows = 0;  // an embedding checkpoint: hidden states only
  else
    lm_head_ = load_matrix("lm_head", c.vocab_size, hidden);
  final_norm_ = load_vector(prefix_ + "norm.weight", hidden);
  layers_.resize(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = prefix_ + "layers." + std::to_string(i) + ".";
    Layer& L = layers_[i];
    L.input_norm = load_vector(p + "input_layernorm.weight", hidden);
    L.post_norm = load_vector(p + "post_attention_layernorm.weight", hidden);
    L.q = load_matrix(p + "self_attn.q_proj", q_dim, hidden);
    L.k = load_matrix(p + "self_attn.k_proj", kv_dim, hidden);
    L.v = load_matrix(p + "self_attn.v_proj", kv_dim, hidden);
    L.o = load_matrix(p + "self_attn.o_proj", hidden, q_dim);
    if (c.attention_bias) {
      L.q_bias = load_vector(p + "self_attn.q_proj.bias", q_dim);
      L.k_bias = load_vector(p + "self_attn.k_proj.bias", kv_dim);
      L.v_bias = load_vector(p + "self_attn.v_proj.bias", kv_dim);
    }
    if (c.output_bias) L.o_bias = load_vector(p + "self_attn.o_proj.bias", hidden);
    if (c.mlp_bias) {
      L.gate_bias = load_vector(p + "mlp.gate_proj.bias", inter);
      L.up_bias = load_vector(p + "mlp.up_proj.bias", inter);
      L.down_bias = load_vector(p + "mlp.down_proj.bias", hidden);
    }
    if (c.qk_norm) {
      L.q_norm = load_vector(p + "self_attn.q_norm.weight", c.head_dim);
      L.k_norm = load_vector(p + "self_attn.k_norm.weight", c.head_dim);
    }
    L.gate = load_matrix(p + "mlp.gate_proj", inter, hidden);
    L.up = load_matrix(p + "mlp.up_proj", inter, hidden);
    L.down = load_matrix(p + "mlp.down_proj", hidden, inter);
  }
  // Rearrange weights once for the int8 / BF16 dot-product kernels where they apply.
  // The embedding keeps only its stored form: lookups read single rows.
  ThreadPool pool(ThreadPool::default_threads());
  std::vector<const void*> reads_stored;  // tensors an unpacked matrix reads
  auto pack = [&](Matrix& m) {
    if (!pack_for_matmul(pool, m)) reads_stored.insert(reads_stored.end(), {m.data, m.scales, m.biases});
  };
  // Matrices that read the same input are stacked: one kernel call and one
  // pass over the activations instead of two or three.
  auto stack = [&](std::initializer_list<const Matrix*> parts) {
    Matrix m;
    m.rows = 0;
    for (const Matrix* p : parts) m.rows += p->rows;
    m.cols = (*parts.begin())->cols;
    m.packed = int8_pack(std::span(parts.begin(), parts.size()), pool);
    if (!m.packed) m.packed_bf16 = bf16_pack(std::span(parts.begin(), parts.size()), pool);
    if (!m.packed && !m.packed_bf16) m.rows = 0;
    return m;
  };
  if (has_output_head()) pack(lm_head_);
  for (Layer& L : layers_) {
    L.qkv = stack({&L.q, &L.k, &L.v});
    L.gate_up = stack({&L.gate, &L.up});
    if (!L.qkv.rows)
      for (Matrix* m : {&L.q, &L.k, &L.v}) pack(*m);
    if (!L.gate_up.rows)
      for (Matrix* m : {&L.gate, &L.up}) pack(*m);
    pack(L.o);
    pack(L.down);
  }
  // The kernels read the packed copies, and the norms were copied: only
  // matrices left unpacked still read their whole mapped tensor every step.
  // The rest of the file's pages, all read once to pack, would stay
  // resident beside the copies: twice the weights in the process's memory.
  // (The embedding's rows come back from the file as tokens are looked up.)
  weights_.release_except(reads_stored);
}

KvCacheShape kv_shape(const io::ModelConfig& c, DType dtype, int block_tokens) {
  return KvCacheShape{c.num_layers, c.num_kv_heads, c.head_dim, block_tokens, dtype};
}

DType LlamaModel::native_kv_type() const {
  return native_kv_type_of(weights_);
}

size_t LlamaModel::weight_bytes() const {
  return weights_.total_bytes();
}

size_t LlamaModel::bytes_per_decode_token() const {
  size_t n = has_output_head() ? lm_head_.bytes() : 0;
  for (const Layer& L : layers_) {
    for (const Matrix* m : {&L.o, &L.down}) n += m->bytes();
    if (L.qkv.rows)
      n += L.qkv.bytes();
    else
      for (const Matrix* m : {&L.q, &L.k, &L.v}) n += m->bytes();
    if (L.gate_up.rows)
      n += L.gate_up.bytes();
    else
      for (const Matrix* m : {&L.gate, &L.up}) n += m->bytes();
  }
  return n;
}

void LlamaModel::forward(ThreadPool& pool, KvCache& kv, std::span<const BatchRow> rows,
                         std::vector<float>& logits, std::vector<float>* hidden_out) {
  const auto& c = config_;
  const int64_t hidden = c.hidden_size, hd = c.head_dim, q_dim = int64_t(c.num_heads) * hd,
                kv_dim = int64_t(c.num_kv_heads) * hd, inter = c.intermediate_size;
  const int group = c.num_heads / c.num_kv_heads;
  const float attn_scale = 1.0f / std::sqrt(float(hd));

  // Flatten the ragged batch: token i belongs to row tok_row[i] at tok_pos[i].
  std::vector<int>& tok_row = tok_row_;
  std::vector<int64_t>& tok_pos = tok_pos_;
  tok_row.clear();
  tok_pos.clear();
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].hidden && !has_output_head())
      throw std::logic_error("this checkpoint has no output head (lm_head): it gives embeddings, not tokens");
    int64_t start = kv.length(rows[r].seq);
    if (kv.capacity(rows[r].seq) < start + int64_t(rows[r].tokens.size()))
      throw std::logic_error("forward: the caller did not reserve KV blocks for the new tokens");
    for (size_t i = 0; i < rows[r].tokens.size(); ++i) {
      tok_row.push_back(int(r));
      tok_pos.push_back(start + int64_t(i));
    }
  }
  const int64_t T = int64_t(tok_row.size());
  if (T == 0) return;
  x_.resize(T * hidden);
  h_.resize(T * hidden);
  attn_.resize(T * q_dim);
  gate_.resize(T * inter);

  int64_t t = 0;
  for (const BatchRow& row : rows)
    for (int32_t id : row.tokens) {
      if (id < 0 || id >= c.vocab_size)
        throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary");
      matrix_row(embed_, id, x_.data() + t++ * hidden);
    }

  rotations_.resize(T * hd);
  pool.parallel_for(T, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      rope_rotation(tok_pos[i], rope_.inv_freq.data(), int(hd), rope_.attention_scaling,
                    &rotations_[i * hd]);
  });

  int64_t max_ctx = 0;
  for (int64_t p : tok_pos) max_ctx = std::max(max_ctx, p + 1);
  max_ctx = KvCache::blocks_for_tokens(kv.shape(), max_ctx) * kv.shape().block_tokens;
  // Attention tasks: one per (block of consecutive tokens of one sequence,
  // kv head), whose query rows (the tokens' heads of the group) share every
  // K/V load; a block holds up to 8 rows, what the kernel keeps in registers.
  const int block_tokens = std::max(1, 8 / group);
  std::vector<std::pair<int64_t, int64_t>>& blocks = attn_blocks_;  // [first token, end)
  blocks.clear();
  for (int64_t i = 0; i < T;) {
    int64_t e = i + 1;
    while (e < T && e - i < block_tokens && tok_row[e] == tok_row[i]) ++e;
    blocks.push_back({i, e});
    i = e;
  }
  const size_t rows_per_task = size_t(block_tokens * group);
  attn_scratch_.resize(size_t(pool.size()));
  for (auto& s : attn_scratch_) s.resize(size_t(max_ctx) * rows_per_task);
  attn_rows_.resize(size_t(pool.size()));
  for (auto& r : attn_rows_) r.resize(rows_per_task);

  for (int l = 0; l < c.num_layers; ++l) {
    const Layer& L = layers_[l];
    for (int64_t i = 0; i < T; ++i)
      rmsnorm(&x_[i * hidden], L.input_norm.data(), hidden, float(c.rms_norm_eps), &h_[i * hidden]);
    // Token i's q, k and v: rows of the fused projection's output (taken in
    // place), or of the three projections'.
    float *q_base, *k_base, *v_base;
    int64_t q_stride, kv_stride;
    if (L.qkv.rows) {
      fused_.resize(size_t(T * L.qkv.rows));
      matmul(pool, L.qkv, h_.data(), T, fused_.data());
      q_base = fused_.data(), k_base = q_base + q_dim, v_base = k_base + kv_dim;
      q_stride = kv_stride = L.qkv.rows;
    } else {
      q_.resize(T * q_dim);
      k_.resize(T * kv_dim);
      v_.resize(T * kv_dim);
      matmul(pool, L.q, h_.data(), T, q_.data());
      matmul(pool, L.k, h_.data(), T, k_.data());
      matmul(pool, L.v, h_.data(), T, v_.data());
      q_base = q_.data(), k_base = k_.data(), v_base = v_.data();
      q_stride = q_dim, kv_stride = kv_dim;
    }
    // Per token, on the pool (tokens write distinct KV slots): a serial loop
    // here would leave the other threads idle for a tenth of a batched step.
    pool.run(int(T), [&](int task, int) {
      const int64_t i = task;
      float *q = q_base + i * q_stride, *k = k_base + i * kv_stride, *v = v_base + i * kv_stride;
      if (c.attention_bias)
        for (int64_t j = 0; j < q_dim; ++j) q[j] += L.q_bias[j];
      if (c.attention_bias)
        for (int64_t j = 0; j < kv_dim; ++j) k[j] += L.k_bias[j], v[j] += L.v_bias[j];
      if (c.qk_norm) {
        for (int h = 0; h < c.num_heads; ++h)
          rmsnorm(q + h * hd, L.q_norm.data(), hd, float(c.rms_norm_eps), q + h * hd);
        for (int h = 0; h < c.num_kv_heads; ++h)
          rmsnorm(k + h * hd, L.k_norm.data(), hd, float(c.rms_norm_eps), k + h * hd);
      }
      rope(q, c.num_heads, int(hd), &rotations_[i * hd]);
      rope(k, c.num_kv_heads, int(hd), &rotations_[i * hd]);
      kv.store(l, rows[tok_row[i]].seq, tok_pos[i], k, v);
    });
    // Every new token attends to its own sequence's cache up to its position
    // (within the sliding window, where the layer has one).
    const int64_t window =
        c.sliding_window && l >= c.sliding_window_from_layer ? *c.sliding_window : INT64_MAX;
    pool.run(int(blocks.size()) * c.num_kv_heads, [&](int task, int thread) {
      const auto [begin, end] = blocks[task / c.num_kv_heads];
      const int kvh = task % c.num_kv_heads;
      std::vector<AttentionRow>& qrows = attn_rows_[thread];
      size_t n = 0;
      for (int64_t i = begin; i < end; ++i) {
        const int64_t n_ctx = tok_pos[i] + 1, first = std::max<int64_t>(0, n_ctx - window);
        for (int g = 0; g < group; ++g) {
          const int64_t head = (int64_t(kvh) * group + g) * hd;
          qrows[n++] = AttentionRow{q_base + i * q_stride + head, &attn_[i * q_dim + head], first, n_ctx};
        }
      }
      attend(std::span(qrows.data(), n), kv.view(l, rows[tok_row[begin]].seq), kvh, attn_scale,
             attn_scratch_[thread].data());
    });
    // The residual stream takes a layer's output (h_), and its bias if any.
    auto add_to_residual = [&](const std::vector<float>& bias) {
      for (int64_t j = 0; j < T * hidden; ++j) x_[j] += h_[j];
      if (!bias.empty())
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j < hidden; ++j) x_[i * hidden + j] += bias[j];
    };
    matmul(pool, L.o, attn_.data(), T, h_.data());
    add_to_residual(L.o_bias);

    for (int64_t i = 0; i < T; ++i)
      rmsnorm(&x_[i * hidden], L.post_norm.data(), hidden, float(c.rms_norm_eps), &h_[i * hidden]);
    auto activate = [&](const float* gate, const float* up, int64_t n, float* out) {
      if (c.hidden_act == "silu")
        silu_mul(gate, up, n, out);
      else
        gelu_tanh_mul(gate, up, n, out);
    };
    // Token i's gate and up rows, then the activation on the pool, a row per token.
    float *gate_base, *up_base;
    int64_t gate_stride;
    if (L.gate_up.rows) {
      fused_.resize(size_t(T * 2 * inter));
      matmul(pool, L.gate_up, h_.data(), T, fused_.data());
      gate_base = fused_.data(), up_base = gate_base + inter, gate_stride = 2 * inter;
    } else {
      up_.resize(T * inter);
      matmul(pool, L.gate, h_.data(), T, gate_.data());
      matmul(pool, L.up, h_.data(), T, up_.data());
      gate_base = gate_.data(), up_base = up_.data(), gate_stride = inter;
    }
    pool.parallel_for(T, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        float *gate = gate_base + i * gate_stride, *up = up_base + i * gate_stride;
        if (!L.gate_bias.empty())
          for (int64_t j = 0; j < inter; ++j) gate[j] += L.gate_bias[j], up[j] += L.up_bias[j];
        activate(gate, up, inter, &gate_[i * inter]);
      }
    });
    matmul(pool, L.down, gate_.data(), T, h_.data());
    add_to_residual(L.down_bias);
  }

  for (const BatchRow& row : rows)
    kv.set_length(row.seq, kv.length(row.seq) + int64_t(row.tokens.size()));

  // Final norm where an output is wanted (the rows that want logits first,
  // then those that want hidden states); the output head only for logits.
  std::vector<int64_t>& wanted = wanted_;
  wanted.clear();
  size_t n_logits = 0;
  for (bool hidden_rows : {false, true}) {
    t = 0;
    for (const BatchRow& row : rows) {
      const int64_t n = int64_t(row.tokens.size());
      if (row.hidden == hidden_rows)
        for (int64_t i = row.all_positions ? 0 : n - 1; i < n; ++i) wanted.push_back(t + i);
      t += n;
    }
    if (!hidden_rows) n_logits = wanted.size();
  }
  const size_t n_hidden = wanted.size() - n_logits;
  if (n_hidden && !hidden_out) throw std::logic_error("forward: a row wants hidden states, but there is no output for them");
  rows_for_logits_.resize(wanted.size() * hidden);
  for (size_t w = 0; w < wanted.size(); ++w)
    rmsnorm(&x_[wanted[w] * hidden], final_norm_.data(), hidden, float(c.rms_norm_eps),
            &rows_for_logits_[w * hidden]);
  if (n_hidden)
    hidden_out->assign(rows_for_logits_.begin() + ptrdiff_t(n_logits * hidden), rows_for_logits_.end());
  logits.resize(n_logits * size_t(c.vocab_size));
  if (n_logits) matmul(pool, lm_head_, rows_for_logits_.data(), int64_t(n_logits), logits.data());
}

}  // namespace hearth
