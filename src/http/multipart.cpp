#include "http/multipart.h"

#include "http/message.h"

#include <algorithm>
#include <cctype>

namespace hearth::http {

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  if (media_type(content_type) != "multipart/form-data") return std::nullopt;
  std::optional<std::string> boundary;
  try {
    boundary = header_parameter(content_type, "boundary");
  } catch (const std::invalid_argument&) {
    throw MultipartError("multipart/form-data with a malformed boundary parameter");
  }
  if (!boundary || boundary->empty() || boundary->size() > 70)
    throw MultipartError("multipart/form-data needs a boundary of 1 to 70 characters");
  return boundary;
}

std::vector<FormPart> parse_multipart(std::string_view body, std::string_view boundary) {
  const std::string delimiter = "--" + std::string(boundary);
  // The first delimiter may open the body or follow a preamble line.
  size_t at = body.starts_with(delimiter) ? 0 : body.find("\r\n" + delimiter);
  if (at == std::string_view::npos)
    throw MultipartError("the body has no part with the declared boundary");
  if (at > 0) at += 2;
  std::vector<FormPart> parts;
  for (;;) {
    at += delimiter.size();
    if (body.substr(at, 2) == "--") return parts;  // the closing delimiter
    // Transport padding, then the line break that ends the delimiter line.
    while (at < body.size() && (body[at] == ' ' || body[at] == '\t')) ++at;
    if (body.substr(at, 2) != "\r\n") throw MultipartError("a boundary line does not end in CRLF");
    at += 2;
    const size_t head_end = body.find("\r\n\r\n", at);
    if (head_end == std::string_view::npos) throw MultipartError("a part's headers do not end");
    FormPart part;
    bool disposition = false;
    for (std::string_view head = body.substr(at, head_end - at); !head.empty();) {
      const size_t eol = std::min(head.find("\r\n"), head.size());
      const std::string_view line = head.substr(0, eol);
      head.remove_prefix(std::min(head.size(), eol + 2));
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) throw MultipartError("a part header has no ':'");
      const std::string name = ascii_lower(trim_ows(line.substr(0, colon)));
      const std::string_view value = trim_ows(line.substr(colon + 1));
      if (name == "content-disposition") {
        if (media_type(value) != "form-data")
          throw MultipartError("a part's Content-Disposition is not form-data");
        std::optional<std::string> field;
        try {
          field = header_parameter(value, "name");
          part.filename = header_parameter(value, "filename");
        } catch (const std::invalid_argument& e) {
          throw MultipartError(std::string("a part's Content-Disposition: ") + e.what());
        }
        if (!field) throw MultipartError("a part has no field name");
        part.name = *field;
        disposition = true;
      } else if (name == "content-type") {
        part.content_type = std::string(value);
      }
    }
    if (!disposition) throw MultipartError("a part has no Content-Disposition header");
    const size_t data = head_end + 4;
    const size_t end = body.find("\r\n" + delimiter, data);
    if (end == std::string_view::npos)
      throw MultipartError("the body ends inside a part (no closing boundary)");
    part.data = body.substr(data, end - data);
    parts.push_back(std::move(part));
    at = end + 2;
  }
}

}  // namespace hearth::http
