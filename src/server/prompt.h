// Request -> prompt token ids.
//
// Chat: the model's chat template renders the messages (with
// add_generation_prompt) and text::ChatPrompt tokenizes the text as Hugging
// Face does after apply_chat_template (add_special_tokens=false), putting
// BOS in front when the tokenizer adds one to plain text and the template
// did not print it — the same prompt `hearth chat` builds.
//
// Completions: a text prompt is tokenized like `hearth generate --prompt`
// (add_special_tokens=true: BOS as the tokenizer says); token ids are used
// as sent.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/generated_history.h"
#include "server/openai_request.h"
#include "text/chat.h"
#include "text/chat_prompt.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tools/output_parser.h"

namespace hearth::server {

class PromptBuilder {
 public:
  // Loads the chat template if the model has one (chat requests get a 400
  // otherwise).
  PromptBuilder(const std::filesystem::path& model_dir, const text::Tokenizer& tokenizer);
  PromptBuilder(const PromptBuilder&) = delete;  // prompt_ refers to chat_
  PromptBuilder& operator=(const PromptBuilder&) = delete;

  // throws ApiError. With a history, assistant messages this server
  // generated get back the ids it sampled.
  // `rendered`, when given, receives the chat prompt's text.
  std::vector<int32_t> build(const ApiRequest& request, GeneratedHistory* history = nullptr,
                             std::string* rendered = nullptr) const;
  std::string render_chat(const ApiRequest& request) const;     // the chat prompt text

  bool has_chat_template() const { return chat_.has_value(); }
  const std::string& template_source() const;  // "" without a template
  // The markup of the model's replies (reasoning, tool calls), from the template.
  const text::OutputFormat& output_format() const { return output_format_; }
  const std::string& template_error() const { return template_error_; }  // why there is none

 private:
  const text::Tokenizer& tok_;
  std::optional<text::ChatTemplate> chat_;
  std::optional<text::ChatPrompt> prompt_;  // over chat_
  std::string template_error_;
  bool developer_role_ = false;
  text::OutputFormat output_format_;  // the template renders "developer" messages itself
};

}  // namespace hearth::server
