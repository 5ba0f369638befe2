// An event-driven HTTP/1.1 server (Boost.Beast's parser on Asio; see
// docs/architecture/http.md for why). One I/O thread owns every socket: an idle,
// slow or half-sent connection costs a file descriptor and its buffer, never a
// thread. A complete request runs its handler on a worker thread (or on the
// I/O thread for routes marked inline, which must not block), and its response
// goes back through the I/O thread; a streamed body is queued by the worker
// and written as the client reads it.
//
// Per HTTP/1.1: keep-alive, pipelining (requests on one connection answered in
// order), chunked request bodies, Expect: 100-continue, one Content-Length.
// Limits: the head must arrive within a deadline of its first byte (slowloris),
// caps on head and body bytes, on connections in all and per client address.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "http/message.h"

namespace hearth::http {

struct Limits {
  size_t max_header_bytes = 64 << 10;  // request line and fields; past it: 431
  size_t max_header_fields = 256;      // fields in a head; past it: 431
  // The request target's path; past it: 414. Routes are regular expressions,
  // and libstdc++ matches them recursively, a few frames per character.
  size_t max_path_bytes = 2048;
  size_t max_body_bytes = 8 << 20;     // past it: 413
  // Request bodies held at once, every connection's, from the head that
  // announces one until its response is written; past it: 503.
  size_t max_body_memory = size_t(1) << 30;
  double header_timeout = 10;          // seconds from a head's first byte to its end
  double body_timeout = 60;            // seconds from the end of the head to the end of the body
  double keep_alive_timeout = 3;       // seconds a connection may wait for its next request
  double write_timeout = 30;           // seconds a client may read nothing while a response waits
  // Bytes a second a client must take a stream at, over the time its writer
  // waits on it (once that is past write_timeout); slower: closed.
  double min_stream_rate = 4096;
  int max_connections = 8192;  // in all (lowered to what the file limit allows); past it: 503
  int max_connections_per_client = 1024;  // per client address; past it: 503
  int backlog = 4096;                     // listen queue (the kernel caps it at somaxconn)
  int worker_threads = 16;                // handlers running at once
  size_t stream_buffer_bytes = 1 << 20;   // unsent streamed bytes before the writer waits
};

class Server {
 public:
  using Handler = std::function<void(const Request&, Response&)>;
  // Writes the body of an error the HTTP layer answers itself (400, 413, 414,
  // 431, 501, 503, 505), so it can have the application's error shape.
  using ErrorWriter =
      std::function<void(const Request&, Response&, int status, const std::string& message)>;

  explicit Server(Limits limits);
  ~Server();

  // The first route whose method and pattern (std::regex over the whole path)
  // match answers. An inline handler runs on the I/O thread and must return
  // at once (health checks keep answering while every worker is busy).
  void route(const std::string& method, const std::string& pattern, Handler handler,
             bool run_inline = false);
  // Requests whose path (std::regex over the whole path) matches may carry
  // bodies up to `bytes`, more or less than Limits::max_body_bytes; the
  // first match counts.
  void body_limit(const std::string& pattern, size_t bytes);
  void set_fallback(Handler handler);  // no route matched
  void set_error_writer(ErrorWriter writer);
  void set_logger(
      std::function<void(const Request&, const Response&)> logger);  // after each response

  // Binds and listens; returns the port (the chosen one for port 0). Throws
  // std::runtime_error if it cannot.
  int bind(const std::string& host, int port);
  // Serves until stop() and every connection is closed.
  void run();
  // Thread-safe, returns at once. Stops accepting and closes connections that
  // have no request in progress; those that have one close once its
  // response is written. After `grace` seconds every connection is closed.
  void stop(double grace_seconds);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::http
