// One client connection of http::Server: reads requests with Beast's parser
// under the head/body deadlines, hands each complete one to its route, writes
// the responses in order (pipelining), and notices a client that goes away
// while its request runs. Everything here runs on the I/O thread except
// StreamWriter::write, which a worker calls.
#pragma once

// clang-format off
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
// clang-format on
#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "http/server.h"

namespace hearth::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class Connection;

struct Server::Impl {
  explicit Impl(Limits l);

  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
    bool run_inline;
  };

  // The handler for a request (its matches filled in): a route's, else the fallback.
  const Route* find_route(Request& req) const;
  size_t body_limit_for(std::string_view path) const;  // Limits::max_body_bytes or a path's own
  size_t largest_body_limit() const;
  // Runs a handler; an exception becomes a 500 in the application's shape.
  void answer(const Route* route, const Request& req, Response& res) const;
  void error_response(const Request& req, Response& res, int status,
                      const std::string& message) const;

  void accept();
  void admit(tcp::socket socket);
  static std::string client_key(const asio::ip::address& a);
  void forget(Connection* c, const std::string& client_key);  // a connection closed
  void begin_stop(double grace_seconds);

  Limits limits;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::thread_pool workers;
  std::vector<Route> routes;
  std::vector<std::pair<std::regex, size_t>> body_limits;  // by path
  Route fallback;
  ErrorWriter error_writer;
  std::function<void(const Request&, const Response&)> logger;

  // The I/O thread's alone.
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;
  std::unordered_map<std::string, int> per_client;  // connections by client_key
  size_t body_memory = 0;  // what the connections hold for request bodies (max_body_memory)
  std::vector<char> scratch = std::vector<char>(64 << 10);  // what one read brings
  bool stopping = false;
  asio::steady_timer accept_retry{io}, stop_deadline{io};
};

// What a streaming worker and the I/O thread share about the body being sent.
struct StreamState {
  std::mutex mutex;
  std::condition_variable drained;
  std::string queued;  // framed bytes not yet handed to the socket
  size_t unsent = 0;   // queued, or handed to the socket and not yet written
  bool flush_posted = false;
  bool closed = false;  // the connection closed: the writer stops
  bool abandoned = false;  // the body was cut short (a client not reading, a failed writer): close
  bool finished = false;   // the writer returned: nothing more goes into the body
};

// Adds bytes to a streamed body, framed as a chunk where the body is chunked.
void queue_stream_bytes(StreamState& state, std::string_view bytes, bool chunked);

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, tcp::socket socket, std::string client, std::string client_key);

  void start();
  void close();
  // The server stops: close now unless a request is in progress, else once
  // its response is written.
  void stop_when_idle();

 private:
  enum class Phase { Idle, Head, Body, Handling, Responding, Lingering, Closed };

  void begin_request();
  void arm(double seconds);  // the deadline for what the current phase waits on
  void deadline_passed();
  void read();
  void on_read(boost::system::error_code ec, size_t n);
  void parse();
  void wait_for_more();
  bool check_head();
  // Holds `bytes` of max_body_memory for the request's body (more as a
  // chunked one grows); past the limit answers 503 and returns false.
  bool hold_body_memory(size_t bytes);
  void body_too_large();  // 413 with this path's limit
  void release_body_memory();
  void dispatch();
  void deliver(const Request& req, Response res, bool on_worker);  // from the handler's thread
  void respond(Response& res);  // writes the head (and a whole body)
  void stream_body(const StreamProvider& provider, const std::shared_ptr<StreamState>& state,
                   bool chunked);
  void drain_stream();
  void end_stream();
  void fail(int status, const std::string& message);
  void client_eof();
  void probe();
  void probe_stream();
  void probe_again(void (Connection::*probe)());  // the next probe() or probe_stream(), on a timer
  void write(std::string bytes, bool stream_bytes = false);
  void flush();
  void on_written(boost::system::error_code ec, size_t n);
  void finish_response();
  void linger_close();
  void close_stream();

  Server::Impl& server_;
  tcp::socket socket_;
  const std::string client_, client_key_;  // the address; what it counts under (client_key)
  asio::steady_timer deadline_, probe_timer_;
  boost::beast::flat_buffer buffer_;  // read, not yet parsed
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  Phase phase_ = Phase::Idle;
  bool reading_ = false;
  bool eof_ = false;  // the client has sent everything it will send
  bool keep_alive_ = true;
  bool head_only_ = false;  // a HEAD request: no body in the response
  bool chunked_ = false;    // the response body is chunked
  bool ending_ = false;     // the response's last bytes are queued
  int probes_ = 0;
  size_t head_bytes_ = 0;  // of the request being read, parsed so far
  size_t head_fields_ = 0;  // the fields of its head (a trailer's come after them)
  size_t body_held_ = 0;    // of the server's body_memory, for this request
  size_t body_limit_ = 0;   // for this request's path, once its head is read (the largest before)
  size_t stalled_at_ = 0;  // buffer_'s size when the parser last asked for more
  int requests_ = 0;       // requests begun on this connection
  std::shared_ptr<Request> request_;
  std::shared_ptr<StreamState> stream_;
  bool event_stream_ = false;  // the streamed body is server-sent events
  std::deque<std::pair<std::string, bool>> out_;  // bytes to write; true: streamed body bytes
  size_t front_sent_ = 0;                         // of out_.front(), written
  bool writing_ = false;
};

// Runs one of a connection's handlers on the I/O thread. An exception there
// (an allocation failing under a flood of requests) ends that connection:
// escaping io.run() it would end the server.
template <class F>
void guarded(Connection& c, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hearth: a connection failed: %s\n", e.what());
    c.close();
  }
}

}  // namespace hearth::http
