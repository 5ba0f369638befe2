#include "io/pooling_config.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/model_config.h"

namespace hearth::io {

namespace fs = std::filesystem;
using nlohmann::json;

PoolingConfig read_pooling_config(const fs::path& model_dir) {
  PoolingConfig out;
  const fs::path modules = model_dir / "modules.json";
  if (!fs::exists(modules)) return out;
  const json list = read_json_file(modules);
  if (!list.is_array()) throw std::runtime_error(modules.string() + " is not an array of modules");
  for (const json& m : list) {
    if (!m.is_object() || m.value("type", "") != "sentence_transformers.models.Pooling") continue;
    const std::string dir = m.value("path", "");
    const fs::path config = model_dir / dir / "config.json";
    const json c = read_json_file(config);
    auto on = [&](const char* key) { return c.is_object() && c.value(key, false) == true; };
    out.source = (fs::path(dir) / "config.json").string();
    for (const char* unsupported : {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                                    "pooling_mode_weightedmean_tokens"})
      if (on(unsupported))
        throw std::runtime_error(config.string() + " asks for " + unsupported +
                                 ", which hearth does not implement (it pools by last token, mean or first token)");
    const int modes = on("pooling_mode_lasttoken") + on("pooling_mode_mean_tokens") + on("pooling_mode_cls_token");
    if (modes != 1)
      throw std::runtime_error(config.string() + " must turn on exactly one pooling mode (it turns on " +
                               std::to_string(modes) + ")");
    out.pooling = on("pooling_mode_lasttoken") ? Pooling::Last
                  : on("pooling_mode_mean_tokens") ? Pooling::Mean
                                                   : Pooling::First;
    return out;
  }
  return out;
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Last: return "last";
    case Pooling::Mean: return "mean";
    case Pooling::First: return "first";
  }
  return "?";
}

}  // namespace hearth::io
