#include "http/connection.h"

#include <boost/beast/http/error.hpp>
#include <chrono>

#include "core/seconds_text.h"

namespace hearth::http {

namespace bhttp = boost::beast::http;
using boost::system::error_code;

namespace {

// Bytes of pipelined requests read ahead while one is handled; past it the
// connection stops reading until the handled one is answered.
constexpr size_t kReadAhead = 1 << 20;
// A 1xx interim response: asks a client that half-closed whether it is still
// there (a peer that closed answers it with a reset). HTTP/1.1 clients must
// accept any number of them before the final response (RFC 9110, 15.2).
constexpr std::string_view kInterim = "HTTP/1.1 100 Continue\r\n\r\n";

// A request target's path: what comes before its query.
std::string_view path_of(boost::string_view target) {
  const boost::string_view path = target.substr(0, target.find('?'));
  return {path.data(), path.size()};
}

// Fields the layer writes itself from the body it sends.
bool framing_field(const std::string& name) {
  for (const char* f : {"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive"})
    if (strcasecmp(name.c_str(), f) == 0) return true;
  return false;
}

}  // namespace

Connection::Connection(Server::Impl& server, tcp::socket socket, std::string client,
                       std::string client_key)
    : server_(server),
      socket_(std::move(socket)),
      client_(std::move(client)),
      client_key_(std::move(client_key)),
      deadline_(server.io),
      probe_timer_(server.io) {}

void Connection::start() {
  error_code ignored;
  socket_.non_blocking(true, ignored);  // read() reads only what is there
  begin_request();
}

void Connection::begin_request() {
  release_body_memory();
  parser_.emplace();
  parser_->header_limit(uint32_t(server_.limits.max_header_bytes +
                                 server_.scratch.size()));  // ours is checked in parse()
  // Beast refuses a Content-Length past this as it reads the head; the
  // path's own limit applies once the head is complete (check_head).
  body_limit_ = server_.largest_body_limit();
  parser_->body_limit(body_limit_);
  phase_ = Phase::Idle;
  head_bytes_ = 0;
  stalled_at_ = 0;
  if (buffer_.size() == 0) buffer_.shrink_to_fit();  // a large body's room goes with it
  request_.reset();
  stream_.reset();
  ending_ = false;
  probes_ = 0;
  // A new connection waits for its first request no longer than for a head:
  // connecting and sending nothing is the cheapest slow attack.
  if (buffer_.size() > 0) phase_ = Phase::Head;
  arm(buffer_.size() > 0 || requests_ == 0 ? server_.limits.header_timeout
                                           : server_.limits.keep_alive_timeout);
  parse();
}

void Connection::arm(double seconds) {
  deadline_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds)));
  deadline_.async_wait([self = weak_from_this()](error_code ec) {
    auto c = self.lock();
    if (ec || !c) return;
    // A wait that had completed when the deadline was moved still runs: only
    // the deadline now set counts.
    if (c->deadline_.expiry() > std::chrono::steady_clock::now()) return;
    guarded(*c, [&] { c->deadline_passed(); });
  });
}

// A slow head or body is told why (408) before the close; an idle
// keep-alive, a lingering close or a client not reading is just closed.
void Connection::deadline_passed() {
  if (phase_ == Phase::Head)
    return fail(408, "the request head did not arrive within " + seconds_text(server_.limits.header_timeout));
  if (phase_ == Phase::Body)
    return fail(408, "the request body did not arrive within " + seconds_text(server_.limits.body_timeout));
  close();
}

