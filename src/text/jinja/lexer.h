// Splits a Jinja template into tokens exactly as jinja2's lexer does with
// trim_blocks and lstrip_blocks on (Hugging Face's chat-template settings):
// text between tags, whitespace control (`{%-`, `-%}`, `{%+`, `+%}`),
// comments, raw blocks, and the expression tokens inside tags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hearth::text::jinja {

enum class Tok { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok type = Tok::Eof;
  std::string text;  // Data text, Name, decoded String, or the operator
  int64_t ival = 0;
  double fval = 0;
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateError (kind Syntax) with the line of the problem.
std::vector<Token> tokenize(const std::string& source, const LexOptions& opt = {});

}  // namespace hearth::text::jinja
