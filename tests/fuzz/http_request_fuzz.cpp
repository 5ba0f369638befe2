// Raw bytes from a client, through a real socket into http::Server: the
// request parser, the head checks, pipelining, chunked bodies, Expect,
// streamed and whole responses, and the close after a half-close. The input
// is written, the client shuts its sending side, and reads until the server
// closes. The server must close within a few seconds (nothing is waiting on
// a client that said it is done), and whatever it wrote must be HTTP
// responses: each starts with a status line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "fuzz_support.h"
#include "http/server.h"

using namespace hearth;

namespace {

int start_server() {
  // Never destroyed: its I/O thread runs until the process ends, and a
  // destructor at exit would free the reactor under that thread.
  static http::Server* server = nullptr;
  static int port = 0;
  if (server) return port;
  std::signal(SIGPIPE, SIG_IGN);
  http::Limits limits;
  limits.max_header_bytes = 4096;
  limits.max_body_bytes = 16384;
  limits.header_timeout = 2;
  limits.body_timeout = 2;
  limits.worker_threads = 2;
  server = new http::Server(limits);
  server->route("POST", "/echo", [](const http::Request& req, http::Response& res) {
    res.set_content(req.body, "application/octet-stream");
  });
  server->route("GET", "/items/([0-9]+)", [](const http::Request& req, http::Response& res) {
    res.set_content(req.matches.at(1) + "?" + req.query, "text/plain");
  });
  server->route("GET", "/stream", [](const http::Request&, http::Response& res) {
    res.set_stream("text/event-stream", [](http::StreamSink& sink) {
      for (int i = 0; i < 3 && sink.write("data: " + std::to_string(i) + "\n\n"); ++i) {
      }
    });
  });
  server->route(
      "GET", "/health",
      [](const http::Request&, http::Response& res) { res.set_content("ok", "text/plain"); }, true);
  port = server->bind("127.0.0.1", 0);
  std::thread([] { server->run(); }).detach();  // lives as long as the process
  return port;
}

// Sends the bytes, half-closes, and returns what came back before the
// server closed (or aborts if it does not within 5 s).
std::string exchange(int port, const uint8_t* data, size_t size) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  HEARTH_FUZZ_CHECK(fd >= 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(uint16_t(port));
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // libFuzzer's timeout alarm can interrupt any call here; an interrupted
  // connect goes on in the background, so wait for it to finish.
  if (connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) {
    int error = errno;
    if (error == EINTR) {
      pollfd writable{fd, POLLOUT, 0};
      while (poll(&writable, 1, 5000) < 0 && errno == EINTR) {
      }
      socklen_t length = sizeof error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    }
    if (error != 0) {
      std::fprintf(stderr, "connect: %s\n", std::strerror(error));
      std::abort();
    }
  }
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  for (size_t sent = 0; sent < size;) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the server closed first (an error it answered)
    sent += size_t(n);
  }
  shutdown(fd, SHUT_WR);
  std::string got;
  char buf[16384];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      got.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      std::fprintf(stderr, "the server did not close within 5 s of the client's FIN\n");
      std::abort();
    }
    break;  // closed (or reset after an error response)
  }
  // A reset rather than a FIN: tens of thousands of runs would otherwise
  // leave as many connections in TIME_WAIT and run out of local ports.
  linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(fd);
  return got;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int port = start_server();
  const std::string got = exchange(port, data, size);
  HEARTH_FUZZ_CHECK(got.empty() || got.rfind("HTTP/1.1 ", 0) == 0);
  return 0;
}
