// Splitting a model's generated text into content, reasoning and tool calls,
// for each chat-template family's markup, while it streams.
//
// The format is chosen from the chat template's source (the markers it
// prints), not from the model's name: a fine-tune that keeps its base's
// template keeps its base's markup. Markup that does not parse is returned
// as content, never dropped.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hearth::text {

enum class ToolCallFormat {
  None,        // no tool-call markup: everything is content
  Hermes,      // <tool_call>{"name": .., "arguments": {..}}</tool_call> (Hermes 2/3, Qwen2.5, Qwen3)
  Qwen3Coder,  // <tool_call><function=NAME><parameter=P>value</parameter>..</function></tool_call>
  Llama3Json,  // {"name": .., "parameters": {..}} at the start (or after <|python_tag|>), several separated by ;
  Mistral,     // [TOOL_CALLS][{"name": .., "arguments": {..}, "id": ..}, ..] or [TOOL_CALLS]NAME[ARGS]{..}
  DeepSeek,    // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```<｜tool▁call▁end｜>..<｜tool▁calls▁end｜>
  FireFunction,   // functools[{"name": .., "arguments": {..}}, ..] (firefunction v2)
  FunctionaryV31, // <function=NAME>{..}</function> (functionary v3.1, Llama 3.1 style)
  CommandR7B,     // <|START_ACTION|>[{"tool_call_id": .., "tool_name": .., "parameters": {..}}]<|END_ACTION|>;
                  // <|START_RESPONSE|> / <|END_RESPONSE|> around the answer are dropped
  Gemma,          // [NAME(arg=value, ..), ..] at the start, or in a ```tool_code block (Python call syntax, as
                  // Google's Gemma 3 function-calling guides prompt; no template prints it)
};

struct OutputFormat {
  ToolCallFormat tool_calls = ToolCallFormat::None;
  // e.g. "<think>", "</think>"; empty: the family has no reasoning markup.
  std::string think_open, think_close;
};

// From the chat template's source text.
OutputFormat detect_output_format(std::string_view template_source);

// Whether a rendered prompt leaves a reasoning block open for the model
// (ends with think_open and optional whitespace, as DeepSeek-R1's and
// Qwen3's generation prompts can): pass it as OutputParser's in_reasoning.
bool prompt_opens_reasoning(const OutputFormat& format, std::string_view prompt);

// The literal text every tool call of this format starts with (what a
// constrained-decoding grammar for tool_choice "required" must begin with);
// empty for None. For Llama3Json it is `{"name": "`, the start of the JSON
// object the Llama 3 templates ask for.
std::string tool_call_prefix(ToolCallFormat format);

// One call as the model would write it in this format (the parser reads it
// back as that call). arguments_json: a JSON object's text. Empty for None.
std::string render_tool_call(ToolCallFormat format, std::string_view name, std::string_view arguments_json);

struct ToolCall {
  std::string id_hint;    // the id the model wrote, where the format has one (Mistral, Command R7B); else empty
  std::string name;
  std::string arguments;  // compact JSON text of the arguments object, keys in the model's order
};

struct OutputEvent {
  enum class Kind { Content, Reasoning, ToolCall, ToolCallStart, ToolCallArguments } kind;
  // Content / Reasoning: text to append (whole UTF-8 characters);
  // ToolCallArguments: more of the open call's arguments text.
  std::string text;
  // ToolCall: one complete, parsed call (calls come in order);
  // ToolCallStart: a call whose arguments stream next (its name only).
  ToolCall call;
  // ToolCall: it ends the call a ToolCallStart opened. Its arguments are
  // the text streamed, which may be cut short: the markup did not parse
  // (what followed is then content) or the output ended inside it.
  bool ends_streamed = false;
  // ToolCall with ends_streamed: the markup did not parse, so this is no
  // call the model made (its text follows as content) and a reply's
  // finish reason must not say tool_calls for it.
  bool broken = false;
};

// Streaming: content and reasoning come out as soon as they cannot be the
// start of a marker; a tool call comes out whole once its markup has closed.
// With stream_arguments, a call written as a JSON object (Hermes/Qwen,
// Llama 3, Mistral's JSON form, FireFunction, Command R7B) opens as soon as
// its name is known and its arguments come out as they are written, as far
// as they can be JSON (ToolCallStart, ToolCallArguments, then the ToolCall
// that ends it). Whitespace that only separates markup (after </think>,
// between and after tool calls, around reasoning) is dropped, as llama.cpp's
// parser does; other text is kept byte for byte.
class OutputParser {
 public:
  // tools_enabled: the request offered tools (otherwise tool markup is plain
  // content). in_reasoning: the rendered prompt already opened a reasoning
  // block (see prompt_opens_reasoning), so output starts as reasoning and a
  // bare think_close ends it. tools: the request's tools (OpenAI shape), if
  // any; Qwen3-Coder writes argument values as bare text, and their JSON
  // types come from the tool's parameter schema (as vLLM's qwen3_coder
  // parser does), else a value is JSON if it parses as JSON, else a string.
  // Kept by pointer: it must outlive the parser.
  OutputParser(OutputFormat format, bool tools_enabled, bool in_reasoning,
               const nlohmann::ordered_json* tools = nullptr, bool stream_arguments = false);
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;

  // Any split of the text is fine, even inside a UTF-8 character or a marker.
  void feed(std::string_view text, std::vector<OutputEvent>& out);
  // End of output: flush what was held back; an unclosed tool call is content.
  void finish(std::vector<OutputEvent>& out);
  // Inside a reasoning block (what was fed so far opened it and has not closed it).
  bool in_reasoning() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hearth::text
