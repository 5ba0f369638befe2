// A checkpoint's files as a malformed or hostile one writes them: every
// value is checked before it is converted (tests/fuzz/io_config_fuzz and
// io_safetensors_fuzz found floats, out-of-range integers and dimensions
// past 2^63 turning into wrong values or undefined behaviour).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/model_config.h"
#include "io/pooling_config.h"
#include "io/safetensors.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using hearth::io::GenerationConfig;
using hearth::io::ModelConfig;
using hearth::TempDir;
using hearth::io::Safetensors;
using json = nlohmann::json;

namespace {

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

json config() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 64}, {"intermediate_size", 172},
          {"num_hidden_layers", 5}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
          {"vocab_size", 512}};
}

// The error ModelConfig::load gives for config() with `key` set to the JSON `value`.
std::string config_error(const std::string& key, const std::string& value) {
  const TempDir dir;
  json c = config();
  c[json::json_pointer(key)] = json::parse(value);
  write(dir / "config.json", c.dump());
  try {
    ModelConfig::load(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << key << " = " << value << " was accepted";
  return "";
}

}  // namespace

TEST(ModelConfig, NumbersAreCheckedBeforeTheyAreConverted) {
  const TempDir dir;
  write(dir / "config.json", config().dump());
  EXPECT_EQ(ModelConfig::load(dir).hidden_size, 64);
  // 2^32 + 64 used to become 64, 2^32 zero.
  EXPECT_NE(config_error("/hidden_size", "4294967360").find("\"hidden_size\" must be an integer from 1 to"),
            std::string::npos);
  config_error("/num_attention_heads", "4294967296");
  config_error("/vocab_size", "64.5");
  EXPECT_NE(config_error("/hidden_act", "5").find("\"hidden_act\" must be a string"), std::string::npos);
  EXPECT_NE(config_error("/rope_scaling", R"({"rope_type": "linear", "factor": "2"})").find("rope_scaling.factor"),
            std::string::npos);
  config_error("/rope_scaling", R"({"type": 7})");
  // Values that made every output NaN or infinite.
  EXPECT_NE(config_error("/rms_norm_eps", "-1e-6").find("rms_norm_eps\" must be a number above 0"),
            std::string::npos);
  EXPECT_NE(config_error("/rope_theta", "1").find("rope_theta"), std::string::npos);
  EXPECT_NE(config_error("/rope_scaling", R"({"rope_type": "linear", "factor": 0})").find("rope_scaling.factor"),
            std::string::npos);
  // A value nested past what an error message can print is named by its kind.
  {
    json c = config();
    c["quantization"] = {{"mode", "NESTED"}};
    std::string text = c.dump();
    text.replace(text.find("\"NESTED\""), 8, std::string(100000, '[') + std::string(100000, ']'));
    write(dir / "config.json", text);
    try {
      ModelConfig::load(dir);
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("quantization mode an array"), std::string::npos) << e.what();
    }
  }
  // A float where an int goes was undefined behaviour.
  EXPECT_NE(config_error("/quantization", R"({"bits": 1e300})").find("quantization.bits"), std::string::npos);
  config_error("/quantization", R"({"bits": 4, "group_size": 1e300})");
  config_error("/quantization", R"({"group_size": 64, "bits": 4, "lm_head": {"bits": "8"}})");
  // group_size * bits overflowed int.
  config_error("/quantization", R"({"bits": 8, "group_size": 1073741823})");
  {
    json c = config();
    c["architectures"] = {"Qwen2ForCausalLM"};
    c["sliding_window"] = 4096;
    c["use_sliding_window"] = true;
    c["max_window_layers"] = 1e300;
    write(dir / "config.json", c.dump());
    EXPECT_THROW(ModelConfig::load(dir), std::runtime_error);
    c["max_window_layers"] = 3;
    write(dir / "config.json", c.dump());
    EXPECT_EQ(ModelConfig::load(dir).sliding_window_from_layer, 3);
  }
}

// What the KV plan, the rope table and the layer list are computed from
// before any tensor can disagree: held to well past published models.
TEST(ModelConfig, SizesPastAnyModelAreRefused) {
  EXPECT_NE(config_error("/head_dim", "2147483646").find("\"head_dim\" must be an integer from 1 to 1024"),
            std::string::npos);
  config_error("/num_hidden_layers", "20000000");
  config_error("/num_key_value_heads", "1073741824");
  config_error("/hidden_size", "2147483647");
}

