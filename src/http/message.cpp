#include "http/message.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace hearth::http {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

void Headers::add(std::string name, std::string value) {
  fields_.emplace_back(std::move(name), std::move(value));
}

void Headers::set(const std::string& name, std::string value) {
  std::erase_if(fields_, [&](const auto& f) { return same_name(f.first, name); });
  fields_.emplace_back(name, std::move(value));
}

const std::string* Headers::find(std::string_view name) const {
  for (const auto& [n, v] : fields_)
    if (same_name(n, name)) return &v;
  return nullptr;
}

std::shared_ptr<void> ClientPresence::on_gone(std::function<void()> gone) {
  std::unique_lock lock(mutex_);
  if (gone_) {
    lock.unlock();
    gone();
    return nullptr;
  }
  const int id = next_id_++;
  subscribers_.emplace_back(id, std::move(gone));
  // The token only unsubscribes; it does not keep the presence alive.
  return std::shared_ptr<void>(nullptr, [self = weak_from_this(), id](void*) {
    if (auto p = self.lock()) {
      std::lock_guard lock(p->mutex_);
      std::erase_if(p->subscribers_, [id](const auto& s) { return s.first == id; });
    }
  });
}

void ClientPresence::mark_gone() {
  // Called under the lock: once a token is destroyed its callback is neither
  // running nor due, so it may refer to what the token's owner owns.
  std::lock_guard lock(mutex_);
  if (gone_) return;
  gone_ = true;
  for (auto& [id, f] : subscribers_) f();
  subscribers_.clear();
}

bool ClientPresence::gone() const {
  std::lock_guard lock(mutex_);
  return gone_;
}

std::string Request::header(std::string_view name) const {
  const std::string* v = headers.find(name);
  return v ? *v : std::string();
}

void Response::set_content(std::string content, const std::string& content_type) {
  body = std::move(content);
  headers.set("Content-Type", content_type);
}

void Response::set_stream(const std::string& content_type, StreamProvider provider) {
  headers.set("Content-Type", content_type);
  stream = std::move(provider);
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 300 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<std::string> header_parameter(std::string_view header, std::string_view key) {
  size_t at = header.find(';');
  while (at != std::string_view::npos) {
    std::string_view rest = trim_ows(header.substr(at + 1));
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string name = ascii_lower(trim_ows(rest.substr(0, eq)));
    rest = trim_ows(rest.substr(eq + 1));
    std::string value;
    size_t end = 0;
    if (!rest.empty() && rest.front() == '"') {
      for (end = 1; end < rest.size() && rest[end] != '"'; ++end) {
        if (rest[end] == '\\' && end + 1 < rest.size()) ++end;
        value += rest[end];
      }
      if (end >= rest.size()) throw std::invalid_argument("an unterminated quoted parameter");
      ++end;
    } else {
      end = std::min(rest.find(';'), rest.size());
      value = std::string(trim_ows(rest.substr(0, end)));
    }
    if (name == key) return value;
    const size_t next = rest.find(';', end);
    if (next == std::string_view::npos) return std::nullopt;
    at = size_t(rest.data() + next - header.data());
  }
  return std::nullopt;
}

std::string media_type(std::string_view content_type) {
  return ascii_lower(trim_ows(content_type.substr(0, content_type.find(';'))));
}

}  // namespace hearth::http
