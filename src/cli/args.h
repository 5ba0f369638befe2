// A small command-line option parser shared by the subcommands.
// Options are "--name value" or "--name=value"; flags are "--name".
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace hearth::cli {

class Args {
 public:
  // `flags` lists the options that take no value; anything else starting with
  // "--" takes one. Non-option words are kept in positional().
  Args(int argc, char** argv, std::vector<std::string> flags = {});

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string str(const std::string& name, const std::string& fallback = "") const;
  // An integer, in [min, max]: a value outside is an error naming the range
  // (never a wrap to another value by a narrowing cast).
  long long integer(const std::string& name, long long fallback, long long min = LLONG_MIN,
                    long long max = LLONG_MAX) const;
  // A seed: any 64-bit integer, signed or unsigned, as the server's `seed`
  // takes it (a negative one is its two's complement).
  uint64_t seed(const std::string& name, uint64_t fallback) const;
  // A number within ±kMaxNumber (finite): seconds, GB and the like stay far
  // from the limits of the integer types they are turned into.
  static constexpr double kMaxNumber = 1e9;
  double number(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // Throws if an option outside `known` was given: typos must not pass silently.
  void allow_only(const std::vector<std::string>& known) const;
  // Throws if a word that is no option was given ("hearth generate 'text'",
  // "-port 9000"), for commands that take none.
  void no_positional() const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// "1,2,3" as integers; option names the option in the error, and `what`
// says what each one is ("a token id").
std::vector<int64_t> parse_integers(const std::string& list, const std::string& option,
                                    const std::string& what);
// "1,2,3" as token ids; option names the option in the error.
std::vector<int32_t> parse_ids(const std::string& list, const std::string& option);

}  // namespace hearth::cli
