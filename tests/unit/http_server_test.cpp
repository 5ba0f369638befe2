// http::Server over real loopback sockets: what a connection must do when the
// client misbehaves (stops reading a stream, leaves mid-request, half-closes,
// trickles), and what stop() must do with open connections. The end-to-end
// versions with the model are in tests/server/front_door_clients.test.mjs and
// front_door_protocol.test.mjs; these run under ASan in the test command.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <string>
#include <thread>

#include "http/connection.h"
#include "http/server.h"

namespace {

using namespace hearth;
using namespace std::chrono_literals;

class Client {
 public:
  explicit Client(int port, double timeout_s = 10) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(uint16_t(port));
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
    timeval t{long(timeout_s), long((timeout_s - long(timeout_s)) * 1e6)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  }
  ~Client() { close(); }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
  }
  void shut_write() { shutdown(fd_, SHUT_WR); }
  void shrink_receive_buffer() {
    int small = 4096;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  }
  // What one recv() brings (empty when the server closed or on the timeout).
  std::string read_some(size_t at_most = 8192) {
    std::string buf(at_most, '\0');
    const ssize_t n = recv(fd_, buf.data(), at_most, 0);
    buf.resize(n > 0 ? size_t(n) : 0);
    return buf;
  }
  // Everything until the server closes (or the timeout: then `timed_out`).
  std::string read_all() {
    std::string got;
    char buf[8192];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        got.append(buf, size_t(n));
        continue;
      }
      timed_out = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      return got;
    }
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool timed_out = false;

 private:
  int fd_ = -1;
};