// Newer transformers write rope_parameters; its base and scaling count, and
// a type's required keys are required, as transformers has them.
TEST(ModelConfig, RopeParametersAndScalingAreReadAsTransformersDoes) {
  const TempDir dir;
  auto load = [&](const json& edit) {
    json c = config();
    c.update(edit);
    write(dir / "config.json", c.dump());
    return ModelConfig::load(dir);
  };
  ModelConfig c = load({{"rope_parameters", {{"rope_type", "yarn"}, {"rope_theta", 1e6}, {"factor", 4.0},
                                             {"original_max_position_embeddings", 1024}, {"beta_fast", 0},
                                             {"mscale", 0.707}, {"mscale_all_dim", 0.707}, {"truncate", false}}}});
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.beta_fast, 32.0);  // 0 is the default
  EXPECT_EQ(c.rope_scaling.mscale, 0.707);
  EXPECT_FALSE(c.rope_scaling.truncate);
  c = load({{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 5e5}}}});
  EXPECT_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.rope_scaling.type, "default");
  c = load({{"max_position_embeddings", 8192}, {"rope_scaling", {{"rope_type", "yarn"}, {"original_max_position_embeddings", 2048}}}});
  EXPECT_EQ(c.rope_scaling.factor, 4.0);  // yarn: the extension when no factor is given

  EXPECT_NE(config_error("/rope_parameters", R"({"full_attention": {"rope_theta": 1e6}})").find("per-layer-type"),
            std::string::npos);
  config_error("/partial_rotary_factor", "0.5");
  EXPECT_NE(config_error("/rope_scaling", R"({"rope_type": "llama3", "factor": 8.0})").find("low_freq_factor\" is missing"),
            std::string::npos);
  EXPECT_NE(config_error("/rope_scaling", R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1,
              "high_freq_factor": 4})").find("original_max_position_embeddings\" is missing"), std::string::npos);
  config_error("/rope_scaling", R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4,
              "high_freq_factor": 4, "original_max_position_embeddings": 8192})");
  config_error("/rope_scaling", R"({"rope_type": "linear"})");
  config_error("/rope_scaling", R"({"rope_type": "yarn", "factor": 4, "beta_slow": -1})");
  config_error("/rope_scaling", R"({"rope_type": "yarn", "factor": 4, "attention_factor": "1"})");
  config_error("/rope_scaling", R"({"rope_type": "dynamic", "factor": 4})");
}

TEST(GenerationConfig, IdsThatAreNoIdsAreLeftOut) {
  const TempDir dir;
  write(dir / "config.json", R"({"bos_token_id": 1, "eos_token_id": 2})");
  write(dir / "generation_config.json",
        R"({"bos_token_id": 4294967297, "eos_token_id": [2, -1, 1e300, 4294967298, 7], "top_k": 1e300})");
  const GenerationConfig g = GenerationConfig::load(dir);
  EXPECT_EQ(g.bos_token_id, 1);  // config.json's; 2^32 + 1 is no id
  EXPECT_EQ(g.eos_token_ids, (std::vector<int>{2, 7}));
  EXPECT_FALSE(g.top_k.has_value());
}

