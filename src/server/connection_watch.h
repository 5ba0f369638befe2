// Noticing that a client went away while its request is still generating.
// httplib 0.11 does not tell a handler about its socket, so the handler finds
// it by the connection's addresses; a watcher thread then peeks at every
// registered socket a few times a second and cancels the request of any whose
// peer has closed, so the engine drops it at its next step and frees its KV.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace hearth::server {

// The open socket of this process whose local and peer addresses are these,
// or -1.
int find_socket(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

// True if the peer of a connected socket has closed it (or reset it).
bool peer_closed(int fd);

class ConnectionWatch {
 public:
  explicit ConnectionWatch(std::chrono::milliseconds interval = std::chrono::milliseconds(25));
  ~ConnectionWatch();

  // Calls on_close (once, from the watcher thread) when fd's peer closes.
  // The caller keeps fd open until it calls remove(id).
  int add(int fd, std::function<void()> on_close);
  void remove(int id);

 private:
  void loop();

  struct Entry {
    int fd;
    std::function<void()> on_close;
    bool fired = false;
  };
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<int, Entry> entries_;
  int next_id_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace hearth::server
