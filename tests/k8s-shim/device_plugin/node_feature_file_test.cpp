// The NFD feature file on disk: written whole (temp file + rename), rewritten only when its
// bytes change, never written through a symlink, put back when removed, removed at stop.
#include "k8s-shim/device_plugin/node_feature_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "tests/support/child_process.h"

namespace shim {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Stamp {
  ino_t inode = 0;
  timespec mtime{};
  bool operator==(const Stamp& other) const {
    return inode == other.inode && mtime.tv_sec == other.mtime.tv_sec &&
           mtime.tv_nsec == other.mtime.tv_nsec;
  }
};

Stamp stamp(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return Stamp{st.st_ino, st.st_mtim};
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class NodeFeatureFileTest : public ::testing::Test {
 protected:
  xpu::test::TempDir tmp_;
  fs::path dir_ = tmp_.path() / "features.d";
  fs::path path_ = dir_ / "kunlunxin-xpu";
  void SetUp() override { fs::create_directory(dir_); }
};

TEST_F(NodeFeatureFileTest, NothingIsWrittenBeforeThereIsContent) {
  NodeFeatureFile file(path_);
  file.sync();
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(NodeFeatureFileTest, WrittenWholeReadableAndWithoutLeftovers) {
  ::mode_t old = ::umask(077);
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  ::umask(old);
  EXPECT_EQ(read(path_), "kunlunxin.com/xpu.count=8\n");
  EXPECT_EQ(fs::status(path_).permissions(), fs::perms(0644));  // NFD's worker reads it
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"kunlunxin-xpu"});
}

TEST_F(NodeFeatureFileTest, RewrittenOnlyWhenTheBytesChange) {
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  const Stamp first = stamp(path_);

  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  file.sync();
  EXPECT_EQ(stamp(path_), first);

  // A new process with the same facts leaves the file alone too.
  NodeFeatureFile restarted(path_);
  restarted.set_content("kunlunxin.com/xpu.count=8\n");
  restarted.sync();
  EXPECT_EQ(stamp(path_), first);

  restarted.set_content("kunlunxin.com/xpu.count=9\n");
  restarted.sync();
  EXPECT_EQ(read(path_), "kunlunxin.com/xpu.count=9\n");
  EXPECT_NE(stamp(path_).inode, first.inode) << "replaced by rename, not rewritten in place";
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"kunlunxin-xpu"});
}

TEST_F(NodeFeatureFileTest, AFileRemovedOrEditedBySomeoneElseIsPutBack) {
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  fs::remove(path_);
  file.sync();
  EXPECT_EQ(read(path_), "kunlunxin.com/xpu.count=8\n");
  xpu::test::write_file(path_, "kunlunxin.com/xpu.count=1\n");
  file.sync();
  EXPECT_EQ(read(path_), "kunlunxin.com/xpu.count=8\n");
}

TEST_F(NodeFeatureFileTest, SymlinksAreReplacedNeverWrittenThrough) {
  const fs::path target = tmp_.path() / "elsewhere";
  xpu::test::write_file(target, "precious\n");
  fs::create_symlink(target, path_);
  fs::create_symlink(target, dir_ / ".kunlunxin-xpu.tmp");  // planted at the temp name as well
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  EXPECT_EQ(read(target), "precious\n");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path_)));
  EXPECT_EQ(read(path_), "kunlunxin.com/xpu.count=8\n");
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"kunlunxin-xpu"});
}

TEST_F(NodeFeatureFileTest, AFifoInTheWayIsReplacedWithoutBeingOpened) {
  // Opening a FIFO for reading would block (or, non-blocking, read nothing): it is never opened.
  ASSERT_EQ(::mkfifo(path_.c_str(), 0644), 0);
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path_)));
  EXPECT_EQ(read(path_), "kunlunxin.com/xpu.count=8\n");
}

TEST_F(NodeFeatureFileTest, AMissingDirectoryIsRetriedNotFatal) {
  fs::remove(dir_);
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();  // logs a warning
  EXPECT_FALSE(fs::exists(dir_));
  fs::create_directory(dir_);
  file.sync();
  EXPECT_EQ(read(path_), "kunlunxin.com/xpu.count=8\n");
}

TEST_F(NodeFeatureFileTest, ADirectoryInTheWayIsAnErrorNotACrash) {
  fs::create_directory(path_);
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  EXPECT_TRUE(fs::is_directory(path_));
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"kunlunxin-xpu"})
      << "the temp file is cleaned up";
}

TEST_F(NodeFeatureFileTest, RemoveTakesTheFileAndALeftoverTempFile) {
  NodeFeatureFile file(path_);
  file.set_content("kunlunxin.com/xpu.count=8\n");
  file.sync();
  xpu::test::write_file(dir_ / ".kunlunxin-xpu.tmp", "half");
  xpu::test::write_file(dir_ / "other-vendor", "vendor.io/x=1\n");
  file.remove();
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"other-vendor"});
  file.remove();  // twice is fine
  fs::remove(dir_ / "other-vendor");
  fs::remove(dir_);
  file.remove();  // and without the directory
}

TEST(NodeFeatureFilePath, NamesNfdWouldReadOnly) {
  EXPECT_TRUE(
      validate_feature_file_path("/etc/kubernetes/node-feature-discovery/features.d/kunlunxin-xpu")
          .ok());
  EXPECT_TRUE(validate_feature_file_path("kunlunxin-xpu").ok());
  EXPECT_FALSE(validate_feature_file_path("").ok());
  EXPECT_FALSE(validate_feature_file_path("/etc/features.d/").ok());
  EXPECT_FALSE(validate_feature_file_path("/etc/features.d/.").ok());
  EXPECT_FALSE(validate_feature_file_path("/etc/features.d/.kunlunxin-xpu").ok());
}

}  // namespace
}  // namespace shim
