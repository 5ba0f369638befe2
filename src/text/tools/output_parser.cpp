// The streaming splitter: one loop for every format, driven by the format's
// reasoning markers and tool-call sections (tool_syntax.h).
//
// Three modes: content (looking for a section opener or, at the start, the
// reasoning opener), reasoning (looking for its closer) and section (holding
// a tool call's text until the section ends, then parsing it). Text that
// might still turn out to be the start of a marker, or is an incomplete UTF-8
// character, is held back; everything else goes out at once.
//
// Whitespace next to markup is not content (llama.cpp's chat parser: the
// reasoning is stripped and spaces after </think> and after tool calls are
// consumed). So whitespace at the end of content or reasoning is held until
// more text shows whether markup follows, and whitespace right after markup
// is dropped. vLLM instead keeps the "\n\n" after </think> in the content;
// clients render both the same.
#include "text/tools/output_parser.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "text/tools/tool_syntax.h"

namespace hearth::text {

using tools::Section;

namespace {

constexpr std::string_view kSpaces = " \t\r\n";
constexpr size_t kMaxCallHeader = 4096;  // bytes before a streamed call's arguments begin

// Bytes at the end of s that begin a UTF-8 character not yet complete.
size_t incomplete_utf8_tail(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

// The longest proper prefix of marker that s ends with.
size_t partial_marker_at_end(std::string_view s, std::string_view marker) {
  for (size_t k = std::min(marker.size() - 1, s.size()); k > 0; --k)
    if (s.substr(s.size() - k) == marker.substr(0, k)) return k;
  return 0;
}

}  // namespace

struct OutputParser::State {
  enum class Mode { Content, Reasoning, Section };

  OutputFormat format;
  const std::vector<Section>* sections;
  const nlohmann::ordered_json* tools;  // the request's, for typing text arguments; may be null
  Mode mode;
  std::string buf;               // input not handled yet
  std::string held_space;        // whitespace ending the content or reasoning so far
  std::string skip_chars;        // leading characters to drop (right after markup)
  bool at_start = true;          // only whitespace since the output began or the last markup
  const Section* section = nullptr;
  std::string section_prefix;    // held whitespace + opener: content again if the section fails
  size_t close_searched = 0;     // where the search for the open section's close resumes (long calls stay linear)
  tools::BodyEndScan body_end_scan;  // the open section's end where it has no closing marker
  bool stream_arguments = false;
  // The open section's call whose arguments stream (json_call sections).
  struct Streamed {
    bool started = false, given_up = false;
    std::string name;
    size_t sent = 0;  // buf offset up to which the arguments went out
    size_t arguments = 0;
    tools::JsonObjectScan scan;
  } streamed;

  // A marker opening something in content mode, found at pos.
  struct Opener {
    size_t pos = std::string::npos;
    const Section* section = nullptr;  // null: the reasoning opener
  };

  void emit(OutputEvent::Kind kind, std::string_view text, std::vector<OutputEvent>& out) {
    if (!skip_chars.empty()) {
      size_t keep = text.find_first_not_of(skip_chars);
      if (keep == std::string_view::npos) return;
      text.remove_prefix(keep);
      skip_chars.clear();
    }
    size_t end = text.find_last_not_of(kSpaces) + 1;  // npos + 1 == 0: all whitespace
    if (end > 0) {
      out.push_back({kind, held_space + std::string(text.substr(0, end)), {}});
      held_space.clear();
      at_start = false;
    }
    held_space += text.substr(end);
  }

  // Whether an opener may stand at pos: start-only ones need nothing but
  // whitespace (or the separators after markup) before them since the start
  // or the last markup.
  bool may_open_at(bool start_only, size_t pos) const {
    std::string_view before = std::string_view(buf).substr(0, pos);
    return !start_only || (at_start && before.find_first_not_of(skip_chars.empty() ? kSpaces : skip_chars) ==
                                           std::string_view::npos);
  }

  Opener find_opener() const {
    Opener best;
    auto consider = [&](const std::string& marker, bool start_only, const Section* s) {
      size_t pos = buf.find(marker);
      if (pos < best.pos && may_open_at(start_only, pos)) best = {pos, s};
    };
    if (!format.think_open.empty()) consider(format.think_open, true, nullptr);
    for (const Section& s : *sections) consider(s.open, s.start_only, &s);
    return best;
  }

