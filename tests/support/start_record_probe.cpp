// A program for start_record_test: does the one thing its argument names, with start_record.cpp
// linked in as in every test, so that the test can see whether that thing left a record.
//   thread        std::thread (pthread_create called from libstdc++.so, a shared library)
//   fork          fork, the child exiting at once
//   posix_spawn   posix_spawn of /bin/true
//   posix_spawnp  posix_spawnp of true
//   popen         popen of true
//   system        system of true
//   nothing       none of these (no record expected)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

extern char** environ;

namespace {

int wait_for(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int spawn(bool search_path) {
  char program[] = "true";
  char path[] = "/bin/true";
  char* argv[] = {search_path ? program : path, nullptr};
  pid_t pid = -1;
  const int rc = search_path ? posix_spawnp(&pid, program, nullptr, nullptr, argv, environ)
                             : posix_spawn(&pid, path, nullptr, nullptr, argv, environ);
  return rc == 0 ? wait_for(pid) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc == 2 ? argv[1] : "";
  if (what == "thread") {
    std::thread([] {}).join();
    return 0;
  }
  if (what == "fork") {
    const pid_t pid = fork();
    if (pid == 0) {
      _exit(0);
    }
    return pid > 0 ? wait_for(pid) : 1;
  }
  if (what == "posix_spawn" || what == "posix_spawnp") {
    return spawn(what == "posix_spawnp");
  }
  if (what == "popen") {
    FILE* pipe = popen("true", "r");
    return pipe != nullptr && pclose(pipe) == 0 ? 0 : 1;
  }
  if (what == "system") {
    return std::system("true") == 0 ? 0 : 1;
  }
  if (what == "nothing") {
    return 0;
  }
  std::fprintf(stderr, "usage: %s thread|fork|posix_spawn|posix_spawnp|popen|system|nothing\n",
               argv[0]);
  return 2;
}