// sentence-transformers' modules.json and pooling config.json: fields of
// another type are refused with a message, never a JSON type error.
TEST(PoolingConfig, ModesAreBooleansAndFieldsAreChecked) {
  const TempDir dir;
  fs::create_directories(dir / "1_Pooling");
  write(dir / "modules.json", R"([{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  write(dir / "1_Pooling" / "config.json", R"({"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": false})");
  EXPECT_EQ(hearth::io::read_pooling_config(dir).pooling, hearth::io::Pooling::Mean);
  auto error = [&](const std::string& modules, const std::string& pooling) {
    write(dir / "modules.json", modules);
    write(dir / "1_Pooling" / "config.json", pooling);
    try {
      hearth::io::read_pooling_config(dir);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string modules = R"([{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
  EXPECT_NE(error(modules, R"({"pooling_mode_cls_token": 1})").find("true or false"), std::string::npos);
  EXPECT_NE(error(R"([{"path": "1_Pooling", "type": 5}])", "{}").find("a string"), std::string::npos);
  EXPECT_NE(error(R"([{"path": [], "type": "sentence_transformers.models.Pooling"}])", "{}").find("a string"),
            std::string::npos);
  EXPECT_NE(error(modules, R"({"pooling_mode_cls_token": true, "pooling_mode_lasttoken": true})").find("exactly one"),
            std::string::npos);
}

TEST(Safetensors, DimensionsPast2To63AreRefused) {
  const TempDir dir;
  auto file = [&](const std::string& shape) {
    const std::string header = R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,4]}})";
    const uint64_t n = header.size();
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &n, 8);
    write(dir / "model.safetensors", bytes + header + std::string(4, '\0'));
    return dir / "model.safetensors";
  };
  EXPECT_EQ(Safetensors::open_file(file("[1, 1]")).get("w").numel(), 1);
  // Two dimensions of 2^64 - 1 were two -1s: one element.
  EXPECT_THROW(Safetensors::open_file(file("[18446744073709551615, 18446744073709551615]")), std::runtime_error);
  // Three of 2^63 overflowed the 128-bit size check.
  EXPECT_THROW(Safetensors::open_file(file("[9223372036854775808, 9223372036854775808, 9223372036854775808]")),
               std::runtime_error);
  EXPECT_THROW(Safetensors::open_file(file("[9223372036854775807, 9223372036854775807]")), std::runtime_error);
}

// A header past the format's 100 MB limit is refused before it is parsed
// (a JSON tree of GBs otherwise), as is one that is no JSON object.
TEST(Safetensors, AHeaderOverTheFormatsLimitIsRefusedUnread) {
  const TempDir dir;
  const fs::path path = dir / "model.safetensors";
  const uint64_t n = 100000001;
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  write(path, bytes + "[");
  fs::resize_file(path, 8 + n);  // sparse: no 100 MB written
  try {
    Safetensors::open_file(path);
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 100000000"), std::string::npos) << e.what();
  }
  const uint64_t two = 2;
  std::memcpy(bytes.data(), &two, 8);
  write(path, bytes + "[]");
  EXPECT_THROW(Safetensors::open_file(path), std::runtime_error);
}

namespace {

// A safetensors file of F32 tensors given as name -> [begin, end) in bytes,
// its header padded with spaces to 8 bytes plus `shift`.
std::string safetensors_bytes(const std::vector<std::tuple<std::string, size_t, size_t>>& tensors,
                              size_t data_bytes, size_t shift = 0) {
  json header = json::object();
  for (const auto& [name, begin, end] : tensors)
    header[name] = {{"dtype", "F32"}, {"shape", {(end - begin) / 4}}, {"data_offsets", {begin, end}}};
  std::string h = header.dump();
  h.resize((h.size() + 7) / 8 * 8 + shift, ' ');
  const uint64_t n = h.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  return bytes + h + std::string(data_bytes, '\0');
}

}  // namespace

TEST(Safetensors, OverlapsAreFoundPastAnEmptyTensorBetweenThem) {
  const TempDir dir;
  write(dir / "a.safetensors", safetensors_bytes({{"a", 0, 100}, {"b", 52, 60}}, 100));
  EXPECT_THROW(Safetensors::open_file(dir / "a.safetensors"), std::runtime_error);
  // An empty one at 48 sorts between them, and hid the overlap.
  write(dir / "b.safetensors", safetensors_bytes({{"a", 0, 100}, {"e", 48, 48}, {"b", 52, 60}}, 100));
  EXPECT_THROW(Safetensors::open_file(dir / "b.safetensors"), std::runtime_error);
  write(dir / "c.safetensors", safetensors_bytes({{"a", 0, 48}, {"e", 48, 48}, {"b", 48, 60}}, 60));
  EXPECT_EQ(Safetensors::open_file(dir / "c.safetensors").tensors().size(), 3u);
}

namespace {

// The resident bytes of the mapping that holds p (/proc/self/smaps).
size_t resident_bytes_of_mapping(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_it = false;
  while (std::getline(smaps, line)) {
    uintptr_t from = 0, to = 0;
    char dash = 0;
    if (std::istringstream(line) >> std::hex >> from >> dash >> to && dash == '-') {
      in_it = uintptr_t(p) >= from && uintptr_t(p) < to;
    } else if (in_it && line.rfind("Rss:", 0) == 0) {
      return size_t(std::stoull(line.substr(4))) * 1024;
    }
  }
  return 0;
}

}  // namespace