  // How many bytes at the end of buf may still become an opener.
  size_t opener_holdback() const {
    size_t hold = 0;
    auto consider = [&](const std::string& marker, bool start_only) {
      size_t k = partial_marker_at_end(buf, marker);
      if (k > hold && may_open_at(start_only, buf.size() - k)) hold = k;
    };
    if (!format.think_open.empty()) consider(format.think_open, true);
    for (const Section& s : *sections) consider(s.open, s.start_only);
    return hold;
  }

  // One step of work; false when nothing more can be done with buf now.
  bool step(bool final, std::vector<OutputEvent>& out) {
    switch (mode) {
      case Mode::Content: return content_step(final, out);
      case Mode::Reasoning: return reasoning_step(final, out);
      case Mode::Section: return section_step(final, out);
    }
    return false;
  }

  bool content_step(bool final, std::vector<OutputEvent>& out) {
    Opener o = find_opener();
    if (o.pos == std::string::npos) {
      size_t hold = final ? 0 : std::max(opener_holdback(), incomplete_utf8_tail(buf));
      emit(OutputEvent::Kind::Content, std::string_view(buf).substr(0, buf.size() - hold), out);
      buf.erase(0, buf.size() - hold);
      if (final && !held_space.empty()) {
        out.push_back({OutputEvent::Kind::Content, std::move(held_space), {}});
        held_space.clear();
      }
      return false;
    }
    emit(OutputEvent::Kind::Content, std::string_view(buf).substr(0, o.pos), out);
    if (!o.section) {
      buf.erase(0, o.pos + format.think_open.size());
      held_space.clear();
      mode = Mode::Reasoning;
      skip_chars = kSpaces;
      return true;
    }
    if (o.section->drop) {
      buf.erase(0, o.pos + o.section->open.size());
      after_markup(std::string(kSpaces));
      return true;
    }
    section = o.section;
    close_searched = 0;
    body_end_scan = {};
    size_t opener = section->open_in_body ? 0 : section->open.size();
    section_prefix = std::move(held_space) + buf.substr(o.pos, opener);
    held_space.clear();
    skip_chars.clear();
    buf.erase(0, o.pos + opener);
    mode = Mode::Section;
    return true;
  }

  bool reasoning_step(bool final, std::vector<OutputEvent>& out) {
    size_t close = buf.find(format.think_close);
    if (close == std::string::npos) {
      size_t hold = final ? 0 : std::max(partial_marker_at_end(buf, format.think_close), incomplete_utf8_tail(buf));
      emit(OutputEvent::Kind::Reasoning, std::string_view(buf).substr(0, buf.size() - hold), out);
      buf.erase(0, buf.size() - hold);
      if (final) held_space.clear();
      return false;
    }
    emit(OutputEvent::Kind::Reasoning, std::string_view(buf).substr(0, close), out);
    buf.erase(0, close + format.think_close.size());
    after_markup(std::string(kSpaces));
    return true;
  }

  // Sends what is new of the open section's arguments, in buf[0, limit).
  void stream_section(size_t limit, std::vector<OutputEvent>& out) {
    Streamed& st = streamed;
    if (st.given_up || st.scan.complete() || st.scan.failed()) return;
    if (!st.started) {
      using State = tools::CallHeader::State;
      const tools::CallHeader h = tools::json_call_header(std::string_view(buf).substr(0, limit));
      // Each push reads the header again: one that never reaches its
      // arguments (a name of megabytes) is parsed whole at the end instead.
      if (h.state == State::NoMatch || (h.state == State::Incomplete && buf.size() > kMaxCallHeader)) st.given_up = true;
      if (h.state != State::Match) return;
      st.started = true;
      st.name = h.name;
      st.arguments = st.sent = h.arguments;
      out.push_back({OutputEvent::Kind::ToolCallStart, "", ToolCall{"", h.name, ""}});
    }
    const size_t end = st.scan.feed(buf, st.sent, limit - incomplete_utf8_tail(std::string_view(buf).substr(0, limit)));
    if (end > st.sent) out.push_back({OutputEvent::Kind::ToolCallArguments, buf.substr(st.sent, end - st.sent), {}});
    st.sent = end;
  }

