// [xpuml] library as a list: the first candidate that loads and has the required symbols wins,
// the error names every candidate when none does, and the winner's path is the file the loader
// opened (also for a bare name it searched for).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/xpuml/xpuml_backend.h"
#include "xpud/backends/xpuml/xpuml_library.h"

namespace xpud {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class XpumlLibraryCandidatesTest : public ::testing::Test {
 protected:
  test::FakeXpumlHost host;
};

TEST_F(XpumlLibraryCandidatesTest, TheFirstThatLoadsWinsAndSaysWhichFile) {
  host.write_scenario("devices 1\n");
  host.tree().write_file("broken/libxpuml.so.1", "this is not an ELF file\n");
  const std::vector<std::filesystem::path> candidates = {
      host.dir() / "nope/libxpuml.so.1", host.dir() / "broken/libxpuml.so.1",
      test::fake_xpuml_library(), test::fake_xpuml_old_library()};
  auto backend = open_xpuml_backend(candidates, host.sysfs_root());
  ASSERT_TRUE(backend.ok()) << backend.error();
  EXPECT_EQ((*backend)->name(), "xpuml");
  EXPECT_EQ((*backend)->library_path(), test::fake_xpuml_library().string());
  auto found = (*backend)->discover();
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(found->size(), 1u);
}

TEST_F(XpumlLibraryCandidatesTest, ALibraryWithoutTheRequiredSymbolsIsPassedOver) {
  host.write_scenario("devices 1\n");
  auto library = xpuml::Library::open_first(
      {test::fake_xpuml_incomplete_library(), test::fake_xpuml_library()});
  ASSERT_TRUE(library.ok()) << library.error();
  EXPECT_EQ((*library)->path(), test::fake_xpuml_library());
}

TEST_F(XpumlLibraryCandidatesTest, WhenNoneLoadsTheErrorNamesEveryCandidate) {
  host.tree().write_file("broken/libxpuml.so.1", "this is not an ELF file\n");
  const auto missing = host.dir() / "nope/libxpuml.so.1";
  const auto broken = host.dir() / "broken/libxpuml.so.1";
  bool init_failed = true;
  auto library = xpuml::Library::open_first(
      {missing, broken, test::fake_xpuml_incomplete_library(), "libxpuml-not-installed.so.1"},
      &init_failed);
  ASSERT_FALSE(library.ok());
  EXPECT_FALSE(init_failed) << "no library: nothing to retry";
  EXPECT_THAT(
      library.error(),
      AllOf(HasSubstr("no usable libxpuml among 4 candidates ([xpuml] library)"),
            HasSubstr("libxpuml not found at " + missing.string()),
            HasSubstr("cannot load libxpuml " + broken.string()),
            HasSubstr("libxpuml too old: " + test::fake_xpuml_incomplete_library().string()),
            HasSubstr("cannot load libxpuml libxpuml-not-installed.so.1")));
}

TEST_F(XpumlLibraryCandidatesTest, AnInitFailureIsTheWinnersAndStopsTheSearch) {
  // The driver is not loaded yet: another copy of the library would not help, and backend=auto
  // must see init_failed to retry.
  host.write_scenario("fail xpumlInit DRIVER_NOT_LOADED\ndevices 1\n");
  bool init_failed = false;
  auto library = xpuml::Library::open_first(
      {test::fake_xpuml_library(), test::fake_xpuml_old_library()}, &init_failed);
  ASSERT_FALSE(library.ok());
  EXPECT_TRUE(init_failed);
  EXPECT_EQ(library.error(), "xpumlInit(" + test::fake_xpuml_library().string() +
                                 "): DRIVER_NOT_LOADED (9): fake libxpuml: driver not loaded");
}

TEST_F(XpumlLibraryCandidatesTest, ABareNameIsTheFileTheLoaderFound) {
  host.write_scenario("devices 1\n");
  // Loaded once by path, the fake (SONAME libxpuml.so.1, never unloaded) is what the loader
  // finds for the bare name: the same search a host's ld.so.cache answers.
  auto by_path = xpuml::Library::open(test::fake_xpuml_library());
  ASSERT_TRUE(by_path.ok()) << by_path.error();
  auto library = xpuml::Library::open_first({host.dir() / "nope/libxpuml.so.1", "libxpuml.so.1"});
  ASSERT_TRUE(library.ok()) << library.error();
  EXPECT_EQ((*library)->path(), test::fake_xpuml_library());
}

}  // namespace
}  // namespace xpud
