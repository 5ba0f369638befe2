#include "engine/grammar/tool_calls.h"

#include "engine/grammar/json_schema.h"

namespace hearth::grammar {

std::shared_ptr<const Grammar> compile_tool_calls(text::ToolCallFormat format, const nlohmann::ordered_json& tools,
                                                  std::string_view only_name, bool parallel) {
  // The format's text around a call's arguments, found by rendering a
  // marker where they go.
  constexpr std::string_view kArguments = "\x01";
  GrammarBuilder b;
  std::vector<Expr> calls;
  for (const auto& tool : tools) {
    const auto& fn = tool["function"];
    const std::string& name = fn["name"].get_ref<const std::string&>();
    if (!only_name.empty() && name != only_name) continue;
    const std::string text = text::render_tool_call(format, name, kArguments);
    const size_t at = text.find(kArguments);
    if (at == std::string::npos) return nullptr;
    const auto it = fn.find("parameters");
    const bool any = it == fn.end() || it->is_null() || it->empty();
    const nlohmann::ordered_json object = {{"type", "object"}};
    calls.push_back(b.sequence({b.literal(text.substr(0, at)), json_schema(b, any ? object : *it),
                                b.literal(text.substr(at + kArguments.size()))}));
  }
  if (calls.empty()) return nullptr;
  const Expr call = calls.size() == 1 ? calls[0] : b.choice(calls);
  return b.build(parallel ? b.repeat(call, 1, -1) : call);
}

}  // namespace hearth::grammar