  // Ends the streamed call: its arguments are what went out.
  void end_streamed(bool parsed, std::vector<OutputEvent>& out) {
    out.push_back({OutputEvent::Kind::ToolCall, "",
                   ToolCall{"", streamed.name, buf.substr(streamed.arguments, streamed.sent - streamed.arguments)}, true,
                   !parsed});
  }

  bool section_step(bool final, std::vector<OutputEvent>& out) {
    if (!streamed.started && section->may_be_calls && !section->may_be_calls(buf)) {
      section_as_content(section->open_in_body ? section->open.size() : 0, out);  // the rest is read again
      return true;
    }
    size_t end = std::string::npos, body_end = std::string::npos;
    if (!section->close.empty()) {
      body_end = buf.find(section->close, close_searched);
      if (body_end != std::string::npos) end = body_end + section->close.size();
      else close_searched = buf.size() - std::min(buf.size(), section->close.size() - 1);
    } else {
      body_end = end = body_end_scan.find(buf);
    }
    // Arguments stream up to the close at most, or to what may be its
    // start (an unterminated string would take the close and what follows).
    if (stream_arguments && section->json_call) {
      size_t limit = std::min(body_end, buf.size());
      if (body_end == std::string::npos && !section->close.empty()) limit -= partial_marker_at_end(buf, section->close);
      stream_section(limit, out);
    }
    if (end == std::string::npos && !final) return false;
    if (end == std::string::npos && section->close_optional_at_end) body_end = end = buf.size();
    std::optional<tools::Calls> calls;
    if (end != std::string::npos) calls = section->parse(std::string_view(buf).substr(0, body_end));
    else end = buf.size();  // never closed: all of it is content
    // A call that streamed ends with the arguments that went out (the
    // whole object once its scan completed); if the markup did not parse,
    // it is content besides.
    const bool started = streamed.started;
    if (started) {
      end_streamed(calls.has_value(), out);
      if (calls && !calls->empty()) {
        out.back().call.id_hint = calls->front().id_hint;
        calls->erase(calls->begin());
      }
    }
    streamed = Streamed{};
    if (!calls) {
      section_as_content(end, out);
      return true;
    }
    buf.erase(0, end);
    for (ToolCall& call : *calls) {
      if (section->text_arguments) call.arguments = tools::type_text_arguments(call.arguments, tools, call.name);
      out.push_back({OutputEvent::Kind::ToolCall, "", std::move(call)});
    }
    after_markup(std::string(kSpaces) + section->separators);
    section = nullptr;
    section_prefix.clear();
    return true;
  }

  // Ends the open section as content: its prefix (held whitespace and the
  // opener) and buf[0, n).
  void section_as_content(size_t n, std::vector<OutputEvent>& out) {
    std::string text = std::move(section_prefix) + buf.substr(0, n);
    section_prefix.clear();
    buf.erase(0, n);
    mode = Mode::Content;
    section = nullptr;
    emit(OutputEvent::Kind::Content, text, out);
  }

  void after_markup(std::string skip) {
    mode = Mode::Content;
    held_space.clear();
    skip_chars = std::move(skip);
    at_start = true;
  }

  void run(bool final, std::vector<OutputEvent>& out) {
    while (step(final, out)) {
    }
  }
};

OutputParser::OutputParser(OutputFormat format, bool tools_enabled, bool in_reasoning,
                           const nlohmann::ordered_json* tools, bool stream_arguments)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.tools = tools;
  s.stream_arguments = stream_arguments;
  s.sections = &tools::sections_of(tools_enabled ? format.tool_calls : ToolCallFormat::None);
  bool reasoning = in_reasoning && !format.think_close.empty();
  s.format = std::move(format);
  s.mode = reasoning ? State::Mode::Reasoning : State::Mode::Content;
  if (reasoning) s.skip_chars = kSpaces;
}

OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

void OutputParser::feed(std::string_view text, std::vector<OutputEvent>& out) {
  state_->buf.append(text);
  state_->run(false, out);
}

void OutputParser::finish(std::vector<OutputEvent>& out) { state_->run(true, out); }
bool OutputParser::in_reasoning() const { return state_->mode == State::Mode::Reasoning; }

}  // namespace hearth::text
