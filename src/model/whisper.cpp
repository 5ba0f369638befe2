#include "model/whisper.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "core/ops.h"

namespace hearth {

namespace {

constexpr float kLayerNormEps = 1e-5f;  // torch.nn.LayerNorm's default, as Whisper uses it

void layer_norm(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t n,
                float* out) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= double(n);
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const float inv = float(1.0 / std::sqrt(var / double(n) + kLayerNormEps)), m = float(mean);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - m) * inv * w[i] + b[i];
}

// GELU as torch.nn.functional.gelu computes it by default (erf, not tanh).
void gelu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * float(M_SQRT1_2)));
}

void add_bias(float* y, const std::vector<float>& b, int64_t n) {
  if (b.empty()) return;
  const int64_t cols = int64_t(b.size());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < cols; ++c) y[t * cols + c] += b[size_t(c)];
}

Matrix f32_matrix(const float* data, int64_t rows, int64_t cols) {
  Matrix m;
  m.rows = rows, m.cols = cols, m.dtype = DType::F32, m.data = data;
  return m;
}

}  // namespace

std::vector<float> whisper_sinusoids(int64_t length, int64_t channels) {
  const int64_t half = channels / 2;
  const double increment = std::log(10000.0) / double(half - 1);
  std::vector<float> out(size_t(length * channels));
  for (int64_t t = 0; t < length; ++t)
    for (int64_t j = 0; j < half; ++j) {
      const double angle = double(t) * std::exp(-increment * double(j));
      out[size_t(t * channels + j)] = float(std::sin(angle));
      out[size_t(t * channels + half + j)] = float(std::cos(angle));
    }
  return out;
}

std::unique_ptr<WhisperModel> WhisperModel::load(const std::filesystem::path& dir) {
  std::unique_ptr<WhisperModel> m(new WhisperModel());
  m->dir_ = dir;
  m->config_ = WhisperConfig::load(dir);
  m->weights_ = io::Safetensors::open_dir(dir);
  m->load_weights();
  return m;
}

std::string whisper_mlx_name(const std::string& hf_name) {
  // Hugging Face's names -> openai-whisper's, as mlx-examples keeps them.
  static const std::pair<const char*, const char*> kRenames[] = {
      {"model.encoder.layers.", "encoder.blocks."},
      {"model.decoder.layers.", "decoder.blocks."},
      {"model.encoder.layer_norm", "encoder.ln_post"},
      {"model.encoder.", "encoder."},
      {"model.decoder.embed_tokens", "decoder.token_embedding"},
      {"model.decoder.embed_positions.weight", "decoder.positional_embedding"},
      {"model.decoder.layer_norm", "decoder.ln"},
      {".self_attn_layer_norm", ".attn_ln"},
      {".encoder_attn_layer_norm", ".cross_attn_ln"},
      {".final_layer_norm", ".mlp_ln"},
      {".self_attn.", ".attn."},
      {".encoder_attn.", ".cross_attn."},
      {".q_proj", ".query"},
      {".k_proj", ".key"},
      {".v_proj", ".value"},
      {".out_proj", ".out"},
      {".fc1", ".mlp1"},
      {".fc2", ".mlp2"},
  };
  std::string name = hf_name;
  for (const auto& [from, to] : kRenames)
    if (const size_t at = name.find(from); at != std::string::npos)
      name.replace(at, std::strlen(from), to);
  return name;
}

std::string WhisperModel::stored(const std::string& hf_name) const {
  return config_.mlx_layout ? whisper_mlx_name(hf_name) : hf_name;
}

Matrix WhisperModel::load_dense(const std::string& name, int64_t rows, int64_t cols) const {
  const io::TensorInfo& t = weights_.get(stored(name));
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw std::runtime_error("tensor " + t.describe() + " must be F32, F16 or BF16");
  if (t.numel() != rows * cols || t.shape.empty() || t.shape[0] != rows)
    throw std::runtime_error("tensor " + t.describe() +
                             " does not match config.json, which implies [" + std::to_string(rows) +
                             ", " + std::to_string(cols) + "]");
  Matrix m;
  m.rows = rows, m.cols = cols, m.dtype = t.dtype, m.data = t.data;
  return m;
}

