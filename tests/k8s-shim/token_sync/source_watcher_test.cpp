#include "k8s-shim/token_sync/source_watcher.h"

#include <poll.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/token_sync/projected_volume.h"
#include "tests/support/child_process.h"

namespace shim::token_sync {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ProjectedVolume;
using xpu::test::TempDir;
using xpu::test::write_file;

// inotify queues events synchronously with the change, so "nothing queued" right after a change
// is a reliable negative; positives still get a deadline.
bool readable(int fd, int timeout_ms) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, timeout_ms) == 1;
}

class SourceWatcherTest : public ::testing::Test {
 protected:
  SourceWatcher make_watcher() {
    auto watcher = SourceWatcher::create(volume_.dir());
    if (!watcher) throw std::runtime_error(watcher.error());
    if (auto armed = watcher->arm(); !armed) throw std::runtime_error(armed.error());
    return std::move(*watcher);
  }
  std::map<std::string, std::string> files(const std::string& token) {
    return {{"token", token}, {"ca.crt", testing::valid_ca_cert()}, {"namespace", "default"}};
  }

  TempDir temp_;
  ProjectedVolume volume_{temp_.path() / "serviceaccount"};
};

TEST_F(SourceWatcherTest, QuietWhenNothingChanged) {
  volume_.publish(files("v1"));
  auto watcher = make_watcher();
  EXPECT_FALSE(readable(watcher.fd(), 0));
  EXPECT_FALSE(watcher.drain());
}

TEST_F(SourceWatcherTest, ReportsEveryDataSwap) {
  volume_.publish(files("v1"));
  auto watcher = make_watcher();
  for (int rotation = 2; rotation <= 4; ++rotation) {
    volume_.publish(files("v" + std::to_string(rotation)));
    ASSERT_TRUE(readable(watcher.fd(), 5000)) << "rotation " << rotation;
    EXPECT_TRUE(watcher.drain());
    EXPECT_TRUE(watcher.armed()) << "a ..data swap must not lose the watch";
    EXPECT_FALSE(readable(watcher.fd(), 0));
  }
}

TEST_F(SourceWatcherTest, ReportsAFileWrittenInAPlainDirectory) {
  auto watcher = make_watcher();
  write_file(volume_.dir() / "token", "abc");
  ASSERT_TRUE(readable(watcher.fd(), 5000));
  EXPECT_TRUE(watcher.drain());
}

TEST_F(SourceWatcherTest, RearmsOnADirectoryThatReplacedTheWatchedOne) {
  volume_.publish(files("v1"));
  auto watcher = make_watcher();
  const fs::path moved = temp_.path() / "moved-away";
  fs::rename(volume_.dir(), moved);
  ASSERT_TRUE(readable(watcher.fd(), 5000));
  EXPECT_TRUE(watcher.drain());
  EXPECT_FALSE(watcher.armed());

  fs::create_directory(volume_.dir());
  ASSERT_TRUE(watcher.arm().ok());
  EXPECT_TRUE(watcher.armed());
  // Stale events (IN_IGNORED of the old watch) may be queued; they must not count as changes.
  watcher.drain();

  write_file(moved / "token", "old place");
  EXPECT_FALSE(readable(watcher.fd(), 0)) << "the directory that moved away is still watched";
  write_file(volume_.dir() / "token", "new place");
  ASSERT_TRUE(readable(watcher.fd(), 5000));
  EXPECT_TRUE(watcher.drain());
}

TEST_F(SourceWatcherTest, DeletedDirectoryLosesTheWatchUntilItIsBack) {
  volume_.publish(files("v1"));
  auto watcher = make_watcher();
  fs::remove_all(volume_.dir());
  ASSERT_TRUE(readable(watcher.fd(), 5000));
  EXPECT_TRUE(watcher.drain());
  EXPECT_FALSE(watcher.armed());

  auto rearmed = watcher.arm();
  ASSERT_FALSE(rearmed.ok());
  EXPECT_THAT(rearmed.error(),
              HasSubstr(volume_.dir().string() + ": cannot watch: No such file or directory"));

  fs::create_directory(volume_.dir());
  ASSERT_TRUE(watcher.arm().ok());
  write_file(volume_.dir() / "token", "back");
  ASSERT_TRUE(readable(watcher.fd(), 5000));
  EXPECT_TRUE(watcher.drain());
}

}  // namespace
}  // namespace shim::token_sync
