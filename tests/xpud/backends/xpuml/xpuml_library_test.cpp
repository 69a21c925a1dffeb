// Loading libxpuml: what an operator reads when the library is missing, too old or fails to
// start, and that init/shutdown bracket the backend's life.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/xpuml/xpuml_backend.h"
#include "xpud/backends/xpuml/xpuml_library.h"
#include "xpud/backends/xpuml/xpuml_return_codes.h"

namespace xpud {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class XpumlLibraryTest : public ::testing::Test {
 protected:
  test::FakeXpumlHost host;
};

TEST_F(XpumlLibraryTest, MissingFileSaysWhereItLooked) {
  auto backend = make_xpuml_backend(host.dir() / "nope/libxpuml.so.1", host.sysfs_root());
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error(), AllOf(HasSubstr("libxpuml not found"),
                                     HasSubstr((host.dir() / "nope/libxpuml.so.1").string())));
}

TEST_F(XpumlLibraryTest, FileThatIsNotALibraryCannotBeLoaded) {
  auto path = host.dir() / "libxpuml.so.1";
  host.tree().write_file("libxpuml.so.1", "this is not an ELF file\n");
  auto backend = make_xpuml_backend(path, host.sysfs_root());
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error(), AllOf(HasSubstr("cannot load libxpuml"), HasSubstr(path.string())));
}

TEST_F(XpumlLibraryTest, MissingRequiredSymbolMeansTooOld) {
  host.write_scenario("devices 1\n");
  auto path = test::fake_xpuml_incomplete_library();
  auto backend = make_xpuml_backend(path, host.sysfs_root());
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error(),
              AllOf(HasSubstr("libxpuml too old"), HasSubstr(path.string()),
                    HasSubstr("xpumlDeviceGetMemoryInfo"),
                    // Optional symbols the old library lacks too are not complaints.
                    Not(HasSubstr("xpumlDeviceGetUUID")), Not(HasSubstr("xpumlErrorString"))));
}

TEST_F(XpumlLibraryTest, LibraryWithoutOptionalSymbolsLoads) {
  host.write_scenario("devices 1\n");
  auto backend = make_xpuml_backend(test::fake_xpuml_old_library(), host.sysfs_root());
  ASSERT_TRUE(backend.ok()) << backend.error();
  EXPECT_EQ((*backend)->name(), "xpuml");
}

TEST_F(XpumlLibraryTest, InitFailureIsReportedWithCodeAndLibraryText) {
  host.write_scenario("fail xpumlInit DRIVER_NOT_LOADED\ndevices 1\n");
  auto path = test::fake_xpuml_library();
  auto backend = make_xpuml_backend(path, host.sysfs_root());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error(), "xpumlInit(" + path.string() +
                                 "): DRIVER_NOT_LOADED (9): fake libxpuml: driver not loaded");
}

TEST_F(XpumlLibraryTest, InitFailureWithoutErrorStringUsesOwnDescription) {
  host.write_scenario("fail xpumlInit NO_PERMISSION\n");
  auto path = test::fake_xpuml_old_library();
  auto backend = make_xpuml_backend(path, host.sysfs_root());
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error(),
              AllOf(HasSubstr("xpumlInit(" + path.string() + "): NO_PERMISSION (4): "),
                    HasSubstr("/dev/xpuctrl")));
}

TEST_F(XpumlLibraryTest, NoScriptBehavesLikeHostWithoutDriver) {
  ::unsetenv("XPUML_FAKE_SCRIPT");
  auto backend = make_xpuml_backend(test::fake_xpuml_library(), host.sysfs_root());
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error(), HasSubstr("DRIVER_NOT_LOADED (9)"));
}

TEST_F(XpumlLibraryTest, ShutdownOnDestructionOnlyAfterSuccessfulInit) {
  test::FakeXpumlCalls calls(test::fake_xpuml_library());
  // The counts live as long as the process; other tests may have run before this one.
  const unsigned inits = calls.count("xpumlInit");
  const unsigned shutdowns = calls.count("xpumlShutdown");
  host.write_scenario("devices 1\n");
  {
    auto backend = make_xpuml_backend(test::fake_xpuml_library(), host.sysfs_root());
    ASSERT_TRUE(backend.ok()) << backend.error();
    EXPECT_EQ(calls.count("xpumlInit"), inits + 1);
    EXPECT_EQ(calls.count("xpumlShutdown"), shutdowns);
  }
  EXPECT_EQ(calls.count("xpumlShutdown"), shutdowns + 1);

  host.write_scenario("fail xpumlInit TIMEOUT\n");
  auto failed = make_xpuml_backend(test::fake_xpuml_library(), host.sysfs_root());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(calls.count("xpumlInit"), inits + 2);
  EXPECT_EQ(calls.count("xpumlShutdown"), shutdowns + 1);
}

TEST_F(XpumlLibraryTest, ReportsDriverVersion) {
  host.write_scenario("driver_version 4.31.0\ndevices 1\n");
  auto backend = make_xpuml_backend(test::fake_xpuml_library(), host.sysfs_root());
  ASSERT_TRUE(backend.ok()) << backend.error();
  EXPECT_EQ((*backend)->driver_version(), "4.31.0");
}

TEST_F(XpumlLibraryTest, DriverVersionEmptyWhenTheCallFails) {
  host.write_scenario("fail xpumlSystemGetDriverVersion NOT_SUPPORTED\n");
  auto backend = make_xpuml_backend(test::fake_xpuml_library(), host.sysfs_root());
  ASSERT_TRUE(backend.ok()) << backend.error();
  EXPECT_EQ((*backend)->driver_version(), "");
}

TEST_F(XpumlLibraryTest, EveryReturnCodeHasAMessageWithoutErrorString) {
  host.write_scenario("");
  auto library = xpuml::Library::open(test::fake_xpuml_old_library());
  ASSERT_TRUE(library.ok()) << library.error();
  for (const auto& info : xpuml::kReturnCodes) {
    std::string message = (*library)->error_message("xpumlDeviceGetState", "xpu2", info.code);
    EXPECT_EQ(message, "xpumlDeviceGetState(xpu2): " + std::string(info.name) + " (" +
                           std::to_string(info.code) + "): " + std::string(info.description));
  }
  EXPECT_EQ((*library)->error_message("xpumlDeviceGetState", "xpu2", 4242),
            "xpumlDeviceGetState(xpu2): unrecognised code (4242)");
}

TEST_F(XpumlLibraryTest, ErrorStringFromTheLibraryIsPreferred) {
  host.write_scenario("");
  auto library = xpuml::Library::open(test::fake_xpuml_library());
  ASSERT_TRUE(library.ok()) << library.error();
  EXPECT_EQ((*library)->error_message("xpumlDeviceGetMemoryInfo", "xpu2", XPUML_ERROR_XPU_IS_LOST),
            "xpumlDeviceGetMemoryInfo(xpu2): XPU_IS_LOST (15): fake libxpuml: the XPU is lost");
}

}  // namespace
}  // namespace xpud
