// A child process for integration tests: started with fork/exec, its stdout+stderr captured to
// a file, killed (SIGKILL) if still running when the object goes away.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xpu::test {

class ChildProcess {
 public:
  // Which process group the child is in. kTest: the test's own, so that a Ctrl-C at the terminal
  // reaches it too. kOwn: one it leads, for a child the test stops (SIGSTOP). The kernel sends
  // SIGHUP and then SIGCONT to a group that holds a stopped process when the group is orphaned
  // (its last member with a parent outside it, in the same session, exits: the shell that started
  // ctest, say), and xpud takes SIGHUP as a reload and goes on answering. In a group of its own,
  // whose leader's parent is the test, the child stays stopped; only this object's destructor
  // stops it when the test ends.
  enum class Group { kTest, kOwn };

  // `env` entries are added to (or override) the test's environment; the variables named in
  // `unset_env` are removed from it (after `env` is applied), for a child that must not see one.
  ChildProcess(std::vector<std::string> argv, std::filesystem::path output_file,
               std::map<std::string, std::string> env = {}, std::vector<std::string> unset_env = {},
               Group group = Group::kTest);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signo) const;
  // Waits for exit; returns the exit status (128+N for a signal), nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();
  std::string output() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::filesystem::path output_file_;
};

// The state letter of /proc/PID/stat (T: stopped, S: sleeping, Z: exited and not yet waited for),
// 'x' when it cannot be read (the process is gone).
char process_state(pid_t pid);

// Paths of the binaries under test (from XPU_BINARY_DIR, set by ctest).
std::filesystem::path binary_path(const std::string& relative);

// A fresh temporary directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes a whole file (truncating), creating missing parent directories; throws on failure.
void write_file(const std::filesystem::path& path, const std::string& content);
// A whole file's bytes; throws when it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace xpu::test
