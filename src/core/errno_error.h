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

// Throws std::runtime_error("<what()>: <errno's text>"); `what` builds the
// message's start, after errno is read.
template <class What>
[[noreturn]] void throw_errno(const What& what) {
  const int err = errno;
  throw std::runtime_error(std::string(what()) + ": " + std::strerror(err));
}

}  // namespace hearth
