// A failed system call as an exception. errno is read before the message is
// built: building it allocates, an allocation may set errno, and the
// operands of `+` are unsequenced, so `"..." + std::strerror(errno)` may
// read errno after a string has changed it.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace hearth {

// Throws std::runtime_error("<what()>: <err's text>"), err read before the
// message is built (saved by the caller where a call since, a close say,
// may have changed errno).
template <class What>
[[noreturn]] void throw_errno(int err, const What& what) {
  throw std::runtime_error(std::string(what()) + ": " + std::strerror(err));
}

template <class What>
[[noreturn]] void throw_errno(const What& what) {
  throw_errno(errno, what);
}

}  // namespace hearth
