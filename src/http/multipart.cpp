#include "http/multipart.h"

#include <algorithm>
#include <cctype>

namespace hearth::http {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of `key` among "; key=value" parameters (quoted or not), if present.
std::optional<std::string> parameter(std::string_view header, std::string_view key) {
  size_t at = header.find(';');
  while (at != std::string_view::npos) {
    std::string_view rest = trim(header.substr(at + 1));
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string name = lower(trim(rest.substr(0, eq)));
    rest = trim(rest.substr(eq + 1));
    std::string value;
    size_t end = 0;
    if (!rest.empty() && rest.front() == '"') {
      for (end = 1; end < rest.size() && rest[end] != '"'; ++end) {
        if (rest[end] == '\\' && end + 1 < rest.size()) ++end;
        value += rest[end];
      }
      if (end >= rest.size()) throw MultipartError("an unterminated quoted parameter");
      ++end;
    } else {
      end = std::min(rest.find(';'), rest.size());
      value = std::string(trim(rest.substr(0, end)));
    }
    if (name == key) return value;
    const size_t next = rest.find(';', end);
    if (next == std::string_view::npos) return std::nullopt;
    at = size_t(rest.data() + next - header.data());
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  const std::string type = lower(trim(content_type.substr(0, content_type.find(';'))));
  if (type != "multipart/form-data") return std::nullopt;
  std::optional<std::string> boundary;
  try {
    boundary = parameter(content_type, "boundary");
  } catch (const MultipartError&) {
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
      const std::string name = lower(trim(line.substr(0, colon)));
      const std::string_view value = trim(line.substr(colon + 1));
      if (name == "content-disposition") {
        if (lower(value.substr(0, value.find(';'))) != "form-data")
          throw MultipartError("a part's Content-Disposition is not form-data");
        const std::optional<std::string> field = parameter(value, "name");
        if (!field) throw MultipartError("a part has no field name");
        part.name = *field;
        part.filename = parameter(value, "filename");
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
