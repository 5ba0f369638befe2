// WhisperConfig::load on a hostile config.json: numbers that would size
// gigabytes, and values nested deeper than an error message can print.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "model/whisper_config.h"
#include "temp_dir.h"

using json = nlohmann::json;

namespace {

// whisper-tiny's config.json, in the Hugging Face layout.
json tiny() {
  return {{"num_mel_bins", 80},           {"d_model", 384},
          {"encoder_layers", 4},          {"encoder_attention_heads", 6},
          {"encoder_ffn_dim", 1536},      {"decoder_layers", 4},
          {"decoder_attention_heads", 6}, {"decoder_ffn_dim", 1536},
          {"max_source_positions", 1500}, {"max_target_positions", 448},
          {"vocab_size", 51865}};
}

std::string load_error(const std::string& config) {
  const hearth::TempDir dir;
  dir.write("config.json", config);
  try {
    hearth::WhisperConfig::load(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(WhisperConfig, TheTinyConfigLoads) { EXPECT_EQ(load_error(tiny().dump()), ""); }

TEST(WhisperConfig, AnAudioContextPastWhispersIsRefused) {
  json c = tiny();
  c["max_source_positions"] = 1 << 24;
  const std::string error = load_error(c.dump());
  EXPECT_NE(error.find("at most 1500"), std::string::npos) << error;
}

TEST(WhisperConfig, ADeeplyNestedValueIsNamedByItsKind) {
  // Written as text: dump() itself is what must not run on it.
  json c = tiny();
  c["activation_function"] = "NESTED";
  std::string text = c.dump();
  text.replace(text.find("\"NESTED\""), 8, std::string(100000, '[') + std::string(100000, ']'));
  const std::string error = load_error(text);
  EXPECT_NE(error.find("activation_function an array"), std::string::npos) << error.substr(0, 200);
}

}  // namespace
