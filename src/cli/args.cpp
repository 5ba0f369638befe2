#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace hearth::cli {

Args::Args(int argc, char** argv, std::vector<std::string> flags) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
      value = "1";
    } else {
      if (i + 1 >= argc) throw std::runtime_error("option --" + name + " needs a value");
      value = argv[++i];
    }
    values_[name] = value;
  }
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

long long Args::integer(const std::string& name, long long fallback, long long min, long long max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0')
    throw std::runtime_error("option --" + name + " expects an integer, got '" + it->second + "'");
  if (errno == ERANGE) throw std::runtime_error("option --" + name + ": '" + it->second + "' is out of range");
  if (v < min || v > max) {
    const std::string range = max == LLONG_MAX   ? "at least " + std::to_string(min)
                              : min == LLONG_MIN ? "at most " + std::to_string(max)
                                                 : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    throw std::runtime_error("option --" + name + " must be " + range + ", got '" + it->second + "'");
  }
  return v;
}

uint64_t Args::seed(const std::string& name, uint64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  if (text.starts_with('-')) return uint64_t(integer(name, 0));
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || !std::isdigit(static_cast<unsigned char>(text[0])))
    throw std::runtime_error("option --" + name + " expects an integer, got '" + text + "'");
  if (errno == ERANGE)
    throw std::runtime_error("option --" + name + ": '" + text + "' is out of range (64 bits)");
  return v;
}

double Args::number(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0')
    throw std::runtime_error("option --" + name + " expects a number, got '" + it->second + "'");
  if (!(std::abs(v) <= kMaxNumber))
    throw std::runtime_error("option --" + name + " must be between -1e9 and 1e9, got '" + it->second + "'");
  return v;
}

void Args::allow_only(const std::vector<std::string>& known) const {
  for (const auto& [name, _] : values_)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw std::runtime_error("unknown option --" + name);
}

void Args::no_positional() const {
  if (!positional_.empty())
    throw std::runtime_error("unexpected argument '" + positional_[0] + "' (options start with --; see --help)");
}

std::vector<int64_t> parse_integers(const std::string& list, const std::string& option,
                                    const std::string& what) {
  std::vector<int64_t> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw std::runtime_error(option + ": '" + item + "' is not " + what);
    }
  }
  return out;
}

std::vector<int32_t> parse_ids(const std::string& list, const std::string& option) {
  const std::vector<int64_t> n = parse_integers(list, option, "a token id");
  return std::vector<int32_t>(n.begin(), n.end());
}

}  // namespace hearth::cli
