// A deadline for each request head. libmicrohttpd's own timeout counts inactivity, so a client
// that sends one byte every few seconds would keep a connection (and its buffer) for as long as
// it likes; this closes any connection whose request head is not complete within `limit` of
// the connection opening or of the previous reply, as Go's ReadHeaderTimeout does.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace shim::exporter {

// Thread-safe: libmicrohttpd calls in from each of its threads. The key is any pointer that
// names a connection for its lifetime.
class HeadDeadline {
 public:
  explicit HeadDeadline(std::chrono::milliseconds limit);
  ~HeadDeadline();  // stops the watcher; touches no socket after it returns
  HeadDeadline(const HeadDeadline&) = delete;
  HeadDeadline& operator=(const HeadDeadline&) = delete;

  // A connection was accepted: its first head is due from now.
  void opened(const void* connection, int fd);
  // Its head arrived: no deadline while the request is handled.
  void head_received(const void* connection);
  // Its reply went out and it stays open: the next head is due from now.
  void reply_sent(const void* connection);
  // It is closing; called before the descriptor is closed, so `fd` is never used after.
  void closed(const void* connection);

  // Connections cut by the deadline since start.
  std::size_t cut() const;

 private:
  struct Entry {
    int fd;
    std::chrono::steady_clock::time_point due;  // max(): none while a request is handled
  };
  void watch();

  const std::chrono::milliseconds limit_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unordered_map<const void*, Entry> connections_;
  std::size_t cut_ = 0;
  std::thread watcher_;  // last: starts once everything above exists
};

}  // namespace shim::exporter
