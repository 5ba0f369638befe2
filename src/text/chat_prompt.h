// A conversation's prompt token ids: the chat template renders the messages
// and the text is tokenized as Hugging Face tokenizes the output of
// apply_chat_template, with add_special_tokens=false (special tokens in the
// text matched as such, nothing added). One addition: when the tokenizer adds
// a BOS to plain text (add_bos_token, or its post-processor) and the rendered
// text does not begin with the BOS token's text, the BOS id is put in front:
// templates such as stories260k's never print bos_token, and such models were
// trained with it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat.h"
#include "text/tokenizer/tokenizer.h"

namespace hearth::text {

class ChatPrompt {
 public:
  ChatPrompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer);

  std::string render(
      const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
      bool add_generation_prompt,
      const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const {
    return template_.render(messages, tools, add_generation_prompt, kwargs);
  }
  // Token ids of a rendered prompt.
  std::vector<int32_t> tokenize(const std::string& rendered) const;

  // A span of text whose ids are known: an assistant turn this server
  // generated, with the ids it sampled (re-tokenizing the text often gives
  // other ids, and the prompt would no longer share the cached prefix).
  struct KnownIds {
    std::string_view text;
    std::span<const int32_t> ids;
  };
  // Like tokenize(), but each known text, found in order in the rendered
  // prompt, becomes its ids and the text between is tokenized piece by piece.
  // Known texts that are not found (a template may strip or rewrite them)
  // are skipped.
  std::vector<int32_t> tokenize(const std::string& rendered, std::span<const KnownIds> known) const;

 private:
  const ChatTemplate& template_;
  const Tokenizer& tokenizer_;
  std::optional<int32_t> bos_;  // set when plain encoding puts this BOS id first
  std::string bos_text_;
};

}  // namespace hearth::text
