// Request -> prompt token ids.
//
// Chat: the model's chat template renders the messages (with
// add_generation_prompt), and the text is tokenized as Hugging Face does
// after apply_chat_template: add_special_tokens=false, special tokens in the
// text matched as such. One addition: when the tokenizer adds a BOS token to
// plain text (tokenizer_config add_bos_token, or its post-processor) and the
// rendered text does not already begin with the BOS token's text, the BOS id
// is put in front — templates such as stories260k's never print bos_token,
// and these models were trained with it.
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

#include "server/openai_request.h"
#include "text/chat.h"
#include "text/tokenizer.h"

namespace hearth::server {

class PromptBuilder {
 public:
  // Loads the chat template if the model has one (chat requests get a 400
  // otherwise).
  PromptBuilder(const std::filesystem::path& model_dir, const text::Tokenizer& tokenizer);

  std::vector<int32_t> build(const ApiRequest& request) const;  // throws ApiError
  std::string render_chat(const ApiRequest& request) const;     // the chat prompt text

  bool has_chat_template() const { return chat_.has_value(); }
  const std::string& template_error() const { return template_error_; }  // why there is none
  bool adds_bos() const { return bos_.has_value(); }

 private:
  const text::Tokenizer& tok_;
  std::optional<text::ChatTemplate> chat_;
  std::string template_error_;
  std::optional<int32_t> bos_;  // set when plain encoding puts this BOS id first
  std::string bos_text_;
};

}  // namespace hearth::server
