// Regular expressions for tokenizers, on PCRE2 (UTF + UCP, JIT-compiled).
//
// tokenizer.json patterns are written for Oniguruma (what the Rust
// `tokenizers` crate uses). translate_oniguruma() rewrites the constructs
// whose meaning differs in PCRE2 so that matching follows Oniguruma — and
// the reference @huggingface/tokenizers port, which performs the same
// rewrite for JavaScript: `\s` is White_Space, `\w` Oniguruma's word set,
// `\h` a hex digit, `.` anything but LF, `^`/`$` line anchors on LF only,
// `(?i:...)` ASCII case folding, `X{n}+` a repeated interval, `\uHHHH`.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace hearth::text {

class Regex {
 public:
  // `pattern` is PCRE2 syntax; throws std::runtime_error on a bad pattern.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls `match(start, end)` (byte offsets) for each non-overlapping match,
  // left to right, as JavaScript's matchAll with the `u` flag finds them
  // (after an empty match the search resumes one code point later). One at
  // a time, so a long text's matches are never all held at once.
  void for_each_match(std::string_view text, const std::function<void(size_t, size_t)>& match) const;
  // True if the whole text matches.
  bool full_match(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  // Returns false when there is no match at or after `start`.
  bool search(std::string_view text, size_t start, size_t& mstart, size_t& mend) const;

  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

// Oniguruma (tokenizer.json "Regex") → PCRE2 pattern with the same meaning.
std::string translate_oniguruma(std::string_view pattern);
// Quotes a literal string for use in a PCRE2 pattern.
std::string regex_escape(std::string_view literal);

}  // namespace hearth::text