Matrix WhisperModel::load_matrix(const std::string& module, int64_t rows, int64_t cols) const {
  const std::string name = stored(module);
  const io::TensorInfo* scales = weights_.find(name + ".scales");
  if (!scales) return load_dense(module + ".weight", rows, cols);
  // MLX marks a quantized module by its scales; config.json says how.
  const auto over = config_.quant_overrides.find(name);
  const io::QuantSpec spec = over != config_.quant_overrides.end()
                                 ? over->second
                                 : config_.quantization.value_or(io::QuantSpec{});
  if (spec.bits == 0)
    throw std::runtime_error("tensor " + scales->describe() +
                             " marks a quantized module, but config.json does not quantize it");
  if (cols % spec.group_size != 0)
    throw std::runtime_error(name + ": input size " + std::to_string(cols) +
                             " is not a multiple of the group size " +
                             std::to_string(spec.group_size));
  const io::TensorInfo& w = weights_.get(name + ".weight");
  const io::TensorInfo& biases = weights_.get(name + ".biases");
  auto expect = [](const io::TensorInfo& t, std::vector<int64_t> shape) {
    if (t.shape != shape)
      throw std::runtime_error("tensor " + t.describe() +
                               " does not have the shape config.json implies");
  };
  if (w.dtype != DType::U32)
    throw std::runtime_error("tensor " + w.describe() + " must be U32 (packed codes)");
  expect(w, {rows, cols * spec.bits / 32});
  expect(*scales, {rows, cols / spec.group_size});
  expect(biases, {rows, cols / spec.group_size});
  if (biases.dtype != scales->dtype ||
      (scales->dtype != DType::F32 && scales->dtype != DType::F16 && scales->dtype != DType::BF16))
    throw std::runtime_error("tensor " + scales->describe() +
                             ": scales and biases must be one float type");
  Matrix m;
  m.rows = rows, m.cols = cols, m.dtype = DType::U32, m.data = w.data;
  m.bits = spec.bits, m.group_size = spec.group_size;
  m.scale_dtype = scales->dtype, m.scales = scales->data, m.biases = biases.data;
  return m;
}

std::vector<float> WhisperModel::load_vector(const std::string& name, int64_t rows,
                                             int64_t cols) const {
  const Matrix m = load_dense(name, rows, cols);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) values[size_t(i)] = load_as_f32(m.dtype, m.data, i);
  return values;
}

WhisperModel::Linear WhisperModel::load_linear(const std::string& module, int64_t rows,
                                               int64_t cols, bool bias) const {
  Linear l;
  l.w = load_matrix(module, rows, cols);
  if (bias) l.b = load_vector(module + ".bias", rows);
  return l;
}

WhisperModel::Norm WhisperModel::load_norm(const std::string& module) const {
  return Norm{load_vector(module + ".weight", config_.d_model),
              load_vector(module + ".bias", config_.d_model)};
}

WhisperModel::Attention WhisperModel::load_attention(const std::string& module) const {
  const int64_t d = config_.d_model;
  return Attention{load_linear(module + ".q_proj", d, d, true),
                   load_linear(module + ".k_proj", d, d, false),  // Whisper's keys have no bias
                   load_linear(module + ".v_proj", d, d, true),
                   load_linear(module + ".out_proj", d, d, true)};
}

