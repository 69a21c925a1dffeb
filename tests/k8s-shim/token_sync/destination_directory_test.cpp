#include "k8s-shim/token_sync/destination_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/token_sync/file_status.h"
#include "tests/k8s-shim/token_sync/projected_volume.h"
#include "tests/support/child_process.h"

namespace shim::token_sync {
namespace {

namespace fs = std::filesystem;
using Change = DestinationDirectory::Change;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::lstat_or_throw;
using testing::mode_bits;
using testing::read_file;
using xpu::test::TempDir;
using xpu::test::write_file;

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class DestinationDirectoryTest : public ::testing::Test {
 protected:
  DestinationDirectory open_dest() {
    auto dir = DestinationDirectory::open(dest_);
    if (!dir) throw std::runtime_error(dir.error());
    return std::move(*dir);
  }
  TempDir temp_;
  fs::path dest_ = temp_.path() / "host" / "auth";
};

TEST_F(DestinationDirectoryTest, CreatesTheDirectoryWithMode0700) {
  auto dir = open_dest();
  EXPECT_TRUE(dir.created());
  EXPECT_FALSE(dir.fixed_mode());
  EXPECT_EQ(mode_bits(dest_), 0700u);
}

TEST_F(DestinationDirectoryTest, FixesAnExistingDirectoryWithMode0755) {
  fs::create_directories(dest_);
  ::chmod(dest_.c_str(), 0755);
  auto dir = open_dest();
  EXPECT_FALSE(dir.created());
  ASSERT_TRUE(dir.fixed_mode());
  EXPECT_EQ(*dir.fixed_mode(), 0755u);
  EXPECT_EQ(mode_bits(dest_), 0700u);
}

TEST_F(DestinationDirectoryTest, RefusesASymlinkAsTheDirectory) {
  fs::create_directories(temp_.path() / "elsewhere");
  fs::create_directories(dest_.parent_path());
  fs::create_directory_symlink(temp_.path() / "elsewhere", dest_);
  auto dir = DestinationDirectory::open(dest_);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error(), HasSubstr(dest_.string() + ": is a symlink; refusing"));
}

TEST_F(DestinationDirectoryTest, RefusesAFileAsTheDirectory) {
  fs::create_directories(dest_.parent_path());
  write_file(dest_, "x");
  auto dir = DestinationDirectory::open(dest_);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error(), HasSubstr("exists but is not a directory"));
}

TEST_F(DestinationDirectoryTest, RefusesADirectoryOwnedBySomeoneElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand the directory to another user";
  fs::create_directories(dest_);
  ASSERT_EQ(::chown(dest_.c_str(), 65534, 65534), 0);
  auto dir = DestinationDirectory::open(dest_);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error(), HasSubstr("is owned by uid 65534"));
}

// Whoever may write to the directory holding the destination could rename it away and put their
// own, with their own kubeconfig, where the XPU runtime reads.
TEST_F(DestinationDirectoryTest, RefusesAParentOthersCanWriteTo) {
  fs::create_directories(dest_);
  ASSERT_EQ(::chmod(dest_.parent_path().c_str(), 0777), 0);
  auto dir = DestinationDirectory::open(dest_);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error(), HasSubstr(dest_.parent_path().string() +
                                     ": is writable by its group or by others (mode 0777)"));
  ASSERT_EQ(::chmod(dest_.parent_path().c_str(), 01777), 0);  // sticky does not help: refused
  EXPECT_FALSE(DestinationDirectory::open(dest_).ok());
  ASSERT_EQ(::chmod(dest_.parent_path().c_str(), 0755), 0);
  EXPECT_TRUE(DestinationDirectory::open(dest_).ok());
}

TEST_F(DestinationDirectoryTest, RefusesAParentOwnedBySomeoneElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand the directory to another user";
  fs::create_directories(dest_);
  ASSERT_EQ(::chown(dest_.parent_path().c_str(), 65534, 65534), 0);
  auto dir = DestinationDirectory::open(dest_);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error(), HasSubstr("is owned by uid 65534, who could replace"));
}

// The chart mounts the host's parent apart, read-only: a view of the same directory (here
// through a symlink, as a second mount would show it) passes, and once the destination is
// renamed away and another directory put in its place, the view shows that and writing stops.
TEST_F(DestinationDirectoryTest, AParentViewMustHoldTheVeryDirectoryWrittenTo) {
  fs::create_directories(dest_);
  const fs::path view = temp_.path() / "parent-view";
  fs::create_directory_symlink(dest_.parent_path(), view);
  auto dir = DestinationDirectory::open(dest_, view);
  ASSERT_TRUE(dir.ok()) << dir.error();

  // What an owner of the parent other than root could do: move the destination away (a mount of
  // it in the container still reaches it there) and put another directory in its place.
  const fs::path mounted = temp_.path() / "mounted" / "auth";
  fs::create_directory(mounted.parent_path());
  fs::rename(dest_, mounted);
  fs::create_directory(dest_);
  auto swapped = DestinationDirectory::open(mounted, view);
  ASSERT_FALSE(swapped.ok());
  EXPECT_THAT(swapped.error(), HasSubstr("is not the directory written to"));

  const fs::path elsewhere = temp_.path() / "elsewhere";
  fs::create_directory(elsewhere);
  auto missing = DestinationDirectory::open(dest_, elsewhere);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("has no auth"));
}

