// Shared by the text/tools tests: feeding model output to OutputParser and
// comparing the events, whole and split at every byte.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tools/output_parser.h"

namespace tool_calls_test {

using namespace hearth::text;
using Kind = OutputEvent::Kind;
using Events = std::vector<std::string>;  // "C:text", "R:text", "T:name args" (adjacent texts merged)

const OutputFormat kHermes{ToolCallFormat::Hermes, "<think>", "</think>"};
const OutputFormat kQwen3Coder{ToolCallFormat::Qwen3Coder, "<think>", "</think>"};
const OutputFormat kLlama3{ToolCallFormat::Llama3Json, "", ""};
const OutputFormat kMistral{ToolCallFormat::Mistral, "", ""};
const OutputFormat kMagistral{ToolCallFormat::Mistral, "[THINK]", "[/THINK]"};
const OutputFormat kDeepSeek{ToolCallFormat::DeepSeek, "<think>", "</think>"};
const OutputFormat kFireFunction{ToolCallFormat::FireFunction, "", ""};
const OutputFormat kFunctionary{ToolCallFormat::FunctionaryV31, "", ""};
const OutputFormat kCommandR7B{ToolCallFormat::CommandR7B, "<|START_THINKING|>", "<|END_THINKING|>"};
const OutputFormat kGemma{ToolCallFormat::Gemma, "", ""};

struct Options {
  bool tools = true;
  bool in_reasoning = false;
};

// The events of feeding the pieces, as strings, adjacent texts of one kind
// merged (how they are split is the parser's business, what they say is not).
inline Events run(const OutputFormat& f, Options o, const std::vector<std::string_view>& pieces) {
  OutputParser p(f, o.tools, o.in_reasoning);
  std::vector<OutputEvent> events;
  for (auto piece : pieces) p.feed(piece, events);
  p.finish(events);
  Events out;
  for (const auto& e : events) {
    if (e.kind == Kind::ToolCall) {
      std::string id = e.call.id_hint.empty() ? "" : " #" + e.call.id_hint;
      out.push_back("T:" + e.call.name + " " + e.call.arguments + id);
      continue;
    }
    EXPECT_FALSE(e.text.empty()) << "empty text event";
    EXPECT_NO_THROW((void)nlohmann::json(e.text).dump()) << "not whole UTF-8 characters";
    std::string tag = e.kind == Kind::Content ? "C:" : "R:";
    if (!out.empty() && out.back().starts_with(tag)) out.back() += e.text;
    else out.push_back(tag + e.text);
  }
  return out;
}

// Parses `text` whole, split in two at every byte, and byte by byte; all
// must give the same events. Returns them.
inline Events parse(const OutputFormat& f, std::string_view text, Options o = {}) {
  Events whole = run(f, o, {text});
  for (size_t i = 1; i < text.size(); ++i)
    EXPECT_EQ(run(f, o, {text.substr(0, i), text.substr(i)}), whole) << "split at byte " << i << " of: " << text;
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  EXPECT_EQ(run(f, o, bytes), whole) << "byte by byte: " << text;
  return whole;
}

}  // namespace tool_calls_test
