// The grammar that makes a model call a tool, in its own format: what
// tool_choice "required" (any of the tools) or a named tool compiles to.
// Each call is the text the format writes around the arguments
// (text::render_tool_call) with the tool's parameter schema in between,
// so even a weak model emits a call that parses and validates.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"
#include "text/tools/output_parser.h"

namespace hearth::grammar {

// tools: OpenAI function tools ({"type": "function", "function": {"name",
// "parameters"}}); only_name: "" for any of them, else that one; parallel:
// one call or more (else exactly one). Qwen3-Coder's XML parameters are
// constrained when every parameter is a plain string (raw text without
// '<'), a string enum, or JSON of one non-string type, and the schema has
// no $ref; Gemma's Python calls when every parameter is a string (plain or
// enum), a number or a boolean. Null for the rest and None: those requests
// are parsed but not constrained.
// Throws GrammarError for a parameter schema it cannot compile.
std::shared_ptr<const Grammar> compile_tool_calls(text::ToolCallFormat format, const nlohmann::ordered_json& tools,
                                                  std::string_view only_name, bool parallel);
// The same calls as an expression of b (to be a choice beside another
// answer); nullopt where compile_tool_calls gives null.
std::optional<Expr> tool_calls(GrammarBuilder& b, text::ToolCallFormat format, const nlohmann::ordered_json& tools,
                               std::string_view only_name, bool parallel);

}  // namespace hearth::grammar