TEST(Safetensors, ReleasedTensorsLeaveMemoryAndReadBackFromTheFile) {
  constexpr size_t kTensor = 256 << 10;
  std::string bytes = safetensors_bytes({{"a", 0, kTensor}, {"b", kTensor, 2 * kTensor}, {"c", 2 * kTensor, 3 * kTensor}},
                                        3 * kTensor);
  const size_t data_at = bytes.size() - 3 * kTensor;
  for (size_t i = 0; i < 3 * kTensor; ++i) bytes[data_at + i] = char(i * 7 % 251);
  const TempDir dir;
  write(dir / "model.safetensors", bytes);
  const Safetensors st = Safetensors::open_file(dir / "model.safetensors");
  auto checksum = [&](const char* name) {
    const auto& t = st.get(name);
    uint64_t sum = 0;
    for (size_t i = 0; i < t.nbytes; ++i) sum = sum * 31 + t.data[i];
    return sum;
  };
  const uint64_t a = checksum("a"), b = checksum("b"), c = checksum("c");  // every page read once
  const void* mapping = st.get("a").data;
  EXPECT_GE(resident_bytes_of_mapping(mapping), 3 * kTensor);
  const void* keep[] = {st.get("b").data};
  st.release_except(keep);
  // b stays; a and c go but for the pages they share with the header or b.
  const size_t left = resident_bytes_of_mapping(mapping);
  EXPECT_GE(left, kTensor);
  EXPECT_LE(left, kTensor + 4 * size_t(::sysconf(_SC_PAGESIZE)));
  // What was released reads the same from the file again.
  EXPECT_EQ(checksum("a"), a);
  EXPECT_EQ(checksum("b"), b);
  EXPECT_EQ(checksum("c"), c);
}

TEST(Safetensors, ATensorNotAlignedInItsFileIsReadFromAnAlignedCopy) {
  std::string bytes = safetensors_bytes({{"a", 0, 8}, {"b", 8, 16}}, 16, 1);  // data one byte past 8
  const float values[4] = {1.5f, -2.0f, 3.25f, 1e-3f};
  std::memcpy(bytes.data() + bytes.size() - 16, values, 16);
  const TempDir dir;
  write(dir / "model.safetensors", bytes);
  const Safetensors st = Safetensors::open_file(dir / "model.safetensors");
  for (const char* name : {"a", "b"}) {
    const auto& t = st.get(name);
    EXPECT_EQ(uintptr_t(t.data) % 4, 0u) << name;
    EXPECT_EQ(std::memcmp(t.data, values + (name[0] == 'b' ? 2 : 0), 8), 0) << name;
  }
  st.release_except({});  // never the copies (that would zero them)
  EXPECT_EQ(std::memcmp(st.get("a").data, values, 8), 0);
  // An open for names, dtypes and shapes copies nothing: `data` stays where
  // the file has it.
  const Safetensors meta = Safetensors::open_file(dir / "model.safetensors", Safetensors::Use::Metadata);
  const auto& a = meta.get("a");
  EXPECT_EQ(a.data, meta.files()[0]->data() + a.offset);
  EXPECT_NE(uintptr_t(a.data) % 4, 0u);
  EXPECT_EQ(a.nbytes, 8u);
}

TEST(Safetensors, AnIndexNamesShardsBesideItOnly) {
  const TempDir dir;
  write(dir / "model-1.safetensors", safetensors_bytes({{"w", 0, 16}}, 16));
  write(dir / "model.safetensors.index.json", R"({"weight_map":{"w":"model-1.safetensors"}})");
  EXPECT_EQ(Safetensors::open_dir(dir).get("w").numel(), 4);
  for (const char* shard : {"../model-1.safetensors", "/etc/passwd", "sub/model-1.safetensors", ""}) {
    write(dir / "model.safetensors.index.json",
          json{{"weight_map", {{"w", shard}}}}.dump());
    try {
      Safetensors::open_dir(dir);
      ADD_FAILURE() << shard << " was opened";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("not a file name"), std::string::npos) << e.what();
    }
  }
}
