// The /proc scan before a reset, on fake trees: /proc/<pid>/fd/<n> links as procfs shows them,
// and what a hostile or changing /proc does (non-numeric names, a pid whose fd directory is not
// one, links to nothing, xpud's own pid).
#include "xpud/recovery/device_node_users.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"

namespace xpud {
namespace {

namespace fs = std::filesystem;
using xpu::fakes::FakeSysfsTree;

class DeviceNodeUsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.add_device_node(1);
    tree_.add_device_node(2);
    tree_.add_control_node();
  }
  fs::path node(unsigned index) const { return tree_.root() / ("dev/xpu" + std::to_string(index)); }
  DeviceNodeUsers scan(unsigned own_pid = 1) const {
    return find_device_node_users(tree_.root() / "proc", {node(1)}, own_pid);
  }

  FakeSysfsTree tree_;
};

TEST_F(DeviceNodeUsersTest, FindsEveryProcessWithTheNodeOpenAndNoOther) {
  tree_.add_process_fd(300, 4, node(1).string());
  tree_.add_process_fd(300, 5, node(1).string());  // twice open, counted once
  tree_.add_process_fd(20, 3, node(1).string());
  tree_.add_process_fd(21, 3, node(2).string());                         // another card
  tree_.add_process_fd(22, 3, (tree_.root() / "dev/xpuctrl").string());  // every card's
  tree_.add_process_fd(23, 0, "anon_inode:[eventfd]");                   // names no file
  const DeviceNodeUsers users = scan();
  EXPECT_EQ(users.pids, (std::vector<unsigned>{20, 300}));
  EXPECT_EQ(users.nodes_found, 1u);
  EXPECT_EQ(users.vanished, 1u);  // the eventfd's link leads nowhere in a fake tree
}

TEST_F(DeviceNodeUsersTest, XpudItselfIsNoUser) {
  tree_.add_process_fd(77, 9, node(1).string());
  EXPECT_TRUE(scan(77).pids.empty());
}

TEST_F(DeviceNodeUsersTest, HostileEntriesAreSkippedAndCountedNeverFatal) {
  tree_.add_process_fd(40, 3, node(1).string());
  tree_.write_file("proc/self-ish/fd/3", "");  // not a pid
  tree_.write_file("proc/0/fd/3", "");         // no process has pid 0
  tree_.write_file("proc/41/fd", "not a directory");
  fs::create_directories(tree_.root() / "proc/42");  // ended: no fd directory any more
  tree_.add_process_fd(43, 1, (tree_.root() / "gone").string());
  const DeviceNodeUsers users = scan();
  EXPECT_EQ(users.pids, (std::vector<unsigned>{40}));
  EXPECT_EQ(users.unreadable, 1u);  // 41
  EXPECT_EQ(users.vanished, 2u);    // 42, and 43's link
}

TEST_F(DeviceNodeUsersTest, ANodeThatDoesNotExistMatchesNothing) {
  tree_.add_process_fd(50, 3, "/dev/null");
  const DeviceNodeUsers users =
      find_device_node_users(tree_.root() / "proc", {tree_.root() / "dev/xpu9"}, 1);
  EXPECT_EQ(users.nodes_found, 0u);
  EXPECT_TRUE(users.pids.empty());
}

TEST(DeviceNodeUsers, ACharacterDeviceIsKnownByItsNumberWhateverThePath) {
  // The real /proc: this process opens /dev/null, and is found through it as a container's
  // process would be through the node its runtime made (same device number, another inode).
  std::FILE* held = std::fopen("/dev/null", "r");
  ASSERT_NE(held, nullptr);
  const DeviceNodeUsers users = find_device_node_users("/proc", {"/dev/null"}, 0);
  std::fclose(held);
  EXPECT_NE(std::find(users.pids.begin(), users.pids.end(), static_cast<unsigned>(::getpid())),
            users.pids.end());
}

TEST(DeviceNodeUsers, ANodeThatIsTheSimsStandInStandsForNoCard) {
  // The sim backend's /dev/xpuN stand for /dev/null (the real-node suite makes them c 1 3):
  // every process has that open, and none of them uses a card through it.
  std::FILE* held = std::fopen("/dev/null", "r");
  ASSERT_NE(held, nullptr);
  const DeviceNodeUsers users = find_device_node_users("/proc", {"/dev/null"}, 0, "/dev/null");
  std::fclose(held);
  EXPECT_EQ(users.nodes_found, 0u);
  EXPECT_TRUE(users.pids.empty());
}

}  // namespace
}  // namespace xpud
