#include "tests/k8s-shim/token_sync/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace shim::token_sync::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::optional<std::string>>& environment,
                           const std::filesystem::path& log_file) {
  std::vector<std::string> env_strings;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string variable = *entry;
    if (!environment.contains(variable.substr(0, variable.find('=')))) env_strings.push_back(variable);
  }
  for (const auto& [name, value] : environment)
    if (value) env_strings.push_back(name + "=" + *value);

  std::vector<char*> argv_pointers, env_pointers;
  for (const auto& arg : argv) argv_pointers.push_back(const_cast<char*>(arg.c_str()));
  argv_pointers.push_back(nullptr);
  for (const auto& variable : env_strings) env_pointers.push_back(const_cast<char*>(variable.c_str()));
  env_pointers.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  // The child must start with default signal handling whatever this process has set up.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &empty);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = posix_spawn(&pid_, argv_pointers[0], &actions, &attributes, argv_pointers.data(), env_pointers.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
}

ChildProcess::~ChildProcess() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

void ChildProcess::signal(int signo) const {
  if (!reaped_) ::kill(pid_, signo);
}

std::optional<int> ChildProcess::wait_for_exit(std::chrono::milliseconds timeout) {
  std::optional<int> result;
  wait_until(timeout, [&] {
    int status = 0;
    pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      result = status;
    }
    return reaped_;
  });
  return result;
}

std::string shim_binary() { return XPU_SHIM_BINARY; }

}  // namespace shim::token_sync::testing