// Waits up to 10 s for done() (a loaded machine may take its time).
template <class F>
bool eventually(F done) {
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

struct TestServer {
  explicit TestServer(http::Limits limits = {}) : server(limits) {
    std::signal(SIGPIPE, SIG_IGN);
    server.route("POST", "/echo", [](const http::Request& req, http::Response& res) {
      res.set_content(req.body, "text/plain");
    });
    server.route("POST", "/big/echo", [](const http::Request& req, http::Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    server.body_limit("/big/.*", 1000);
    server.body_limit("/small", 10);
    server.route("POST", "/late-field", [](const http::Request& req, http::Response& res) {
      res.set_content("[" + req.header("X-Late") + "]", "text/plain");
    });
    server.route("GET", "/wait", [this](const http::Request& req, http::Response& res) {
      auto token = req.client->on_gone([this] { gone = true; });
      ++waiting;
      while (!gone && !release) std::this_thread::sleep_for(5ms);
      res.set_content(gone ? "gone" : "done", "text/plain");
    });
    server.route("GET", "/flood", [this](const http::Request& req, http::Response& res) {
      // The provider holds the subscription, as a generation's Job does.
      auto token = req.client->on_gone([this] { gone = true; });
      res.set_stream("text/plain", [this, token](http::StreamSink& sink) {
        const std::string block(64 << 10, 'x');
        while (sink.write(block)) ++blocks;
        writer_done = true;
      });
    });
    port = server.bind("127.0.0.1", 0);
    thread = std::thread([this] { server.run(); });
  }
  ~TestServer() {
    release = true;
    server.stop(0);
    thread.join();
  }
  http::Server server;
  int port = 0;
  std::thread thread;
  std::atomic<bool> gone{false}, release{false}, writer_done{false};
  std::atomic<int> blocks{0}, waiting{0};  // /flood's blocks written; /wait requests begun
};

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrderAndHalfCloseStillGetsThem) {
  TestServer s;
  Client c(s.port);
  c.send(
      "POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\none"
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"
      "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nthree");
  c.shut_write();
  const std::string got = c.read_all();
  EXPECT_FALSE(c.timed_out);
  EXPECT_EQ(count(got, "HTTP/1.1 200 OK"), 3u) << got;
  const size_t one = got.find("\r\n\r\none"), two = got.find("\r\n\r\ntwo"),
               three = got.find("\r\n\r\nthree");
  EXPECT_TRUE(one < two && two < three && three != std::string::npos) << got;
}

TEST(HttpServer, KeptAliveResponsesSayForHowLongAndTheLastSaysClose) {
  http::Limits limits;
  limits.keep_alive_timeout = 3.5;
  TestServer s(limits);
  Client c(s.port);
  c.send(
      "POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\none"
      "POST /echo HTTP/1.1\r\nConnection: close\r\nContent-Length: 3\r\n\r\ntwo");
  const std::string got = c.read_all();
  // Whole seconds, rounded down: a client trusting it never sends into our close.
  const size_t first = got.find("Keep-Alive: timeout=3\r\n"), second = got.find("HTTP/1.1", 1);
  EXPECT_TRUE(first != std::string::npos && first < second) << got;
  EXPECT_EQ(count(got, "Keep-Alive:"), 1u) << got;
  EXPECT_NE(got.find("Connection: close\r\n", second), std::string::npos) << got;
}

TEST(HttpServer, AnHttp10KeepAliveIsConfirmed) {
  TestServer s;
  Client c(s.port, 2);
  c.send("POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\none");
  const std::string first = c.read_some();
  EXPECT_NE(first.find("Connection: keep-alive\r\n"), std::string::npos) << first;
  c.send("POST /echo HTTP/1.0\r\nContent-Length: 3\r\n\r\ntwo");  // and this one closes
  const std::string second = c.read_all();
  EXPECT_NE(second.find("Connection: close\r\n"), std::string::npos) << second;
  EXPECT_NE(second.find("\r\n\r\ntwo"), std::string::npos) << second;
}

TEST(HttpServer, TwoContentLengthsAreRefused) {
  TestServer s;
  Client c(s.port);
  c.send("POST /echo HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi");
  const std::string got = c.read_all();
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_EQ(count(got, "HTTP/1.1 "), 1u) << got;
}

TEST(HttpServer, AHeadThatTricklesIsClosedAtItsDeadline) {
  http::Limits limits;
  limits.header_timeout = 0.3;
  TestServer s(limits);
  Client c(s.port, 5);
  const auto t0 = std::chrono::steady_clock::now();
  c.send("GET /echo HTTP/1.1\r\n");
  for (int i = 0; i < 10; ++i) {  // a byte every 50 ms: never idle, never done
    std::this_thread::sleep_for(50ms);
    if (!c.send("X")) break;  // closed already
  }
  const std::string got = c.read_all();
  EXPECT_FALSE(c.timed_out);
  EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;  // told why
  EXPECT_NE(got.find("the request head did not arrive within 0.3 s"), std::string::npos) << got;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(HttpServer, ABodyThatNeverEndsGets408AndAConnectionThatSaysNothingIsClosedSilently) {
  http::Limits limits;
  limits.header_timeout = 0.3;
  limits.body_timeout = 0.3;
  TestServer s(limits);
  Client body(s.port, 5), silent(s.port, 5);
  body.send("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  const std::string got = body.read_all();
  EXPECT_FALSE(body.timed_out);
  EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;
  EXPECT_NE(got.find("the request body did not arrive within 0.3 s"), std::string::npos) << got;
  EXPECT_EQ(silent.read_all(), "");
  EXPECT_FALSE(silent.timed_out);
}

TEST(HttpServer, Expect100ContinueIsAnsweredBeforeTheBodyIsSent) {
  TestServer s;
  Client c(s.port, 2);
  c.send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.read_some(), "HTTP/1.1 100 Continue\r\n\r\n");
  c.send("hello");
  const std::string got = c.read_some();
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK", 0), 0u) << got;
  EXPECT_NE(got.find("\r\n\r\nhello"), std::string::npos) << got;
}

TEST(HttpServer, TooManyHeaderFieldsAre431AndTrailerFieldsAreNotHeaders) {
  TestServer s;
  Client many(s.port);
  std::string head = "POST /echo HTTP/1.1\r\n";
  for (int i = 0; i < 300; ++i) head += "a:b\r\n";
  many.send(head + "Content-Length: 0\r\n\r\n");
  const std::string refused = many.read_all();
  EXPECT_EQ(refused.rfind("HTTP/1.1 431 ", 0), 0u) << refused;

  Client trailer(s.port);
  trailer.send(
      "POST /late-field HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "2\r\nhi\r\n0\r\nX-Late: yes\r\n\r\n");
  const std::string got = trailer.read_all();
  EXPECT_NE(got.find("\r\n\r\n[]"), std::string::npos) << got;
}

TEST(HttpServer, AStreamToAClientThatReadsTooSlowlyIsEnded) {
  // The client never stops reading, but reads far under the minimum rate: the
  // writer stops (and its worker is free), though the socket buffers still
  // hold megabytes for the client to read.
  // It reads a few MB/s, so each of the writer's waits for room (the kernel
  // wakes a writer once a third of the socket's send buffer is free) is far
  // shorter than the write timeout, and only the rate ends it.
  http::Limits limits;
  limits.write_timeout = 2;
  limits.stream_buffer_bytes = 64 << 10;
  limits.min_stream_rate = 64 << 20;
  TestServer s(limits);
  Client c(s.port, 2);
  c.send("GET /flood HTTP/1.1\r\n\r\n");
  const auto t0 = std::chrono::steady_clock::now();
  size_t got = 0;
  while (!s.writer_done && std::chrono::steady_clock::now() - t0 < 15s) {
    const std::string part = c.read_some(64 << 10);
    if (part.empty()) break;
    got += part.size();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(s.writer_done) << got << " bytes read, the writer still writing";
}

TEST(HttpServer, AClientThatLeavesIsNoticedWhileItsRequestRuns) {
  TestServer s;
  {
    Client c(s.port);
    c.send("GET /wait HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(eventually([&] { return s.waiting == 1; }));
  }  // closed without reading
  EXPECT_TRUE(eventually([&] { return s.gone.load(); }));
}

TEST(HttpServer, AHalfClosedClientIsNotTakenForGone) {
  TestServer s;
  Client c(s.port);
  c.send("GET /wait HTTP/1.1\r\n\r\n");
  c.shut_write();
  std::this_thread::sleep_for(300ms);  // several interim probes
  EXPECT_FALSE(s.gone);
  s.release = true;
  const std::string got = c.read_all();
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\n\r\ndone"), std::string::npos) << got;
}

TEST(HttpServer, AStreamToAClientThatStopsReadingWaitsThenStopsWhenItLeaves) {
  TestServer s;
  auto c = std::make_unique<Client>(s.port);
  c->shrink_receive_buffer();
  c->send("GET /flood HTTP/1.1\r\n\r\n");
  // The writer fills the buffers, then waits while the client reads nothing:
  // the count of blocks stops (for 200 ms) once they are full.
  int blocked_at = -1;
  const bool waits = eventually([&] {
    blocked_at = s.blocks;
    std::this_thread::sleep_for(200ms);
    return blocked_at > 0 && s.blocks == blocked_at;
  });
  EXPECT_TRUE(waits) << "the writer goes on writing to a client that reads nothing: " << s.blocks << " blocks";
  EXPECT_LT(blocked_at, 200) << "at most the stream buffer and the socket buffers are queued";
  EXPECT_FALSE(s.writer_done);
  c.reset();  // the client leaves
  // The writer's failed write and the presence notice come from different
  // places on the I/O thread: wait for both.
  eventually([&] { return s.writer_done && s.gone; });
  EXPECT_TRUE(s.writer_done);
  EXPECT_TRUE(s.gone);
}

TEST(HttpServer, StopClosesIdleConnectionsAtOnceAndReturnsWhenRequestsEnd) {
  auto s = std::make_unique<TestServer>();
  Client idle(s->port);
  Client busy(s->port);
  busy.send("GET /wait HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return s->waiting == 1; }));  // busy's request runs
  s->server.stop(5);
  const std::string idle_got = idle.read_all();  // closed, nothing sent
  EXPECT_FALSE(idle.timed_out);
  EXPECT_TRUE(idle_got.empty());
  s->release = true;
  const std::string got = busy.read_all();
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\n\r\ndone"), std::string::npos) << got;
  s.reset();  // run() has returned: join does not wait
}

TEST(HttpServer, APathMayHaveItsOwnBodyLimit) {
  http::Limits limits;
  limits.max_body_bytes = 100;
  TestServer s(limits);  // "/big/.*" may take 1000 bytes, "/small" 10
  auto post = [&](const std::string& path, const std::string& framing, const std::string& body) {
    Client c(s.port);
    c.send("POST " + path + " HTTP/1.1\r\n" + framing + "Connection: close\r\n\r\n" + body);
    return c.read_all();
  };
  const std::string body(500, 'x');
  const std::string length = "Content-Length: 500\r\n";
  const std::string chunked = "Transfer-Encoding: chunked\r\n";
  const std::string chunks = "1f4\r\n" + body + "\r\n0\r\n\r\n";
  // The large path takes it, by length and chunked; a query does not change the path.
  for (const auto& [framing, payload] : {std::pair{length, body}, std::pair{chunked, chunks}}) {
    const std::string ok = post("/big/echo?x=1", framing, payload);
    EXPECT_EQ(ok.rfind("HTTP/1.1 200 ", 0), 0u) << ok;
    EXPECT_NE(ok.find("\r\n\r\n500"), std::string::npos) << ok;
    // Every other path keeps the server's limit, and says so.
    const std::string refused = post("/echo", framing, payload);
    EXPECT_EQ(refused.rfind("HTTP/1.1 413 ", 0), 0u) << refused;
    EXPECT_NE(refused.find("limit of 100 bytes"), std::string::npos) << refused;
  }
  // A path's limit may be lower than the server's, too.
  const std::string small = post("/small", "Content-Length: 50\r\n", std::string(50, 'x'));
  EXPECT_EQ(small.rfind("HTTP/1.1 413 ", 0), 0u) << small;
  EXPECT_NE(small.find("limit of 10 bytes"), std::string::npos) << small;
  // Past the largest limit Beast refuses the length as it reads the head;
  // the answer still names the path's own limit.
  for (const auto& [path, limit] : {std::pair{"/big/echo", "1000"}, std::pair{"/echo", "100"}}) {
    const std::string huge = post(path, "Content-Length: 5000\r\n", "");
    EXPECT_EQ(huge.rfind("HTTP/1.1 413 ", 0), 0u) << huge;
    EXPECT_NE(huge.find(std::string("limit of ") + limit + " bytes"), std::string::npos) << huge;
  }
}

TEST(HttpServer, BodiesHeldAtOnceAreCappedForAllConnectionsTogether) {
  http::Limits limits;
  limits.max_body_bytes = 100;
  limits.max_body_memory = 100;
  TestServer s(limits);
  Client a(s.port), b(s.port), chunked(s.port);
  // Holds 80 from its head on; the 100 Continue says the head was taken.
  a.send("POST /echo HTTP/1.1\r\nContent-Length: 80\r\nExpect: 100-continue\r\n\r\nfirst part ");
  ASSERT_EQ(a.read_some(), "HTTP/1.1 100 Continue\r\n\r\n");
  b.send("POST /echo HTTP/1.1\r\nContent-Length: 50\r\n\r\n");
  const std::string refused = b.read_all();
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("Retry-After: 1\r\n"), std::string::npos) << refused;
  // A chunked body is held as it grows: 15 bytes fit beside the 80, 25 do not.
  chunked.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n" +
               std::string(15, 'x') + "\r\n");
  std::this_thread::sleep_for(100ms);
  chunked.send("a\r\n" + std::string(10, 'y') + "\r\n");
  const std::string cut = chunked.read_all();
  EXPECT_EQ(cut.rfind("HTTP/1.1 503 ", 0), 0u) << cut;
  // Once a's request is answered its 80 bytes are free again.
  a.send(std::string(69, 'z') + "POST /echo HTTP/1.1\r\nContent-Length: 90\r\nConnection: close\r\n\r\n" +
         std::string(90, 'w'));
  const std::string both = a.read_all();
  EXPECT_EQ(count(both, "HTTP/1.1 200 OK"), 2u) << both;
}

TEST(HttpServer, ConnectionsCountPerIPv4AddressAndPerIPv6Slash64) {
  auto key = [](const char* a) {
    return http::Server::Impl::client_key(boost::asio::ip::make_address(a));
  };
  EXPECT_EQ(key("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(key("::ffff:10.0.0.7"), "10.0.0.7");  // a dual-stack socket's IPv4 client
  EXPECT_EQ(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(key("2001:db8:1:2:bbbb:cccc:dddd:9"), "2001:db8:1:2::/64");
  EXPECT_NE(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
  EXPECT_EQ(key("::1"), "::/64");
}

TEST(HttpServer, ATokenDestroyedBeforeTheClientGoesIsNeverCalled) {
  auto presence = std::make_shared<http::ClientPresence>();
  int calls = 0;
  auto token = presence->on_gone([&] { ++calls; });
  auto kept = presence->on_gone([&] { calls += 10; });
  token.reset();
  presence->mark_gone();
  presence->mark_gone();
  EXPECT_EQ(calls, 10);
  auto late = presence->on_gone([&] { calls += 100; });  // already gone: at once
  EXPECT_EQ(calls, 110);
}

}  // namespace