void WhisperModel::load_weights() {
  const auto& c = config_;
  const int64_t d = c.d_model;
  // The encoder unfolds its windows in the order of the config's layout
  // (kernel-major for MLX): a convolution stored in the other one has the
  // same size, and must not pass.
  for (const auto& [module, in] : {std::pair{"model.encoder.conv1", int64_t(c.n_mels)}, {"model.encoder.conv2", d}}) {
    const io::TensorInfo& t = weights_.get(stored(std::string(module) + ".weight"));
    const std::vector<int64_t> want = c.mlx_layout ? std::vector<int64_t>{d, 3, in} : std::vector<int64_t>{d, in, 3};
    if (t.shape != want)
      throw std::runtime_error("tensor " + t.describe() + " is not a convolution of the " +
                               (c.mlx_layout ? "MLX layout [out, kernel, in]" : "Hugging Face layout [out, in, kernel]") +
                               " that config.json implies: [" + std::to_string(want[0]) + ", " +
                               std::to_string(want[1]) + ", " + std::to_string(want[2]) + "]");
  }
  conv1_ = load_linear("model.encoder.conv1", d, int64_t(c.n_mels) * 3, true);
  conv2_ = load_linear("model.encoder.conv2", d, d * 3, true);
  if (c.mlx_layout) {  // computed, as mlx-examples does (not a parameter there)
    encoder_positions_ = whisper_sinusoids(c.audio_ctx, d);
  } else {
    encoder_positions_ = load_vector("model.encoder.embed_positions.weight", c.audio_ctx, d);
  }
  for (int i = 0; i < c.encoder_layers; ++i) {
    const std::string p = "model.encoder.layers." + std::to_string(i) + ".";
    encoder_.push_back(EncoderLayer{
        load_norm(p + "self_attn_layer_norm"), load_norm(p + "final_layer_norm"),
        load_attention(p + "self_attn"), load_linear(p + "fc1", c.encoder_ffn, d, true),
        load_linear(p + "fc2", d, c.encoder_ffn, true)});
  }
  encoder_norm_ = load_norm("model.encoder.layer_norm");
  token_embedding_ = load_matrix("model.decoder.embed_tokens", c.vocab_size, d);
  decoder_positions_ = load_vector("model.decoder.embed_positions.weight", c.text_ctx, d);
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string p = "model.decoder.layers." + std::to_string(i) + ".";
    decoder_.push_back(DecoderLayer{
        load_norm(p + "self_attn_layer_norm"), load_norm(p + "encoder_attn_layer_norm"),
        load_norm(p + "final_layer_norm"), load_attention(p + "self_attn"),
        load_attention(p + "encoder_attn"), load_linear(p + "fc1", c.decoder_ffn, d, true),
        load_linear(p + "fc2", d, c.decoder_ffn, true)});
  }
  decoder_norm_ = load_norm("model.decoder.layer_norm");
  // proj_out is tied to the token embedding; checkpoints that store it get it read.
  output_head_ = weights_.find("proj_out.weight") ? load_matrix("proj_out", c.vocab_size, d)
                                                  : token_embedding_;

  // The same int8 / BF16 rearrangements as the Llama family, where they apply.
  ThreadPool pool(ThreadPool::default_threads());
  std::vector<const void*> reads_stored;  // tensors an unpacked matrix reads
  auto pack = [&](Matrix& m) {
    if (!pack_for_matmul(pool, m)) reads_stored.insert(reads_stored.end(), {m.data, m.scales, m.biases});
  };
  auto pack_attention = [&](Attention& a) {
    for (Linear* l : {&a.q, &a.k, &a.v, &a.out}) pack(l->w);
  };
  pack(output_head_);
  for (EncoderLayer& L : encoder_) {
    pack_attention(L.attn);
    pack(L.fc1.w), pack(L.fc2.w);
  }
  for (DecoderLayer& L : decoder_) {
    pack_attention(L.self_attn), pack_attention(L.cross_attn);
    pack(L.fc1.w), pack(L.fc2.w);
  }
  // As in LlamaModel: the pages of what was packed would stay resident
  // beside the copies; whatever else is read comes back from the file. The
  // convolutions are matrices read whole at every encode, never packed.
  for (const Linear* conv : {&conv1_, &conv2_})
    reads_stored.insert(reads_stored.end(), {conv->w.data, conv->w.scales, conv->w.biases});
  weights_.release_except(reads_stored);
}

void WhisperModel::linear(ThreadPool& pool, const Linear& l, const float* x, int64_t n, float* y) {
  matmul(pool, l.w, x, n, y);
  add_bias(y, l.b, n);
}

// x += fc2(gelu(fc1(norm(x)))) for n rows; h_ holds norm(x).
void WhisperModel::mlp(ThreadPool& pool, const Linear& fc1, const Linear& fc2, int64_t n, int ffn) {
  const int64_t d = config_.d_model;
  ffn_.resize(size_t(n * ffn));
  linear(pool, fc1, h_.data(), n, ffn_.data());
  gelu(ffn_.data(), n * ffn);
  linear(pool, fc2, ffn_.data(), n, h_.data());
  for (int64_t i = 0; i < n * d; ++i) x_[size_t(i)] += h_[size_t(i)];
}

void WhisperModel::attend_heads(
    ThreadPool& pool, int64_t n, int64_t n_keys, int heads,
    const std::function<std::pair<const float*, const float*>(int)>& head_kv,
    const std::function<void(int, std::span<const float>)>& scores_seen) {
  const int64_t d = config_.d_model, hd = d / heads;
  const float scale = 1.0f / std::sqrt(float(hd));
  head_q_.resize(size_t(n * hd)), head_out_.resize(size_t(n * hd));
  scores_.resize(std::max(scores_.size(), size_t(n * n_keys)));
  for (int h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hd; ++j)
        head_q_[size_t(i * hd + j)] = q_[size_t(i * d + h * hd + j)] * scale;
    const auto [keys, values_t] = head_kv(h);
    matmul(pool, f32_matrix(keys, n_keys, hd), head_q_.data(), n, scores_.data());
    if (scores_seen) scores_seen(h, std::span<const float>(scores_.data(), size_t(n * n_keys)));
    pool.parallel_for(n, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) softmax(&scores_[size_t(i * n_keys)], n_keys);
    });
    matmul(pool, f32_matrix(values_t, hd, n_keys), scores_.data(), n, head_out_.data());
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(&head_out_[size_t(i * hd)], hd, &attn_[size_t(i * d + h * hd)]);
  }
}

