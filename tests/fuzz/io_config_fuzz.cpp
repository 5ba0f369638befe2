// A checkpoint's JSON files from fuzzed bytes, read as loading a model
// reads them. The first byte says which file the rest is:
//   'c' config.json, 'g' generation_config.json, 'm' modules.json,
//   anything else the Sentence Transformers pooling config (1_Pooling/config.json,
//   listed by a fixed modules.json).
// Each reader refuses bad input with std::runtime_error naming the file and
// the field (io/model_config.h, io/pooling_config.h); what ModelConfig
// accepts must be a shape the model can be built for.
#include <cstdint>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "io/model_config.h"
#include "io/pooling_config.h"

using namespace hearth;
namespace fs = std::filesystem;

namespace {

// What ModelConfig accepts is a shape the model can be built for, and is
// what the file says (no integer wrapped into range).
void check(const io::ModelConfig& c, std::string_view file) {
  const auto j = nlohmann::json::parse(file);
  auto same = [&](const char* key, int value) {
    if (!j.contains(key) || j[key].is_null()) return;
    HEARTH_FUZZ_CHECK(j[key].is_number_integer() && !(j[key].is_number_unsigned() && j[key].get<uint64_t>() > INT64_MAX));
    HEARTH_FUZZ_CHECK(j[key].get<int64_t>() == value);
  };
  same("hidden_size", c.hidden_size);
  same("intermediate_size", c.intermediate_size);
  same("num_hidden_layers", c.num_layers);
  same("num_attention_heads", c.num_heads);
  same("num_key_value_heads", c.num_kv_heads);
  same("head_dim", c.head_dim);
  same("vocab_size", c.vocab_size);
  same("max_position_embeddings", c.max_position_embeddings);
  HEARTH_FUZZ_CHECK(c.hidden_size > 0 && c.intermediate_size > 0 && c.num_layers > 0);
  HEARTH_FUZZ_CHECK(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0);
  HEARTH_FUZZ_CHECK(c.head_dim > 0 && c.head_dim % 2 == 0);
  HEARTH_FUZZ_CHECK(c.vocab_size > 0 && c.max_position_embeddings > 0);
  HEARTH_FUZZ_CHECK(!c.sliding_window || *c.sliding_window > 0);
  // What is planned from the sizes before a tensor is read stays in range.
  HEARTH_FUZZ_CHECK(c.head_dim <= 1024 && c.num_layers <= 1024 && c.num_kv_heads <= 1024);
  const auto& rs = c.rope_scaling;
  HEARTH_FUZZ_CHECK(rs.factor > 0 && rs.beta_fast > 0 && rs.beta_slow > 0);
  HEARTH_FUZZ_CHECK(rs.type != "llama3" || rs.high_freq_factor > rs.low_freq_factor);
  for (const auto& [module, q] : c.quant_overrides)
    HEARTH_FUZZ_CHECK(q.bits == 0 || (q.bits >= 2 && q.bits <= 8 && q.group_size > 0));
  (void)c.quant_for("model.layers.0.mlp.up_proj");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const fs::path dir = [] {
    const fs::path d = fuzz::scratch_dir() / "model";
    fs::create_directories(d / "1_Pooling");
    return d;
  }();
  std::error_code ec;
  for (const char* f : {"config.json", "generation_config.json", "modules.json", "1_Pooling/config.json"})
    fs::remove(dir / f, ec);
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 'c': fuzz::write_file(dir / "config.json", rest); break;
    case 'g': fuzz::write_file(dir / "generation_config.json", rest); break;
    case 'm': fuzz::write_file(dir / "modules.json", rest); break;
    default:
      fuzz::write_file(dir / "modules.json",
                       R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                           {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
      fuzz::write_file(dir / "1_Pooling" / "config.json", rest);
  }
  if (data[0] == 'c') {
    try {
      check(io::ModelConfig::load(dir), rest);
    } catch (const std::runtime_error&) {
    } catch (const std::exception& e) {
      fuzz::unexpected("ModelConfig::load", e.what());
    }
  }
  try {
    const io::GenerationConfig g = io::GenerationConfig::load(dir);
    for (int id : g.eos_token_ids) HEARTH_FUZZ_CHECK(id >= 0);
    HEARTH_FUZZ_CHECK(!g.bos_token_id || *g.bos_token_id >= 0);
  } catch (const std::runtime_error&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("GenerationConfig::load", e.what());
  }
  try {
    const io::PoolingConfig p = io::read_pooling_config(dir);
    (void)io::pooling_name(p.pooling);
  } catch (const std::runtime_error&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("read_pooling_config", e.what());
  }
  return 0;
}
