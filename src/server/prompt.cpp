#include "server/prompt.h"

#include <algorithm>

#include "server/api_error.h"
#include "text/jinja/error.h"

namespace hearth::server {

PromptBuilder::PromptBuilder(const std::filesystem::path& model_dir, const text::Tokenizer& tokenizer)
    : tok_(tokenizer) {
  try {
    chat_ = text::ChatTemplate::load(model_dir);
    prompt_.emplace(*chat_, tok_);
    developer_role_ = chat_->source().find("developer") != std::string::npos;
    output_format_ = text::detect_output_format(chat_->source());
  } catch (const std::exception& e) {
    template_error_ = e.what();
  }
}

const std::string& PromptBuilder::template_source() const {
  static const std::string none;
  return chat_ ? chat_->source() : none;
}

std::string PromptBuilder::render_chat(const ApiRequest& r) const {
  if (!chat_)
    throw ApiError(400, "this model has no chat template (" + template_error_ + "); use /v1/completions",
                   "invalid_request_error", "messages", "no_chat_template");
  // Templates that know no developer role (most) get it as the system message
  // it replaces; OpenAI's clients send it for system instructions.
  const nlohmann::ordered_json* messages = &r.messages;
  nlohmann::ordered_json renamed;
  if (!developer_role_ &&
      std::any_of(r.messages.begin(), r.messages.end(), [](const auto& m) { return m["role"] == "developer"; })) {
    renamed = r.messages;
    for (auto& m : renamed)
      if (m["role"] == "developer") m["role"] = "system";
    messages = &renamed;
  }
  // tool_choice none: the model is not shown the tools.
  const nlohmann::ordered_json none;
  const auto& tools = r.tool_choice.mode == ToolChoice::Mode::None ? none : r.tools;
  try {
    return prompt_->render(*messages, tools, true, r.template_kwargs);
  } catch (const text::TemplateError& e) {
    throw bad_request("messages", "the chat template cannot render these messages: " + e.message());
  }
}

std::vector<int32_t> PromptBuilder::build(const ApiRequest& r, GeneratedHistory* history,
                                          std::string* rendered_out) const {
  std::vector<int32_t> ids;
  if (r.is_chat()) {
    const std::string rendered = render_chat(r);
    if (rendered_out) *rendered_out = rendered;
    std::vector<std::vector<int32_t>> found;  // owns the ids the spans below point into
    std::vector<text::ChatPrompt::KnownIds> known;
    found.reserve(r.messages.size());
    if (history)
      for (const auto& m : r.messages) {
        auto role = m.find("role"), content = m.find("content");
        if (role == m.end() || *role != "assistant" || content == m.end() || !content->is_string()) continue;
        if (auto ids_of = history->find(content->get_ref<const std::string&>())) found.push_back(std::move(*ids_of));
        else continue;
        known.push_back({content->get_ref<const std::string&>(), found.back()});
      }
    ids = prompt_->tokenize(rendered, known);
  } else if (r.prompt_is_ids) {
    ids = r.prompt_ids;
  } else {
    ids = tok_.encode(r.prompt_text, true);
  }
  const std::string param = r.is_chat() ? "messages" : "prompt";
  if (ids.empty()) throw bad_request(param, "the prompt is empty");
  const size_t vocab = tok_.vocab_size();
  for (int32_t id : ids)
    if (id < 0 || size_t(id) >= vocab)
      throw bad_request(param, "token id " + std::to_string(id) + " is outside the vocabulary (" +
                                   std::to_string(vocab) + " tokens)");
  return ids;
}

}  // namespace hearth::server
