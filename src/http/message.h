// What a route handler sees and answers: one parsed HTTP/1.1 request and the
// response to it, whole or streamed. Independent of how bytes reach the
// socket (http/server.h does that).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearth::http {

// Header fields in the order given; names compare case-insensitively.
class Headers {
 public:
  void add(std::string name, std::string value);
  void set(const std::string& name, std::string value);  // replaces every field of that name
  const std::string* find(std::string_view name) const;  // the first, or null
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// Whether the client of a request is still there. The connection marks it
// gone when the socket fails (reset, or a closed peer refusing a write);
// handlers subscribe to stop work nobody will read.
class ClientPresence : public std::enable_shared_from_this<ClientPresence> {
 public:
  // Calls `gone` once, from the I/O thread, when the client goes (at once,
  // on this thread, if it already has). Destroying the returned token
  // unsubscribes; after that `gone` is neither running nor called. It must
  // be quick and must not subscribe.
  [[nodiscard]] std::shared_ptr<void> on_gone(std::function<void()> gone);
  void mark_gone();
  bool gone() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<int, std::function<void()>>> subscribers_;
  int next_id_ = 0;
  bool gone_ = false;
};

struct Request {
  std::string method;  // HEAD is routed as GET and answered without a body
  std::string path;    // the target without its query
  std::string query;   // after '?', undecoded
  Headers headers;
  std::string body;
  std::string remote_addr;
  std::string client_key;  // whose requests count together: the address, or its IPv6 /64
  unsigned version = 11;             // 10 or 11
  std::vector<std::string> matches;  // the route's whole match, then its groups
  std::shared_ptr<ClientPresence> client = std::make_shared<ClientPresence>();

  std::string header(std::string_view name) const;  // "" if absent
  bool has_header(std::string_view name) const { return headers.find(name) != nullptr; }
};

// The body of a streamed response, written as the handler produces it.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Queues bytes for the client. Waits while too many are unsent (a slow
  // reader slows the writer); false once the client is gone: stop then.
  virtual bool write(std::string_view bytes) = 0;
};

// Runs on a worker thread after the head is sent; the body ends when it returns.
using StreamProvider = std::function<void(StreamSink&)>;

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  StreamProvider stream;  // set: the body is streamed (chunked) instead

  void set_header(const std::string& name, std::string value) {
    headers.set(name, std::move(value));
  }
  void set_content(std::string content, const std::string& content_type);
  void set_stream(const std::string& content_type, StreamProvider provider);
};

// Header values: ASCII lower case (names, media types and parameter names
// are case-insensitive), trimmed of spaces and tabs, a Content-Type's media
// type without its parameters ("Audio/PCM; rate=16000" -> "audio/pcm"), and
// the value of one "; key=value" parameter, quoted or not (std::invalid_argument
// for an unterminated quote).
std::string ascii_lower(std::string_view s);
std::string_view trim_ows(std::string_view s);
std::string media_type(std::string_view content_type);
std::optional<std::string> header_parameter(std::string_view header, std::string_view key);

// The reason phrase of a status code ("OK", "Not Found", ...).
std::string_view reason_phrase(int status);

}  // namespace hearth::http