TEST_F(DestinationDirectoryTest, WritesCreateReplaceAndSkipUnchanged) {
  auto dir = open_dest();
  auto created = dir.write_file("token", "first");
  ASSERT_TRUE(created.ok()) << created.error();
  EXPECT_EQ(created->change, Change::Created);
  EXPECT_EQ(read_file(dest_ / "token"), "first");
  EXPECT_EQ(mode_bits(dest_ / "token"), 0600u);

  auto same = dir.write_file("token", "first");
  ASSERT_TRUE(same.ok()) << same.error();
  EXPECT_EQ(same->change, Change::Unchanged);

  // Same size, different bytes: compared by content, not by size.
  auto replaced = dir.write_file("token", "fir5t");
  ASSERT_TRUE(replaced.ok()) << replaced.error();
  EXPECT_EQ(replaced->change, Change::Replaced);
  EXPECT_EQ(replaced->previous_size, 5u);
  EXPECT_EQ(read_file(dest_ / "token"), "fir5t");

  EXPECT_THAT(entries(dest_), ElementsAre("token")) << "no temp file left behind";
}

TEST_F(DestinationDirectoryTest, UnchangedContentWithWrongModeIsFixedInPlace) {
  auto dir = open_dest();
  ASSERT_TRUE(dir.write_file("token", "abc").ok());
  ::chmod((dest_ / "token").c_str(), 0644);
  const auto inode = lstat_or_throw(dest_ / "token").st_ino;
  auto fixed = dir.write_file("token", "abc");
  ASSERT_TRUE(fixed.ok()) << fixed.error();
  EXPECT_EQ(fixed->change, Change::ModeFixed);
  EXPECT_EQ(mode_bits(dest_ / "token"), 0600u);
  EXPECT_EQ(lstat_or_throw(dest_ / "token").st_ino, inode);
}

TEST_F(DestinationDirectoryTest, ReplacesAPlantedSymlinkWithoutFollowingIt) {
  auto dir = open_dest();
  const auto victim = temp_.path() / "victim";
  write_file(victim, "abc");  // even the same content must not count as "in sync"
  ::chmod(victim.c_str(), 0644);
  fs::create_symlink(victim, dest_ / "token");
  auto update = dir.write_file("token", "abc");
  ASSERT_TRUE(update.ok()) << update.error();
  EXPECT_EQ(update->change, Change::ReplacedSymlink);
  EXPECT_TRUE(S_ISREG(lstat_or_throw(dest_ / "token").st_mode));
  EXPECT_EQ(read_file(dest_ / "token"), "abc");
  EXPECT_EQ(mode_bits(victim), 0644u) << "the symlink's target must not be chmod-ed";
  EXPECT_EQ(read_file(victim), "abc");
}

TEST_F(DestinationDirectoryTest, PlantedSymlinkAtTheTempNameIsNotFollowed) {
  auto dir = open_dest();
  const auto victim = temp_.path() / "victim";
  write_file(victim, "do not touch");
  // The first temp name this process would pick.
  const std::string temp =
      std::string(kTempFilePrefix) + "token." + std::to_string(::getpid()) + ".0";
  fs::create_symlink(victim, dest_ / temp);
  auto update = dir.write_file("token", "secret");
  ASSERT_TRUE(update.ok()) << update.error();
  EXPECT_EQ(read_file(victim), "do not touch");
  EXPECT_EQ(read_file(dest_ / "token"), "secret");
  EXPECT_TRUE(fs::is_symlink(dest_ / temp)) << "not ours to remove during a write";
}

TEST_F(DestinationDirectoryTest, DirectoryInPlaceOfAFileIsAnErrorAndNoTempFileStays) {
  auto dir = open_dest();
  fs::create_directory(dest_ / "token");
  auto update = dir.write_file("token", "abc");
  ASSERT_FALSE(update.ok());
  EXPECT_THAT(update.error(), HasSubstr((dest_ / "token").string() + ": cannot rename"));
  EXPECT_THAT(entries(dest_), ElementsAre("token"));
}

TEST_F(DestinationDirectoryTest, RemovesStaleTempFiles) {
  auto dir = open_dest();
  write_file(dest_ / (std::string(kTempFilePrefix) + "token.1.0"), "half");
  write_file(dest_ / "keep", "x");
  EXPECT_THAT(dir.remove_stale_temp_files(),
              ElementsAre(std::string(kTempFilePrefix) + "token.1.0"));
  EXPECT_THAT(entries(dest_), ElementsAre("keep"));
}

}  // namespace
}  // namespace shim::token_sync