void WhisperModel::encode(ThreadPool& pool, const float* mel, std::vector<float>& features) {
  const auto& c = config_;
  const int64_t d = c.d_model, frames = c.mel_frames(), T = c.audio_ctx, mels = c.n_mels;
  // conv1 (kernel 3, padding 1) as a matmul over unfolded windows:
  // unfolded[t][ch * 3 + k] = mel[ch][t + k - 1], the weight's [d][ch][k] order
  // (Hugging Face's; MLX stores [d][k][ch]: unfolded[t][k * channels + ch]).
  const bool kernel_major = c.mlx_layout;
  auto unfold_at = [kernel_major](int64_t channels, int64_t ch, int64_t k) {
    return kernel_major ? k * channels + ch : ch * 3 + k;
  };
  unfolded_.assign(size_t(frames * mels * 3), 0.0f);
  pool.parallel_for(frames, 64, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      for (int64_t ch = 0; ch < mels; ++ch)
        for (int64_t k = 0; k < 3; ++k) {
          const int64_t src = t + k - 1;
          if (src >= 0 && src < frames)
            unfolded_[size_t(t * mels * 3 + unfold_at(mels, ch, k))] = mel[ch * frames + src];
        }
  });
  h_.resize(size_t(frames * d));
  linear(pool, conv1_, unfolded_.data(), frames, h_.data());
  gelu(h_.data(), frames * d);
  // conv2 (kernel 3, stride 2, padding 1): the same over h[2t + k - 1][ch].
  unfolded_.assign(size_t(T * d * 3), 0.0f);
  pool.parallel_for(T, 64, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      for (int64_t k = 0; k < 3; ++k) {
        const int64_t src = 2 * t + k - 1;
        if (src < 0 || src >= frames) continue;
        for (int64_t ch = 0; ch < d; ++ch)
          unfolded_[size_t(t * d * 3 + unfold_at(d, ch, k))] = h_[size_t(src * d + ch)];
      }
  });
  x_.resize(size_t(T * d));
  linear(pool, conv2_, unfolded_.data(), T, x_.data());
  gelu(x_.data(), T * d);
  for (int64_t i = 0; i < T * d; ++i) x_[size_t(i)] += encoder_positions_[size_t(i)];

  const int heads = c.encoder_heads;
  const int64_t hd = d / heads;
  h_.resize(size_t(T * d));
  q_.resize(size_t(T * d)), k_.resize(size_t(T * d)), v_.resize(size_t(T * d));
  attn_.resize(size_t(T * d));
  head_k_.resize(size_t(T * hd)), head_v_.resize(size_t(T * hd));
  for (const EncoderLayer& L : encoder_) {
    for (int64_t t = 0; t < T; ++t)
      layer_norm(&x_[size_t(t * d)], L.attn_norm.w, L.attn_norm.b, d, &h_[size_t(t * d)]);
    linear(pool, L.attn.q, h_.data(), T, q_.data());
    linear(pool, L.attn.k, h_.data(), T, k_.data());
    linear(pool, L.attn.v, h_.data(), T, v_.data());
    // Every frame attends to every frame; each head's keys and values are
    // gathered into the layouts attend_heads() takes.
    attend_heads(pool, T, T, heads, [&](int h) {
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < hd; ++j) {
          head_k_[size_t(t * hd + j)] = k_[size_t(t * d + h * hd + j)];
          head_v_[size_t(j * T + t)] = v_[size_t(t * d + h * hd + j)];
        }
      return std::pair<const float*, const float*>(head_k_.data(), head_v_.data());
    });
    linear(pool, L.attn.out, attn_.data(), T, h_.data());
    for (int64_t i = 0; i < T * d; ++i) x_[size_t(i)] += h_[size_t(i)];
    for (int64_t t = 0; t < T; ++t)
      layer_norm(&x_[size_t(t * d)], L.mlp_norm.w, L.mlp_norm.b, d, &h_[size_t(t * d)]);
    mlp(pool, L.fc1, L.fc2, T, c.encoder_ffn);
  }
  features.resize(size_t(T * d));
  for (int64_t t = 0; t < T; ++t)
    layer_norm(&x_[size_t(t * d)], encoder_norm_.w, encoder_norm_.b, d, &features[size_t(t * d)]);
}