void Connection::read() {
  if (reading_ || phase_ == Phase::Closed || eof_) return;
  if (buffer_.size() >= kReadAhead && (phase_ == Phase::Handling || phase_ == Phase::Responding))
    return;
  reading_ = true;
  // Waits for bytes, then reads them into the I/O thread's one scratch
  // buffer: a connection holds memory only for what it has sent (an idle or
  // trickling one, a few bytes), and no read is ever pending into buffer_
  // while parse() consumes from it.
  socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](error_code ec) {
    self->reading_ = false;
    size_t n = 0;
    if (!ec) n = self->socket_.read_some(asio::buffer(self->server_.scratch), ec);
    if (ec == asio::error::would_block) return self->read();  // a spurious wake-up
    guarded(*self, [&] { self->on_read(ec, n); });
  });
}

void Connection::on_read(error_code ec, size_t n) {
  if (phase_ == Phase::Closed) return;
  buffer_.commit(asio::buffer_copy(buffer_.prepare(n), asio::buffer(server_.scratch.data(), n)));
  if (phase_ == Phase::Lingering) {  // discarding what comes until the client closes
    buffer_.consume(buffer_.size());
    if (ec)
      close();
    else
      read();
    return;
  }
  if (ec == asio::error::eof) {
    eof_ = true;
    if (phase_ == Phase::Handling || phase_ == Phase::Responding)
      client_eof();
    else
      parse();  // what is buffered may still be a whole request
    return;
  }
  if (ec) {  // reset, or another socket error: the client is gone
    close();
    return;
  }
  if (phase_ == Phase::Idle && n > 0) {
    phase_ = Phase::Head;
    // A first request's head deadline runs from the connection's opening.
    if (requests_ > 0) arm(server_.limits.header_timeout);
  }
  if (phase_ == Phase::Handling || phase_ == Phase::Responding)
    read();  // keep watching the socket
  else
    parse();
}

// The parser needs bytes that have not come: read them, or close if none will.
void Connection::wait_for_more() {
  if (eof_)
    close();
  else
    read();
}

void Connection::parse() {
  while (!parser_->is_done()) {
    // Beast must see more bytes than when it last asked for more (it asserts so).
    if (buffer_.size() == 0 || buffer_.size() <= stalled_at_) {
      return wait_for_more();
    }
    error_code ec;
    const bool in_head = !parser_->is_header_done();
    const size_t used = parser_->put(buffer_.data(), ec);
    // Beast takes the fields it has parsed and limits each put, not the
    // head: the head's size is what the puts took plus what waits unparsed.
    if (in_head) head_bytes_ += used;
    if (in_head && head_bytes_ + (ec == bhttp::error::need_more ? buffer_.size() - used : 0) >
                       server_.limits.max_header_bytes)
      ec = bhttp::error::header_limit;
    buffer_.consume(used);
    stalled_at_ = 0;
    // In a chunked body Beast takes chunk data as it comes, but a chunk-size
    // line (extensions and all) or the trailer only whole: bound what waits.
    if (!in_head && ec == bhttp::error::need_more && buffer_.size() > server_.limits.max_header_bytes)
      return fail(400, "a chunk header or the trailer is larger than the limit of " +
                           std::to_string(server_.limits.max_header_bytes) + " bytes");
    if (ec == bhttp::error::need_more) {
      stalled_at_ = buffer_.size();
      return wait_for_more();
    }
    if (ec == bhttp::error::header_limit) {
      return fail(431, "the request head is larger than the limit of " +
                           std::to_string(server_.limits.max_header_bytes) + " bytes");
    }
    if (ec == bhttp::error::body_limit) {
      return body_too_large();
    }
    if (ec) return fail(400, "malformed HTTP request: " + ec.message());
    if (phase_ != Phase::Body && parser_->is_header_done() && !check_head()) return;
    if (!in_head && parser_->chunked() && !hold_body_memory(parser_->get().body().size())) return;
  }
  dispatch();
}

void Connection::body_too_large() {
  // Beast refused a length past every path's limit as the head ended: the
  // message names this path's.
  if (phase_ != Phase::Body) body_limit_ = server_.body_limit_for(path_of(parser_->get().target()));
  fail(413, "the request body is larger than the limit of " + std::to_string(body_limit_) + " bytes");
}

