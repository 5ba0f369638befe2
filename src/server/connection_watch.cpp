#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <cerrno>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace hearth::server {

namespace {

bool same_address(const sockaddr_storage& ss, const std::string& addr, int port) {
  char buf[INET6_ADDRSTRLEN] = {};
  int p = -1;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    p = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    p = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  return p == port && addr == buf;
}

}  // namespace

int find_socket(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st;
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !same_address(ss, remote_addr, remote_port))
      continue;
    len = sizeof ss;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !same_address(ss, local_addr, local_port))
      continue;
    found = int(fd);
    break;
  }
  closedir(dir);
  return found;
}

bool peer_closed(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly shutdown by the peer
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return false;  // data waiting (a pipelined request): still there
}

ConnectionWatch::ConnectionWatch(std::chrono::milliseconds interval) : interval_(interval) {
  thread_ = std::thread([this] { loop(); });
}

ConnectionWatch::~ConnectionWatch() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int ConnectionWatch::add(int fd, std::function<void()> on_close) {
  std::lock_guard lock(mutex_);
  int id = next_id_++;
  entries_.emplace(id, Entry{fd, std::move(on_close)});
  wake_.notify_all();
  return id;
}

void ConnectionWatch::remove(int id) {
  std::lock_guard lock(mutex_);
  entries_.erase(id);
}

void ConnectionWatch::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, interval_, [&] { return stop_; });
    if (stop_) break;
    // Peeking is one non-blocking syscall per socket; the lock keeps every
    // fd registered (hence open) while it is looked at.
    std::vector<std::function<void()>> fire;
    for (auto& [id, e] : entries_) {
      if (!e.fired && peer_closed(e.fd)) {
        e.fired = true;
        fire.push_back(e.on_close);
      }
    }
    for (auto& f : fire) f();  // cheap (a flag store); safe under the lock
  }
}

}  // namespace hearth::server
