// A call sleeping in an injected delay, on a thread its caller gave up on (as xpud's time-boxed
// sampler does), may still be running when the process exits. It must return cleanly.
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "xpud/backends/xpuml/xpuml_api.h"

namespace {

using namespace std::chrono_literals;

std::atomic<bool> g_call_returned{false};  // set by the abandoned thread, read at exit

bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// The child: registers an exit handler first (so it runs after any static destructor the fake
// registers later), starts a slow call, and exits while the call sleeps. The handler then waits
// for the call to come back through whatever exit has torn down.
[[noreturn]] void child() {
  std::atexit([] {
    if (!wait_for([] { return g_call_returned.load(); }, 5s)) _exit(3);
  });
  void* library = dlopen(XPUML_FAKE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) _exit(4);
  auto init = symbol<decltype(&xpumlInit)>(library, "xpumlInit");
  auto handle_by_index =
      symbol<decltype(&xpumlDeviceGetHandleByIndex)>(library, "xpumlDeviceGetHandleByIndex");
  auto temperature =
      symbol<decltype(&xpumlDeviceGetTemperature)>(library, "xpumlDeviceGetTemperature");
  auto calls = symbol<unsigned (*)(const char*)>(library, "xpumlFakeCallCount");
  xpumlDevice_t device{};
  if (init() != XPUML_SUCCESS || handle_by_index(0, &device) != XPUML_SUCCESS) _exit(5);
  std::thread([temperature, device] {
    unsigned celsius = 0;
    if (temperature(device, XPUML_TEMPERATURE_SENSOR_DIE, &celsius) == XPUML_SUCCESS &&
        celsius == 66)
      g_call_returned = true;
  }).detach();
  if (!wait_for([&] { return calls("xpumlDeviceGetTemperature") == 1; }, 5s)) _exit(6);
  std::exit(0);
}

TEST(FakeXpumlExit, SlowCallAbandonedAtExitReturnsCleanly) {
  char pattern[] = "/tmp/fake-xpuml-exit-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::filesystem::path dir = pattern;
  std::ofstream(dir / "scenario.txt")
      << "devices 1\ndevice 0\ntemperature 66\ndelay xpumlDeviceGetTemperature 300\n";
  ASSERT_EQ(setenv("XPUML_FAKE_SCRIPT", (dir / "scenario.txt").c_str(), 1), 0);

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) child();

  int status = 0;
  bool exited = wait_for([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 10s);
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(exited) << "the child did not exit";
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