bool Connection::hold_body_memory(size_t bytes) {
  if (bytes <= body_held_) return true;
  const size_t more = bytes - body_held_;
  if (server_.body_memory + more > server_.limits.max_body_memory) {
    fail(503, "the server holds as many request bodies as it may (" +
                  std::to_string(server_.limits.max_body_memory) + " bytes); try again later");
    return false;
  }
  server_.body_memory += more;
  body_held_ = bytes;
  return true;
}

void Connection::release_body_memory() {
  server_.body_memory -= body_held_;
  body_held_ = 0;
}

// The head is complete: checks what Beast allows and HTTP/1.1 says to refuse,
// answers Expect: 100-continue, and gives the body its own deadline.
bool Connection::check_head() {
  const auto& h = parser_->get();
  if (h.version() != 10 && h.version() != 11) {
    fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    return false;
  }
  int lengths = 0;
  head_fields_ = 0;
  for (const auto& f : h) {
    ++head_fields_;
    if (f.name() == bhttp::field::content_length) ++lengths;
  }
  if (head_fields_ > server_.limits.max_header_fields) {
    fail(431, "the request has more than " + std::to_string(server_.limits.max_header_fields) +
                  " header fields");
    return false;
  }
  if (lengths > 1 || h[bhttp::field::content_length].find(',') != boost::string_view::npos) {
    fail(400, "malformed HTTP request: more than one Content-Length");
    return false;
  }
  // Only chunked, and only alone (RFC 9112 6.1, 6.3): Beast would read
  // another coding's body as empty, and the body as the next request.
  if (h.find(bhttp::field::transfer_encoding) != h.end()) {
    if (h.version() < 11 || lengths > 0) {
      fail(400, "malformed HTTP request: Transfer-Encoding with HTTP/1.0 or with Content-Length");
      return false;
    }
    if (!boost::beast::iequals(h[bhttp::field::transfer_encoding], "chunked")) {
      fail(501, "only the chunked transfer coding is supported");
      return false;
    }
  }
  const std::string_view path = path_of(h.target());
  if (path.size() > server_.limits.max_path_bytes) {
    fail(414, "the request path is longer than the limit of " +
                  std::to_string(server_.limits.max_path_bytes) + " bytes");
    return false;
  }
  body_limit_ = server_.body_limit_for(path);
  const auto length = parser_->content_length();
  if (length && *length > body_limit_) {
    body_too_large();
    return false;
  }
  parser_->body_limit(body_limit_);  // a chunked body, as it grows
  if (length && !hold_body_memory(size_t(*length))) return false;
  phase_ = Phase::Body;
  arm(server_.limits.body_timeout);
  const auto expect = h[bhttp::field::expect];
  if (!parser_->is_done() && boost::beast::iequals(expect, "100-continue")) {
    write(std::string(kInterim));
    flush();  // now: the client waits for it before it sends the body
  }
  return true;
}

void Connection::dispatch() {
  auto& m = parser_->get();
  auto req = std::make_shared<Request>();
  req->method = std::string(m.method_string());
  const std::string target(m.target());
  const size_t q = target.find('?');
  req->path = target.substr(0, q);
  if (q != std::string::npos) req->query = target.substr(q + 1);
  // The head's fields only: Beast appends a chunked body's trailer fields to
  // the same list, after the checks and past any proxy's filtering.
  size_t fields = 0;
  for (const auto& f : m) {
    if (fields++ == head_fields_) break;
    req->headers.add(std::string(f.name_string()), std::string(f.value()));
  }
  req->body = std::move(m.body());
  req->version = m.version();
  req->remote_addr = client_;
  req->client_key = client_key_;
  keep_alive_ = m.keep_alive() && !server_.stopping;
  head_only_ = req->method == "HEAD";
  phase_ = Phase::Handling;
  deadline_.cancel();
  request_ = req;
  ++requests_;
  // A client that goes away now is noticed while the handler runs: by
  // reading, or if it half-closed already (a pipelined request after its
  // FIN), by probing as client_eof() does.
  if (!eof_)
    read();
  else if (req->version >= 11)
    probe();

  const Server::Impl::Route* route = server_.find_route(*req);
  if (route->run_inline) {
    Response res;
    server_.answer(route, *req, res);
    deliver(*req, std::move(res), false);
    return;
  }
  asio::post(server_.workers,
             [self = shared_from_this(), req, route, work = asio::make_work_guard(server_.io)] {
               Response res;
               self->server_.answer(route, *req, res);
               self->deliver(*req, std::move(res), true);
             });
}

