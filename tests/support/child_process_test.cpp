// ChildProcess::Group, against the kernel's own rule for orphaned process groups: when the last
// member of a group with a parent outside it (in the same session) exits, every member of the
// group gets SIGHUP and then SIGCONT if one of them is stopped. The stand-ins: a launcher (the
// shell that started ctest) leads a group and starts a test process in it; the test starts two
// children and stops them, one in its group (kTest) and one in a group of its own (kOwn); then the
// launcher exits. xpud took that SIGHUP as a reload and answered again, and a test that had
// stopped it to see it hang failed
// (XpudTest.WatcherSeesAHungXpudWithinSecondsAndItsReturnWithinOne).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using xpu::test::ChildProcess;
using xpu::test::process_state;
using xpu::test::wait_until;

void write_all(int fd, const void* data, size_t size) {
  if (::write(fd, data, size) != static_cast<ssize_t>(size)) _exit(3);
}

bool read_all(int fd, void* data, size_t size) {
  return ::read(fd, data, size) == static_cast<ssize_t>(size);
}

TEST(ChildProcessGroupTest, AChildOfItsOwnGroupStaysStoppedWhenTheTestsGroupIsOrphaned) {
  std::array<int, 2> report{};  // the test stand-in's pids: itself, the kTest child, the kOwn one
  std::array<int, 2> ready{};   // the test stand-in tells the launcher its children are stopped
  ASSERT_EQ(::pipe(report.data()), 0);
  ASSERT_EQ(::pipe(ready.data()), 0);

  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    setpgid(0, 0);  // leads a group; its parent (this test) is outside it, in the same session
    const pid_t test = fork();
    if (test < 0) _exit(2);
    if (test == 0) {
      // The test stand-in: lives on past the launcher, as a test outlives nothing it started.
      // It ignores SIGHUP, as the kernel's SIGHUP would otherwise end it; its kTest child
      // inherits that, so SIGCONT is what moves it on.
      ::signal(SIGHUP, SIG_IGN);
      ChildProcess in_test_group({"/bin/sleep", "60"}, "/dev/null");
      ChildProcess in_own_group({"/bin/sleep", "60"}, "/dev/null", {}, {},
                                ChildProcess::Group::kOwn);
      in_test_group.signal(SIGSTOP);
      in_own_group.signal(SIGSTOP);
      wait_until(
          [&] {
            return process_state(in_test_group.pid()) == 'T' &&
                   process_state(in_own_group.pid()) == 'T';
          },
          5s);
      const std::array<pid_t, 3> pids{getpid(), in_test_group.pid(), in_own_group.pid()};
      write_all(report[1], pids.data(), sizeof pids);
      write_all(ready[1], "r", 1);
      pause();  // until the test kills it; the children go with it (SIGKILL below)
      _exit(0);
    }
    char byte = 0;
    _exit(read_all(ready[0], &byte, 1) ? 0 : 1);  // exits once the children are stopped
  }
  ::close(report[1]);
  ::close(ready[1]);
  ::close(ready[0]);
  std::array<pid_t, 3> pids{};
  const bool reported = read_all(report[0], pids.data(), sizeof pids);
  ::close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(reported) << "the test stand-in did not report its children";
  const pid_t test = pids[0];
  const pid_t in_test_group = pids[1];
  const pid_t in_own_group = pids[2];
  struct Cleanup {
    std::array<pid_t, 3> pids;
    ~Cleanup() {
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
    }
  } cleanup{pids};
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(process_state(in_own_group), 'T') << "the kOwn child was not stopped";

  // The launcher's exit orphaned the group: the child in it is continued. (Where an ancestor of
  // this test is a child subreaper in the same session, the group is never orphaned, and there is
  // nothing to tell apart.)
  if (!wait_until([&] { return process_state(in_test_group) != 'T'; }, 10s)) {
    GTEST_SKIP() << "the kernel did not continue the stopped child of the orphaned group here "
                    "(a child subreaper in this session?): nothing to compare";
  }
  EXPECT_EQ(process_state(in_own_group), 'T')
      << "the child in a group of its own was continued too (pid " << in_own_group << ")";
  EXPECT_NE(process_state(test), 'x') << "the test stand-in is gone";
}

}  // namespace
