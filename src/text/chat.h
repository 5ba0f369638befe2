// Chat templates: turning a conversation into the prompt text a model was
// trained on, exactly as Hugging Face transformers' apply_chat_template does
// (tokenize=False), with hearth's Jinja engine (text/jinja/jinja.h).
//
// The rendered prompt is plain text that already contains the model's
// special tokens as text (e.g. "<|im_start|>", and bos_token where the
// template prints it). Tokenize it as HF does: with add_special_tokens=False
// (do not add BOS/EOS again), letting the tokenizer match special tokens
// inside the text. That is the tokenizer's job, not this file's.
#pragma once

#include <array>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "text/jinja/error.h"

namespace hearth::text {

namespace jinja {
class Template;
struct RenderLimits;
}

// The variables ChatTemplate::render sets itself, as transformers' render call does.
inline constexpr std::array<std::string_view, 6> kRenderVariables = {
    "messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token"};

struct ChatTemplate {
  // From a model dir: tokenizer_config.json "chat_template" (a string, or a
  // list of {name, template}: the one called `name`, else "default"), or a
  // sibling chat_template.jinja, which wins if both exist (as in
  // transformers); chat_template.json ({"chat_template": ...}) is read last.
  // Also reads bos_token / eos_token (strings or {"content": ...}) from
  // tokenizer_config.json. Throws std::runtime_error if there is no
  // template, TemplateError if it does not parse.
  static ChatTemplate load(const std::filesystem::path& model_dir, const std::string& name = "");
  // An empty bos/eos token means "not set": the variable is then undefined in
  // the template, as in transformers when the tokenizer has no such token.
  static ChatTemplate from_string(std::string source, std::string bos_token = "", std::string eos_token = "");

  // messages: array of {role, content (string or [{type:"text",text}...]),
  // tool_calls?, reasoning_content?, ...}; tools: array or null; kwargs: extra
  // template variables (e.g. enable_thinking); a client's may not name the
  // call's own (kRenderVariables), which the server has checked.
  // The template sees messages, tools (None when null), documents (None),
  // add_generation_prompt, bos_token, eos_token and kwargs — the variables of
  // transformers' render call. Throws TemplateError (with line()) on errors,
  // including the template's own raise_exception(...).
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt,
                     const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const;
  // The same within other bounds on the work (jinja::RenderLimits).
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt, const nlohmann::ordered_json& kwargs,
                     const jinja::RenderLimits& limits) const;

  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  std::string source_;
  std::string bos_token_, eos_token_;
  std::shared_ptr<const jinja::Template> template_;
};

}  // namespace hearth::text
