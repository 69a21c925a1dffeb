#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace xpu::test {

ChildProcess::ChildProcess(std::vector<std::string> argv, std::filesystem::path output_file,
                           std::map<std::string, std::string> env,
                           std::vector<std::string> unset_env, Group group)
    : output_file_(std::move(output_file)) {
  std::vector<char*> args;
  for (auto& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  // Also from this side, so that the group exists when the constructor returns, whichever of the
  // two runs first (the call that comes second fails harmlessly, or finds it done).
  if (pid_ > 0 && group == Group::kOwn) setpgid(pid_, pid_);
  if (pid_ == 0) {
    if (group == Group::kOwn) setpgid(0, 0);
    int fd = ::open(output_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    // The test may have blocked signals; the child starts with a clean mask.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
    for (const auto& name : unset_env) unsetenv(name.c_str());
    execv(args[0], args.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
}

void ChildProcess::signal(int signo) const {
  ::kill(pid_, signo);
}

bool ChildProcess::running() {
  if (status_) return false;
  int status = 0;
  pid_t rc = waitpid(pid_, &status, WNOHANG);
  if (rc == pid_) {
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return rc == 0;
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

std::string ChildProcess::output() const {
  std::ifstream in(output_file_);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 'x';
  // The name in parentheses may hold spaces and parentheses itself; the state follows the last.
  const auto name_end = line.rfind(')');
  return name_end == std::string::npos || name_end + 2 >= line.size() ? 'x' : line[name_end + 2];
}

std::filesystem::path binary_path(const std::string& relative) {
  return std::filesystem::path(XPU_BINARY_DIR) / relative;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "xpu-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::trunc);
  out << content;
  out.close();  // a write that fails only when flushed must still throw
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return text.str();
}

}  // namespace xpu::test