void Connection::deliver(const Request& req, Response res, bool on_worker) {
  StreamProvider provider = std::move(res.stream);
  auto state = provider ? std::make_shared<StreamState>() : nullptr;
  asio::post(server_.io, [self = shared_from_this(), res = std::move(res), state]() mutable {
    self->stream_ = state;
    guarded(*self, [&] { self->respond(res); });
  });
  if (!provider) return;
  auto run = [self = shared_from_this(), provider = std::move(provider), state,
              chunked = req.version >= 11] { self->stream_body(provider, state, chunked); };
  if (on_worker) return run();
  asio::post(server_.workers,
             [run = std::move(run), work = asio::make_work_guard(server_.io)] { run(); });
}

void Connection::respond(Response& res) {
  if (phase_ == Phase::Closed) return close_stream();
  probe_timer_.cancel();
  phase_ = Phase::Responding;
  const bool streamed = stream_ != nullptr;
  const bool no_body = head_only_ || res.status == 204 || res.status == 304;
  if ((streamed && request_->version < 11) || server_.stopping)
    keep_alive_ = false;  // 1.0: the body ends at close
  chunked_ = streamed && request_->version >= 11;
  const std::string* type = res.headers.find("Content-Type");
  event_stream_ = streamed && type && media_type(*type) == "text/event-stream";

  std::string head = "HTTP/1.1 " + std::to_string(res.status) + " " +
                     std::string(reason_phrase(res.status)) + "\r\n";
  for (const auto& [name, value] : res.headers.fields())
    if (!framing_field(name)) head += name + ": " + value + "\r\n";
  if (chunked_)
    head += "Transfer-Encoding: chunked\r\n";
  else if (!streamed && res.status != 204)  // RFC 9110 8.6: none on a 204
    head += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  if (!keep_alive_) {
    head += "Connection: close\r\n";
  } else {
    // HTTP/1.0 closes unless told otherwise (the client asked for it to stay).
    if (request_->version < 11) head += "Connection: keep-alive\r\n";
    // Clients that read it (undici, browsers) stop reusing the connection before we close it.
    head += "Keep-Alive: timeout=" +
            std::to_string(int64_t(server_.limits.keep_alive_timeout)) + "\r\n";
  }
  head += "\r\n";
  if (server_.logger) server_.logger(*request_, res);
  if (!no_body && !streamed) head += res.body;
  write(std::move(head));
  if (!streamed) ending_ = true;
  flush();
  if (streamed && eof_) probe_stream();  // it closed its side while the request waited
}

// An error the layer answers itself; the connection closes after it (what
// follows in the buffer cannot be trusted to start a request).
void Connection::fail(int status, const std::string& message) {
  Request req;
  if (parser_ && parser_->is_header_done()) {
    req.method = std::string(parser_->get().method_string());
    req.path = path_of(parser_->get().target()).substr(0, server_.limits.max_path_bytes);
  }
  req.remote_addr = client_;
  req.client_key = client_key_;
  request_ = std::make_shared<Request>(std::move(req));
  Response res;
  server_.error_response(*request_, res, status, message);
  if (status == 503) res.headers.set("Retry-After", "1");
  keep_alive_ = false;
  head_only_ = false;
  deadline_.cancel();
  phase_ = Phase::Handling;
  respond(res);
}

