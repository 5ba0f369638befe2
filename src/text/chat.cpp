#include "text/chat.h"

#include <stdexcept>

#include "core/read_file.h"
#include "text/jinja/jinja.h"
#include "text/jinja/json.h"

namespace hearth::text {

namespace {

// A special token in tokenizer_config.json: a string or an AddedToken object.
std::string token_string(const nlohmann::ordered_json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  return "";
}

// "chat_template": a string, or [{"name": ..., "template": ...}, ...].
std::optional<std::string> pick_template(const nlohmann::ordered_json& ct, const std::string& name,
                                         const std::filesystem::path& where) {
  if (ct.is_string()) return ct.get<std::string>();
  if (!ct.is_array()) return std::nullopt;
  std::string want = name.empty() ? "default" : name;
  std::string names;
  for (const auto& entry : ct) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template")) continue;
    if (entry["name"] == want && entry["template"].is_string()) return entry["template"].get<std::string>();
    names += (names.empty() ? "" : ", ") + entry["name"].dump();
  }
  throw std::runtime_error(where.string() + " has no chat template named '" + want + "' (it has " + names + ")");
}

}  // namespace

ChatTemplate ChatTemplate::from_string(std::string source, std::string bos_token, std::string eos_token) {
  ChatTemplate t;
  t.template_ = std::make_shared<const jinja::Template>(source);
  t.source_ = std::move(source);
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  return t;
}

ChatTemplate ChatTemplate::load(const std::filesystem::path& model_dir, const std::string& name) {
  std::optional<std::string> source;
  std::string bos, eos;
  auto config_path = model_dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    auto config = nlohmann::ordered_json::parse(read_file(config_path));
    if (config.contains("bos_token")) bos = token_string(config["bos_token"]);
    if (config.contains("eos_token")) eos = token_string(config["eos_token"]);
    if (config.contains("chat_template")) source = pick_template(config["chat_template"], name, config_path);
  }
  auto jinja_path = model_dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path)) {
    source = read_file(jinja_path);
  } else if (!source) {
    auto json_path = model_dir / "chat_template.json";
    if (std::filesystem::exists(json_path)) {
      auto j = nlohmann::ordered_json::parse(read_file(json_path));
      if (j.contains("chat_template")) source = pick_template(j["chat_template"], name, json_path);
    }
  }
  if (!source)
    throw std::runtime_error("no chat template in " + model_dir.string() +
                             " (looked for chat_template.jinja and tokenizer_config.json \"chat_template\")");
  return from_string(std::move(*source), std::move(bos), std::move(eos));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const {
  return render(messages, tools, add_generation_prompt, kwargs, jinja::RenderLimits{});
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt, const nlohmann::ordered_json& kwargs,
                                 const jinja::RenderLimits& limits) const {
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  vars["messages"] = messages;
  vars["tools"] = tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = add_generation_prompt;
  if (!bos_token_.empty()) vars["bos_token"] = bos_token_;
  if (!eos_token_.empty()) vars["eos_token"] = eos_token_;
  if (kwargs.is_object())
    for (const auto& [k, v] : kwargs.items()) vars[k] = v;
  return template_->render(vars, limits);
}

}  // namespace hearth::text
