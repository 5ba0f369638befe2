// hearth template: render a model's chat template for a conversation, the
// way transformers' apply_chat_template(tokenize=False) does. With --batch,
// renders many cases (one JSON object per line) in one process; the template
// comparison test (tests/text/test_templates.py) uses that.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "text/chat.h"

namespace hearth::cli {

namespace {

using json = nlohmann::ordered_json;

const char* kUsage =
    "usage: hearth template --model DIR --messages FILE.json [--tools FILE.json]\n"
    "                       [--add-generation-prompt] [--kwargs JSON] [--name NAME]\n"
    "       hearth template --template FILE.jinja --messages FILE.json ... [--bos TEXT] [--eos TEXT]\n"
    "       hearth template --batch FILE.jsonl   (or - for stdin)\n"
    "\n"
    "Prints the rendered prompt (no newline added). --messages holds a JSON array of\n"
    "messages, or an object with \"messages\" (and optionally \"tools\"). --name picks a\n"
    "named template when tokenizer_config.json has several.\n"
    "\n"
    "Batch lines: {\"template\": SOURCE, \"messages\": [...], \"tools\": [...]|null,\n"
    "\"add_generation_prompt\": bool, \"kwargs\": {...}, \"bos_token\": S, \"eos_token\": S};\n"
    "each gets one output line: {\"output\": TEXT} or {\"error\": TEXT, \"kind\": K,\n"
    "\"message\": TEXT, \"line\": N}.\n";

std::string read_text(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json parse_json(const std::string& text, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(what + " is not valid JSON: " + e.what());
  }
}

const char* kind_name(text::TemplateError::Kind k) {
  using K = text::TemplateError::Kind;
  switch (k) {
    case K::Syntax: return "syntax";
    case K::Raised: return "raised";
    case K::Undefined: return "undefined";
    case K::Type: return "type";
    case K::Security: return "security";
    case K::Limit: return "limit";
  }
  return "error";
}

json render_case(const json& c, std::map<std::string, std::shared_ptr<text::ChatTemplate>>& cache) {
  json out = json::object();
  try {
    std::string source = c.value("template", "");
    std::string bos = c.value("bos_token", ""), eos = c.value("eos_token", "");
    std::string key = bos + '\0' + eos + '\0' + source;
    auto it = cache.find(key);
    if (it == cache.end())
      it = cache.emplace(key, std::make_shared<text::ChatTemplate>(text::ChatTemplate::from_string(source, bos, eos))).first;
    json messages = c.contains("messages") ? c["messages"] : json::array();
    json tools = c.contains("tools") ? c["tools"] : json(nullptr);
    json kwargs = c.contains("kwargs") ? c["kwargs"] : json::object();
    out["output"] = it->second->render(messages, tools, c.value("add_generation_prompt", false), kwargs);
  } catch (const text::TemplateError& e) {
    out["error"] = e.what();
    out["kind"] = kind_name(e.kind());
    out["message"] = e.message();
    out["line"] = e.line();
  } catch (const std::exception& e) {
    out["error"] = e.what();
    out["kind"] = "error";
  }
  return out;
}

int run_batch(const std::string& path) {
  std::istringstream in(read_text(path));
  std::map<std::string, std::shared_ptr<text::ChatTemplate>> cache;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json result;
    try {
      result = render_case(json::parse(line), cache);
    } catch (const json::parse_error& e) {
      result = {{"error", std::string("bad batch line: ") + e.what()}, {"kind", "error"}};
    }
    std::string s = result.dump(-1, ' ', false, json::error_handler_t::replace);
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fputc('\n', stdout);
  }
  return 0;
}

}  // namespace

int cmd_template(int argc, char** argv) {
  Args args(argc, argv, {"add-generation-prompt", "help"});
  args.allow_only({"model", "template", "messages", "tools", "add-generation-prompt", "kwargs", "name",
                   "bos", "eos", "batch", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.has("batch")) return run_batch(args.str("batch"));
  if (!args.has("messages") || (args.has("model") == args.has("template")))
    throw std::runtime_error(std::string("need --messages and one of --model / --template\n\n") + kUsage);

  text::ChatTemplate tmpl = args.has("model")
                                ? text::ChatTemplate::load(args.str("model"), args.str("name"))
                                : text::ChatTemplate::from_string(read_text(args.str("template")),
                                                                  args.str("bos"), args.str("eos"));
  json messages = parse_json(read_text(args.str("messages")), "--messages");
  json tools = nullptr;
  if (messages.is_object()) {
    if (messages.contains("tools")) tools = messages["tools"];
    messages = messages.contains("messages") ? json(messages["messages"]) : json::array();
  }
  if (!messages.is_array()) throw std::runtime_error("--messages must hold a JSON array of messages");
  if (args.has("tools")) tools = parse_json(read_text(args.str("tools")), "--tools");
  json kwargs = args.has("kwargs") ? parse_json(args.str("kwargs"), "--kwargs") : json::object();
  if (!kwargs.is_object()) throw std::runtime_error("--kwargs must be a JSON object");

  std::string prompt = tmpl.render(messages, tools, args.has("add-generation-prompt"), kwargs);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  return 0;
}

}  // namespace hearth::cli
