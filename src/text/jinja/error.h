// Errors raised while parsing or rendering a Jinja template.
#pragma once

#include <stdexcept>
#include <string>

namespace hearth::text {

// A template failed to parse or to render: a syntax error, `raise_exception`
// called by the template, an undefined value used where a value is needed,
// a type error, ... what() reads "template error (line N): message".
class TemplateError : public std::runtime_error {
 public:
  enum class Kind {
    Syntax,     // the template does not parse
    Raised,     // the template called raise_exception(message)
    Undefined,  // an undefined value was used (attribute, call, arithmetic)
    Type,       // wrong type for an operation, filter or test
    Security,   // a mutating method (list.append, dict.update...) in the sandbox
    Limit,      // recursion depth, output size, range size
  };

  TemplateError(Kind kind, std::string message, int line = 0)
      : std::runtime_error(format(message, line)), kind_(kind), message_(std::move(message)), line_(line) {}

  Kind kind() const { return kind_; }
  // The message alone, without the line (for raise_exception: the template's own text).
  const std::string& message() const { return message_; }
  // 1-based line of the template where the error happened; 0 if unknown.
  int line() const { return line_; }

  // Returns a copy that carries `line` (used when the error crosses an AST node).
  TemplateError with_line(int line) const { return TemplateError(kind_, message_, line); }

 private:
  static std::string format(const std::string& message, int line) {
    if (line <= 0) return "template error: " + message;
    return "template error (line " + std::to_string(line) + "): " + message;
  }
  Kind kind_;
  std::string message_;
  int line_;
};

}  // namespace hearth::text
