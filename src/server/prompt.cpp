#include "server/prompt.h"

#include "server/api_error.h"
#include "text/jinja_error.h"

namespace hearth::server {

PromptBuilder::PromptBuilder(const std::filesystem::path& model_dir, const text::Tokenizer& tokenizer)
    : tok_(tokenizer) {
  try {
    chat_ = text::ChatTemplate::load(model_dir);
  } catch (const std::exception& e) {
    template_error_ = e.what();
  }
  // Does encoding plain text add a BOS? Compare with and without specials.
  if (auto bos = tok_.bos_id()) {
    auto with = tok_.encode("a", true), without = tok_.encode("a", false);
    if (!with.empty() && with.front() == *bos && (without.empty() || without.front() != *bos)) {
      bos_ = *bos;
      bos_text_ = tok_.bos_token();
      if (bos_text_.empty()) bos_text_ = tok_.id_to_token(*bos);
    }
  }
}

std::string PromptBuilder::render_chat(const ApiRequest& r) const {
  if (!chat_)
    throw ApiError(400, "this model has no chat template (" + template_error_ + "); use /v1/completions",
                   "invalid_request_error", "messages", "no_chat_template");
  try {
    return chat_->render(r.messages, r.tools, true, r.template_kwargs);
  } catch (const text::TemplateError& e) {
    throw bad_request("messages", "the chat template cannot render these messages: " + e.message());
  }
}

std::vector<int32_t> PromptBuilder::build(const ApiRequest& r) const {
  std::vector<int32_t> ids;
  if (r.endpoint == Endpoint::Chat) {
    const std::string text = render_chat(r);
    ids = tok_.encode(text, false);
    if (bos_ && text.compare(0, bos_text_.size(), bos_text_) != 0) ids.insert(ids.begin(), *bos_);
  } else if (r.prompt_is_ids) {
    ids = r.prompt_ids;
  } else {
    ids = tok_.encode(r.prompt_text, true);
  }
  const std::string param = r.endpoint == Endpoint::Chat ? "messages" : "prompt";
  if (ids.empty()) throw bad_request(param, "the prompt is empty");
  const size_t vocab = tok_.vocab_size();
  for (int32_t id : ids)
    if (id < 0 || size_t(id) >= vocab)
      throw bad_request(param, "token id " + std::to_string(id) + " is outside the vocabulary (" +
                                   std::to_string(vocab) + " tokens)");
  return ids;
}

}  // namespace hearth::server
