#include "io/pooling_config.h"

#include <stdexcept>
#include <string>
#include <type_traits>

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
  // A field of the type asked for, or the default when absent (json's own
  // value() throws its type_error, no runtime_error, on another type).
  auto field = [](const json& o, const std::string& where, const char* key, auto fallback) {
    const auto it = o.find(key);
    if (it == o.end()) return fallback;
    using T = decltype(fallback);
    const bool ok = std::is_same_v<T, bool> ? it->is_boolean() : it->is_string();
    if (!ok) throw std::runtime_error(where + ": \"" + key + "\" must be " + (std::is_same_v<T, bool> ? "true or false" : "a string"));
    return it->template get<T>();
  };
  for (const json& m : list) {
    if (!m.is_object() || field(m, modules.string(), "type", std::string()) != "sentence_transformers.models.Pooling")
      continue;
    const std::string dir = field(m, modules.string(), "path", std::string());
    const fs::path config = model_dir / dir / "config.json";
    const json c = read_json_file(config);
    auto on = [&](const char* key) { return c.is_object() && field(c, config.string(), key, false); };
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
