// Golden test: every case of the template comparison test
// (tests/text/test_templates.py, stored by its --write-golden in
// tests/text/template_golden.jsonl) must render byte-identically to Python
// jinja2, raise the same raise_exception message, or fail where Python failed.
// Cases whose output depends on today's date are left to the live test.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "text/chat.h"

namespace {

using hearth::text::ChatTemplate;
using hearth::text::TemplateError;
using json = nlohmann::ordered_json;

const std::string kDir = std::string(HEARTH_SOURCE_DIR) + "/tests/text/";

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(TextChatGolden, AllTemplatesMatchPythonJinja2) {
  std::ifstream in(kDir + "template_golden.jsonl");
  ASSERT_TRUE(in) << "missing " << kDir << "template_golden.jsonl";
  std::map<std::string, std::string> sources;
  int checked = 0, failed = 0;
  std::string line;
  while (std::getline(in, line)) {
    json c = json::parse(line);
    if (c["time_dependent"].get<bool>()) continue;
    std::string name = c["template"];
    if (!sources.count(name)) sources[name] = read(kDir + "templates/" + name + ".jinja");
    std::string status = c["status"];
    std::string got, error_kind;
    TemplateError::Kind kind{};
    try {
      auto t = ChatTemplate::from_string(sources[name], c["bos_token"], c["eos_token"]);
      got = t.render(c["messages"], c["tools"], c["add_generation_prompt"], c["kwargs"]);
      error_kind = "none";
    } catch (const TemplateError& e) {
      kind = e.kind();
      error_kind = kind == TemplateError::Kind::Raised ? "raised" : "error";
      got = e.message();
    }
    ++checked;
    bool ok = status == "ok" ? (error_kind == "none" && got == c["text"].get<std::string>())
              : status == "raised" ? (error_kind == "raised" && got == c["text"].get<std::string>())
                                   : error_kind == "error";
    if (!ok) {
      ++failed;
      ADD_FAILURE() << c["id"].get<std::string>() << ": python " << status << ", hearth " << error_kind
                    << ": " << got.substr(0, 300);
    }
  }
  EXPECT_GT(checked, 1000);
  std::printf("golden: %d checked, %d failed\n", checked, failed);
}

}  // namespace
