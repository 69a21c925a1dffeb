#include "k8s-shim/exporter/head_deadline.h"

#include <sys/socket.h>

#include <algorithm>

namespace shim::exporter {
namespace {

constexpr auto kNever = std::chrono::steady_clock::time_point::max();

}  // namespace

HeadDeadline::HeadDeadline(std::chrono::milliseconds limit)
    : limit_(limit), watcher_([this] { watch(); }) {}

HeadDeadline::~HeadDeadline() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  watcher_.join();
}

void HeadDeadline::opened(const void* connection, int fd) {
  std::lock_guard lock(mutex_);
  connections_[connection] = Entry{fd, std::chrono::steady_clock::now() + limit_};
}

void HeadDeadline::head_received(const void* connection) {
  std::lock_guard lock(mutex_);
  if (auto found = connections_.find(connection); found != connections_.end())
    found->second.due = kNever;
}

void HeadDeadline::reply_sent(const void* connection) {
  std::lock_guard lock(mutex_);
  if (auto found = connections_.find(connection); found != connections_.end())
    found->second.due = std::chrono::steady_clock::now() + limit_;
}

void HeadDeadline::closed(const void* connection) {
  std::lock_guard lock(mutex_);
  connections_.erase(connection);
}

std::size_t HeadDeadline::cut() const {
  std::lock_guard lock(mutex_);
  return cut_;
}

void HeadDeadline::watch() {
  // A quarter of the limit (at most a second) between looks: a slow client gets its limit and
  // at most that much more.
  const auto step = std::clamp<std::chrono::milliseconds>(limit_ / 4, std::chrono::milliseconds(10),
                                                          std::chrono::seconds(1));
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, step, [this] { return stopping_; })) {
    const auto now = std::chrono::steady_clock::now();
    for (auto& [connection, entry] : connections_) {
      if (entry.due > now) continue;
      // The descriptor is still MHD's and still open: closed() runs before MHD closes it and
      // needs this lock. Shutting the socket down makes MHD see the end of the stream and
      // close the connection in its own thread, the only one that may.
      ::shutdown(entry.fd, SHUT_RDWR);
      entry.due = kNever;
      ++cut_;
    }
  }
}

}  // namespace shim::exporter