void WhisperModel::cross_kv(ThreadPool& pool, const std::vector<float>& features, CrossKv& out) {
  const auto& c = config_;
  const int64_t d = c.d_model, T = c.audio_ctx, heads = c.decoder_heads, hd = d / heads;
  if (int64_t(features.size()) != T * d)
    throw std::invalid_argument("cross_kv: features are not [audio_ctx][d_model]");
  out.keys.resize(decoder_.size());
  out.values_t.resize(decoder_.size());
  k_.resize(size_t(T * d)), v_.resize(size_t(T * d));
  for (size_t l = 0; l < decoder_.size(); ++l) {
    linear(pool, decoder_[l].cross_attn.k, features.data(), T, k_.data());
    linear(pool, decoder_[l].cross_attn.v, features.data(), T, v_.data());
    std::vector<float>& keys = out.keys[l];
    std::vector<float>& values = out.values_t[l];
    keys.resize(size_t(T * d)), values.resize(size_t(T * d));
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < hd; ++j) {
          keys[size_t((h * T + t) * hd + j)] = k_[size_t(t * d + h * hd + j)];
          values[size_t((h * hd + j) * T + t)] = v_[size_t(t * d + h * hd + j)];
        }
  }
}

WhisperModel::Sequence WhisperModel::new_sequence() const {
  Sequence s;
  const size_t n = size_t(config_.text_ctx) * size_t(config_.d_model);
  s.keys.assign(decoder_.size(), std::vector<float>(n));
  s.values.assign(decoder_.size(), std::vector<float>(n));
  return s;
}

void WhisperModel::copy_sequence(const Sequence& from, Sequence& to) const {
  const int64_t heads = config_.decoder_heads, hd = config_.d_model / heads;
  for (size_t l = 0; l < decoder_.size(); ++l)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t at = size_t(h * config_.text_ctx * hd), n = size_t(from.length * hd);
      std::copy_n(from.keys[l].begin() + ptrdiff_t(at), n, to.keys[l].begin() + ptrdiff_t(at));
      std::copy_n(from.values[l].begin() + ptrdiff_t(at), n, to.values[l].begin() + ptrdiff_t(at));
    }
  to.length = from.length;
}

