// A test-owned $NOTIFY_SOCKET: receives what the daemon tells "systemd".
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace xpu::test {

class NotifySocket {
 public:
  explicit NotifySocket(const std::filesystem::path& path);
  const std::string& path() const { return path_; }
  // Drains pending datagrams into the message log.
  void poll();
  // Waits for a message containing `line` (e.g. "READY=1") after the first `skip` messages;
  // returns its position in the log, or -1 on timeout.
  int wait_for(const std::string& line, std::chrono::milliseconds timeout, size_t skip = 0);
  std::vector<std::string> messages();

 private:
  std::string path_;
  UniqueFd fd_;
  std::vector<std::string> messages_;
};

}  // namespace xpu::test
