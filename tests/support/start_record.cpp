// Records which test programs start a thread or another process, so that the ThreadSanitizer pass
// builds and runs only those (scripts/test.sh, scripts/build-variants.sh tsan). A program that only
// ever has one thread and starts no other program cannot race, and compiling the others under TSan
// was half of that build's time for nothing.
//
// Linked into every test of the main build (tests/CMakeLists.txt), never into a sanitizer build,
// whose runtime defines these functions itself. Each of them here marks the program and then calls
// the C library's own (dlsym(RTLD_NEXT)): pthread_create (std::thread, gRPC's and sd-bus's threads,
// GoogleTest's), fork (ChildProcess, GoogleTest's death tests), posix_spawn and posix_spawnp, popen
// and system. The executable's definition comes first in the dynamic linker's lookup order, and the
// link exports it (tests/support/CMakeLists.txt), so that calls from shared libraries reach it too.
//
// With XPU_TEST_START_RECORD_DIR set, the first such call creates an empty file there named after
// the program (/proc/self/exe's last component, the test target's name). Without it nothing is
// written. A record that cannot be written ends the program with a message: a test left out of the
// TSan pass in silence is the failure this exists to prevent (tests/support/start_record_test.cpp
// checks each function).

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Once per process: the first start marks the program and the others find the mark there. The one
// piece of process-wide state here, as the functions it stands in front of are process-wide.
std::atomic<bool> g_recorded{false};

[[noreturn]] void record_failed(const char* what, const char* path) noexcept {
  std::fprintf(stderr, "start_record: cannot %s %s: %s\n", what, path, std::strerror(errno));
  std::abort();
}

void record_start() noexcept {
  if (g_recorded.load(std::memory_order_acquire)) {
    return;
  }
  const char* dir = std::getenv("XPU_TEST_START_RECORD_DIR");
  if (dir == nullptr || *dir == '\0') {
    return;
  }
  char exe[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (length <= 0) {
    record_failed("read", "/proc/self/exe");
  }
  exe[length] = '\0';
  const char* slash = std::strrchr(exe, '/');
  const char* name = slash == nullptr ? exe : slash + 1;
  char path[PATH_MAX];
  if (std::snprintf(path, sizeof path, "%s/%s", dir, name) >= static_cast<int>(sizeof path)) {
    errno = ENAMETOOLONG;
    record_failed("name a record in", dir);
  }
  const int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    record_failed("create", path);
  }
  close(fd);
  g_recorded.store(true, std::memory_order_release);
}

// The C library's definition of NAME, found once.
template <typename Function>
Function next_definition(const char* name) noexcept {
  void* found = dlsym(RTLD_NEXT, name);
  if (found == nullptr) {
    std::fprintf(stderr, "start_record: the C library has no %s\n", name);
    std::abort();
  }
  return reinterpret_cast<Function>(found);
}

}  // namespace

extern "C" {

int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*start)(void*),
                   void* argument) noexcept {
  using Function = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto next = next_definition<Function>("pthread_create");
  record_start();
  return next(thread, attributes, start, argument);
}

pid_t fork() noexcept {
  using Function = pid_t (*)();
  static const auto next = next_definition<Function>("fork");
  record_start();
  return next();
}

// posix_spawn's and posix_spawnp's shared signature.
using SpawnFunction = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                              const posix_spawnattr_t*, char* const[], char* const[]);

int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  static const auto next = next_definition<SpawnFunction>("posix_spawn");
  record_start();
  return next(pid, path, actions, attributes, argv, envp);
}

int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                 const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  static const auto next = next_definition<SpawnFunction>("posix_spawnp");
  record_start();
  return next(pid, file, actions, attributes, argv, envp);
}

FILE* popen(const char* command, const char* mode) {
  using Function = FILE* (*)(const char*, const char*);
  static const auto next = next_definition<Function>("popen");
  record_start();
  return next(command, mode);
}

int system(const char* command) {
  using Function = int (*)(const char*);
  static const auto next = next_definition<Function>("system");
  record_start();
  return next(command);
}

}  // extern "C"