void WhisperModel::decode(ThreadPool& pool, const CrossKv& cross, std::span<const Row> rows,
                          std::vector<float>& logits, CrossScores* keep) {
  const auto& c = config_;
  const int64_t d = c.d_model, heads = c.decoder_heads, hd = d / heads, T_audio = c.audio_ctx;
  const float scale = 1.0f / std::sqrt(float(hd));
  if (cross.keys.size() != decoder_.size())
    throw std::invalid_argument("decode: the cross keys/values are not this model's");
  int64_t n = 0;
  for (const Row& r : rows) {
    if (r.seq->length + int64_t(r.tokens.size()) > c.text_ctx)
      throw std::out_of_range("the decoded text is longer than the model's " +
                              std::to_string(c.text_ctx) + " positions");
    n += int64_t(r.tokens.size());
  }
  if (n == 0) return;
  if (keep) keep->scores.resize(keep->heads.size());
  x_.resize(size_t(n * d)), h_.resize(size_t(n * d)), q_.resize(size_t(n * d));
  k_.resize(size_t(n * d)), v_.resize(size_t(n * d)), attn_.resize(size_t(n * d));
  int64_t t = 0;
  for (const Row& r : rows)
    for (size_t i = 0; i < r.tokens.size(); ++i, ++t) {
      const int32_t id = r.tokens[i];
      if (id < 0 || id >= c.vocab_size)
        throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary");
      matrix_row(token_embedding_, id, &x_[size_t(t * d)]);
      const float* pos = &decoder_positions_[size_t((r.seq->length + int64_t(i)) * d)];
      for (int64_t j = 0; j < d; ++j) x_[size_t(t * d + j)] += pos[j];
    }

  scores_.resize(size_t(heads * c.text_ctx * n));  // self-attention's; attend_heads grows it
  for (size_t l = 0; l < decoder_.size(); ++l) {
    const DecoderLayer& L = decoder_[l];
    // Causal self-attention over each sequence's cache.
    for (int64_t i = 0; i < n; ++i)
      layer_norm(&x_[size_t(i * d)], L.self_norm.w, L.self_norm.b, d, &h_[size_t(i * d)]);
    linear(pool, L.self_attn.q, h_.data(), n, q_.data());
    linear(pool, L.self_attn.k, h_.data(), n, k_.data());
    linear(pool, L.self_attn.v, h_.data(), n, v_.data());
    t = 0;
    for (const Row& r : rows) {
      std::vector<float>& keys = r.seq->keys[l];
      std::vector<float>& values = r.seq->values[l];
      const int64_t first = t, count = int64_t(r.tokens.size());
      for (int64_t i = 0; i < count; ++i)
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t at = (h * c.text_ctx + r.seq->length + i) * hd;
          std::copy_n(&k_[size_t((first + i) * d + h * hd)], hd, &keys[size_t(at)]);
          std::copy_n(&v_[size_t((first + i) * d + h * hd)], hd, &values[size_t(at)]);
        }
      pool.run(int(count * heads), [&](int task, int) {
        const int64_t i = task / heads, h = task % heads, ctx = r.seq->length + i + 1;
        const float* q = &q_[size_t((first + i) * d + h * hd)];
        float* s = &scores_[size_t(task) * size_t(c.text_ctx)];
        for (int64_t p = 0; p < ctx; ++p) {
          const float* k = &keys[size_t((h * c.text_ctx + p) * hd)];
          float dot = 0;
          for (int64_t j = 0; j < hd; ++j) dot += q[j] * k[j];
          s[p] = dot * scale;
        }
        softmax(s, ctx);
        float* o = &attn_[size_t((first + i) * d + h * hd)];
        std::fill_n(o, hd, 0.0f);
        for (int64_t p = 0; p < ctx; ++p) {
          const float* v = &values[size_t((h * c.text_ctx + p) * hd)];
          for (int64_t j = 0; j < hd; ++j) o[j] += s[p] * v[j];
        }
      });
      t += count;
    }
    linear(pool, L.self_attn.out, attn_.data(), n, h_.data());
    for (int64_t i = 0; i < n * d; ++i) x_[size_t(i)] += h_[size_t(i)];

    // Cross-attention to the window: per head, two matmuls over all rows.
    for (int64_t i = 0; i < n; ++i)
      layer_norm(&x_[size_t(i * d)], L.cross_norm.w, L.cross_norm.b, d, &h_[size_t(i * d)]);
    linear(pool, L.cross_attn.q, h_.data(), n, q_.data());
    attend_heads(
        pool, n, T_audio, int(heads),
        [&](int h) {
          return std::pair<const float*, const float*>(
              &cross.keys[l][size_t(h * T_audio * hd)],
              &cross.values_t[l][size_t(h * hd * T_audio)]);
        },
        [&](int h, std::span<const float> scores) {
          for (size_t a = 0; keep && a < keep->heads.size(); ++a)
            if (keep->heads[a] == std::pair(int(l), h))
              keep->scores[a].assign(scores.begin(), scores.end());
        });
    linear(pool, L.cross_attn.out, attn_.data(), n, h_.data());
    for (int64_t i = 0; i < n * d; ++i) x_[size_t(i)] += h_[size_t(i)];

    for (int64_t i = 0; i < n; ++i)
      layer_norm(&x_[size_t(i * d)], L.mlp_norm.w, L.mlp_norm.b, d, &h_[size_t(i * d)]);
    mlp(pool, L.fc1, L.fc2, n, c.decoder_ffn);
  }
  for (const Row& r : rows) r.seq->length += int64_t(r.tokens.size());

  // Final norm and the tied output head, for the requested positions.
  int64_t wanted = 0;
  t = 0;
  for (const Row& r : rows) {
    const int64_t count = int64_t(r.tokens.size());
    if (count == 0) continue;
    for (int64_t i = r.all_positions ? 0 : count - 1; i < count; ++i, ++wanted)
      layer_norm(&x_[size_t((t + i) * d)], decoder_norm_.w, decoder_norm_.b, d,
                 &h_[size_t(wanted * d)]);
    t += count;
  }
  logits.resize(size_t(wanted * c.vocab_size));
  matmul(pool, output_head_, h_.data(), wanted, logits.data());
}

}  // namespace hearth