// The client half-closed (or closed) while its request runs. HTTP/1.1 lets it
// wait for the answer with its sending side shut, so the request goes on; an
// interim response written now and then finds out whether it still reads.
void Connection::client_eof() {
  if (phase_ == Phase::Responding) return probe_stream();  // else the response's own writes tell
  if (request_->version < 11) return close();
  probe();
}

void Connection::probe() {
  if (phase_ != Phase::Handling) return;
  write(std::string(kInterim));
  flush();
  probe_again(&Connection::probe);
}

void Connection::probe_again(void (Connection::*probe)()) {
  // The first reset comes back within a round trip; then once a second.
  probe_timer_.expires_after(probes_++ == 0 ? std::chrono::milliseconds(50)
                                            : std::chrono::milliseconds(1000));
  probe_timer_.async_wait([self = weak_from_this(), probe](error_code ec) {
    if (auto c = self.lock(); c && !ec) (c.get()->*probe)();
  });
}

void Connection::write(std::string bytes, bool stream_bytes) {
  out_.emplace_back(std::move(bytes), stream_bytes);
}

void Connection::flush() {
  if (writing_ || phase_ == Phase::Closed) return;
  if (out_.empty()) {
    if (ending_) finish_response();
    return;
  }
  writing_ = true;
  // A client that takes nothing for the write timeout is dropped; one that
  // reads slowly but steadily is not (the deadline restarts with each write).
  if (phase_ == Phase::Handling || phase_ == Phase::Responding) arm(server_.limits.write_timeout);
  const std::string& front = out_.front().first;
  socket_.async_write_some(
      asio::buffer(front.data() + front_sent_, front.size() - front_sent_),
      [self = shared_from_this()](error_code ec, size_t n) { self->on_written(ec, n); });
}

void Connection::on_written(error_code ec, size_t n) {
  writing_ = false;
  if (phase_ == Phase::Closed) return;
  if (ec == asio::error::would_block) return flush();
  if (ec) return close();
  if (out_.front().second && stream_) {
    std::lock_guard lock(stream_->mutex);
    stream_->unsent -= std::min(stream_->unsent, n);
    stream_->drained.notify_all();
  }
  front_sent_ += n;
  if (front_sent_ == out_.front().first.size()) {
    out_.pop_front();
    front_sent_ = 0;
  }
  if (out_.empty() && (phase_ == Phase::Handling || phase_ == Phase::Responding))
    deadline_.cancel();
  flush();
}

void Connection::finish_response() {
  ending_ = false;
  if (!keep_alive_ || server_.stopping) return linger_close();
  begin_request();
}

// Closes after the last response without losing it: shuts the sending side,
// then reads until the client closes (briefly), so unread request bytes do
// not make the kernel reset the connection before the client read the answer.
void Connection::linger_close() {
  phase_ = Phase::Lingering;
  request_.reset();
  parser_.reset();  // a refused body read so far goes now, not after the linger
  release_body_memory();
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  arm(1.0);
  if (eof_) return close();
  read();
}

void Connection::close() {
  if (phase_ == Phase::Closed) return;
  const bool answered = phase_ == Phase::Lingering || !request_;
  phase_ = Phase::Closed;
  error_code ignored;
  socket_.close(ignored);
  deadline_.cancel();
  probe_timer_.cancel();
  // Gone is told before the stream's writer is woken: the writer's return
  // may drop the last subscription (a Job's), which must hear it first.
  if (request_ && !answered) request_->client->mark_gone();
  close_stream();
  release_body_memory();
  server_.forget(this, client_key_);
}

void Connection::stop_when_idle() {
  if (phase_ == Phase::Idle || phase_ == Phase::Head || phase_ == Phase::Body)
    close();
  else
    keep_alive_ = false;
}

}  // namespace hearth::http
