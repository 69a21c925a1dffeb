// Runs a binary as a child process for end-to-end tests: output to a log file, explicit
// environment, waits bounded by a deadline, and never leaves the child behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shim::token_sync::testing {

class ChildProcess {
 public:
  // argv[0] is the binary. `environment` overrides (or with nullopt removes) variables of
  // this process's environment. stdout and stderr go to `log_file`. Throws if spawning fails.
  ChildProcess(const std::vector<std::string>& argv,
               const std::map<std::string, std::optional<std::string>>& environment,
               const std::filesystem::path& log_file);
  // Kills (SIGKILL) and reaps a child that is still running.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signo) const;
  // The wait status (as from waitpid) once the child exited, or nullopt at the deadline.
  std::optional<int> wait_for_exit(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Polls `condition` every few milliseconds until it holds or `timeout` passes; returns the
// last result. For waiting on something another process does, with a deadline.
template <typename Condition>
bool wait_until(std::chrono::milliseconds timeout, Condition condition);

// The built xpu-k8s-shim binary (the test target depends on it).
std::string shim_binary();

}  // namespace shim::token_sync::testing

#include <thread>

template <typename Condition>
bool shim::token_sync::testing::wait_until(std::chrono::milliseconds timeout, Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}
