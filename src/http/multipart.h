// multipart/form-data request bodies (RFC 7578), as OpenAI's audio routes
// take them: each part's name, filename, content type and bytes.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::http {

struct FormPart {
  std::string name;
  std::optional<std::string> filename;  // set for file fields
  std::string content_type;             // "" if the part gave none
  std::string_view data;                // inside the body passed to parse_multipart
};

struct MultipartError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The boundary of a "multipart/form-data; boundary=..." content type, or
// nothing if the type is another.
std::optional<std::string> multipart_boundary(std::string_view content_type);

// Splits a body; the parts point into it. Throws MultipartError, naming what
// is wrong, for a body that does not follow the format.
std::vector<FormPart> parse_multipart(std::string_view body, std::string_view boundary);

}  // namespace hearth::http
