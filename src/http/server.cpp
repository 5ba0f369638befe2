#include "http/server.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "http/connection.h"

namespace hearth::http {

using boost::system::error_code;

namespace {

// Raises the soft limit on open files to the hard one (1024 by default is too
// few for a server) and returns it.
int open_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur == RLIM_INFINITY ? 1 << 20 : int(std::min<rlim_t>(r.rlim_cur, 1 << 20));
}

Server::Handler not_found() {
  return [](const Request&, Response& res) {
    res.status = 404;
    res.set_content("not found", "text/plain");
  };
}

}  // namespace

Server::Impl::Impl(Limits l) : limits(l), workers(size_t(std::max(1, l.worker_threads))) {
  // Files past the connections: the model, the cache, the workers' own.
  limits.max_connections = std::max(1, std::min(limits.max_connections, open_file_limit() - 256));
  fallback = {"", std::regex(""), not_found(), false};
  error_writer = [](const Request&, Response& res, int status, const std::string& message) {
    res.status = status;
    res.set_content(message + "\n", "text/plain");
  };
}

const Server::Impl::Route* Server::Impl::find_route(Request& req) const {
  const std::string& method = req.method == "HEAD" ? std::string("GET") : req.method;
  std::smatch m;
  for (const auto& r : routes) {
    if (r.method != method || !std::regex_match(req.path, m, r.pattern)) continue;
    req.matches.assign(m.begin(), m.end());
    return &r;
  }
  return &fallback;
}

size_t Server::Impl::body_limit_for(std::string_view path) const {
  for (const auto& [pattern, bytes] : body_limits)
    if (std::regex_match(path.begin(), path.end(), pattern)) return bytes;
  return limits.max_body_bytes;
}

size_t Server::Impl::largest_body_limit() const {
  size_t largest = limits.max_body_bytes;
  for (const auto& limit : body_limits) largest = std::max(largest, limit.second);
  return largest;
}

void Server::Impl::answer(const Route* route, const Request& req, Response& res) const {
  try {
    route->handler(req, res);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hearth: internal error on %s %s: %s\n", req.method.c_str(),
                 req.path.c_str(), e.what());
    res = Response();
    error_response(req, res, 500, std::string("internal error: ") + e.what());
  }
}

void Server::Impl::error_response(const Request& req, Response& res, int status,
                                  const std::string& message) const {
  res.status = status;
  error_writer(req, res, status, message);
}

void Server::Impl::accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket socket) {
    if (stopping) return;
    if (ec) {
      // Out of file descriptors (or a passing error): wait a moment, since
      // accepting again at once would spin.
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](error_code e) {
        if (!e) accept();
      });
      return;
    }
    admit(std::move(socket));
    accept();
  });
}

// Whose connections count together against max_connections_per_client: an
// IPv4 address (mapped into IPv6 or not), or an IPv6 /64, the block one
// host is usually given: counted per address, one host has 2^64 of them.
std::string Server::Impl::client_key(const asio::ip::address& a) {
  if (a.is_v4()) return a.to_string();
  const asio::ip::address_v6 v6 = a.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_string();
  asio::ip::address_v6::bytes_type b = v6.to_bytes();
  std::fill(b.begin() + 8, b.end(), 0);
  return asio::ip::address_v6(b).to_string() + "/64";
}

void Server::Impl::admit(tcp::socket socket) {
  error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  std::string client = peer.address().to_string();
  std::string key = client_key(peer.address());
  socket.set_option(tcp::no_delay(true), ec);
  int& mine = per_client[key];
  if (int(connections.size()) >= limits.max_connections ||
      mine >= limits.max_connections_per_client) {
    if (mine == 0) per_client.erase(key);
    // Answered at once and closed; a fresh socket's send buffer takes it whole.
    Request req;
    req.remote_addr = client;
    Response res;
    error_response(req, res, 503,
                   int(connections.size()) >= limits.max_connections
                       ? "the server has too many open connections; try again later"
                       : "too many open connections from this address (" + key + "; the limit is " +
                             std::to_string(limits.max_connections_per_client) + ")");
    std::string bytes =
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n";
    for (const auto& [name, value] : res.headers.fields()) bytes += name + ": " + value + "\r\n";
    bytes += "Content-Length: " + std::to_string(res.body.size()) + "\r\n\r\n" + res.body;
    socket.non_blocking(true, ec);
    socket.write_some(asio::buffer(bytes), ec);
    socket.shutdown(tcp::socket::shutdown_send, ec);
    socket.close(ec);
    return;
  }
  ++mine;
  auto c = std::make_shared<Connection>(*this, std::move(socket), std::move(client), std::move(key));
  connections.emplace(c.get(), c);
  c->start();
}

void Server::Impl::forget(Connection* c, const std::string& client_key) {
  if (connections.erase(c) == 0) return;
  if (auto it = per_client.find(client_key); it != per_client.end() && --it->second <= 0)
    per_client.erase(it);
  if (stopping && connections.empty()) stop_deadline.cancel();  // nothing left to wait for
}

void Server::Impl::begin_stop(double grace_seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, grace_seconds)));
  if (stopping && deadline >= stop_deadline.expiry()) return;  // an earlier deadline holds
  if (!stopping) {
    stopping = true;
    error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
    for (auto& [ptr, weak] : std::vector(connections.begin(), connections.end()))
      if (auto c = weak.lock()) c->stop_when_idle();
  }
  if (connections.empty()) return;
  stop_deadline.expires_at(deadline);
  stop_deadline.async_wait([this](error_code ec) {
    if (ec) return;
    for (auto& [ptr, weak] : std::vector(connections.begin(), connections.end()))
      if (auto c = weak.lock()) c->close();
  });
}

Server::Server(Limits limits) : impl_(std::make_unique<Impl>(limits)) {}

Server::~Server() {
  impl_->io.stop();
  impl_->workers.join();
}

void Server::route(const std::string& method, const std::string& pattern, Handler handler,
                   bool run_inline) {
  impl_->routes.push_back({method, std::regex(pattern), std::move(handler), run_inline});
}

void Server::body_limit(const std::string& pattern, size_t bytes) {
  impl_->body_limits.emplace_back(std::regex(pattern), bytes);
}

void Server::set_fallback(Handler handler) {
  impl_->fallback.handler = std::move(handler);
}
void Server::set_error_writer(ErrorWriter writer) {
  impl_->error_writer = std::move(writer);
}
void Server::set_logger(std::function<void(const Request&, const Response&)> logger) {
  impl_->logger = std::move(logger);
}

int Server::bind(const std::string& host, int port) {
  auto& s = *impl_;
  error_code ec;
  tcp::resolver resolver(s.io);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty())
    throw std::runtime_error("cannot listen on " + host + ": " + ec.message());
  const tcp::endpoint at = found.begin()->endpoint();
  s.acceptor.open(at.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(at, ec);
  if (!ec) s.acceptor.listen(s.limits.backlog, ec);
  if (ec) {
    error_code ignored;
    s.acceptor.close(ignored);
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + " (" +
                             ec.message() + ")");
  }
  return s.acceptor.local_endpoint().port();
}

void Server::run() {
  auto& s = *impl_;
  asio::post(s.io, [&s] {
    if (!s.stopping) s.accept();
  });
  s.io.run();
}

void Server::stop(double grace_seconds) {
  asio::post(impl_->io, [this, grace_seconds] { impl_->begin_stop(grace_seconds); });
}

}  // namespace hearth::http
