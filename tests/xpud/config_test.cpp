#include "xpud/config.h"

#include <gtest/gtest.h>

#include "tests/support/child_process.h"

namespace xpud {
namespace {

using xpu::test::TempDir;
using xpu::test::write_file;

TEST(Config, MissingOptionalFileGivesDefaults) {
  TempDir dir;
  auto config = load_config(dir.path() / "xpud.conf", false);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(*config, Config{});
  EXPECT_EQ(config->backend, "auto");
  EXPECT_EQ(config->interval.count(), 1000);
  EXPECT_EQ(config->rescan_interval.count(), 60000);
  // The vendor's runtime root, then the loader's own search (docs/hardware.md).
  EXPECT_EQ(config->xpuml_libraries,
            (std::vector<std::filesystem::path>{"/usr/local/xpu/lib64/libxpuml.so.1",
                                                "libxpuml.so.1", "libxpuml.so"}));
  EXPECT_EQ(config->sim_devices, 8u);
  EXPECT_EQ(config->sim_model, "R200");
  EXPECT_EQ(config->sim_memory_mib, 32768u);
  EXPECT_FALSE(config->allow_cluster_reconfigure);
  EXPECT_EQ(config->cdi_mode, CdiMode::kAuto);
  EXPECT_EQ(config->cdi_directory, "/var/run/cdi");
  EXPECT_EQ(config->cdi_file, "kunlunxin-xpu.json");
  // Where this build installs the table (/usr/share/xpud/topology.quirk in the packages).
  EXPECT_EQ(config->topology_quirks.filename(), "topology.quirk");
  EXPECT_EQ(config->topology_quirks.parent_path().filename(), "xpud");
}

TEST(Config, MissingRequiredFileIsAnError) {
  TempDir dir;
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("xpud.conf: no such file"), std::string::npos);
}

TEST(Config, ReadsEveryKey) {
  TempDir dir;
  write_file(dir.path() / "xpud.conf",
             "# comment\n[daemon]\nbackend = sim\nlog_level = debug\n"
             "[sampling]\ninterval_ms = 250\ncall_timeout_ms = 500\nfailure_threshold = 5\n"
             "stall_grace_ms = 4000\nrescan_interval_ms = 5000\n"
             "[xpuml]\nlibrary = /opt/xpu/libxpuml.so.1\n[sysfs]\nroot = /srv/fake\n"
             "[sim]\ndevices = 4\nmodel = RG800\nmemory_mib = 98304\n"
             "[sriov]\nallow_cluster_reconfigure = true\n"
             "[cxpu]\nhook_program = /opt/xpu/bin/xpuctl\n"
             "[topology]\nquirks = /etc/xpud/local.quirk\n"
             "[cdi]\nenabled = false\ndirectory = /etc/cdi\nfile = kunlunxin-host.json\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->cdi_mode, CdiMode::kOff);
  EXPECT_EQ(config->cdi_directory, "/etc/cdi");
  EXPECT_EQ(config->cdi_file, "kunlunxin-host.json");
  EXPECT_EQ(config->backend, "sim");
  EXPECT_EQ(config->log_level, spdlog::level::debug);
  EXPECT_EQ(config->interval.count(), 250);
  EXPECT_EQ(config->call_timeout.count(), 500);
  EXPECT_EQ(config->failure_threshold, 5u);
  EXPECT_EQ(config->stall_grace.count(), 4000);
  EXPECT_EQ(config->rescan_interval.count(), 5000);
  EXPECT_EQ(config->xpuml_libraries, std::vector<std::filesystem::path>{"/opt/xpu/libxpuml.so.1"});
  EXPECT_EQ(config->sysfs_root, "/srv/fake");
  EXPECT_EQ(config->topology_quirks, "/etc/xpud/local.quirk");
  EXPECT_EQ(config->sim_devices, 4u);
  EXPECT_EQ(config->sim_model, "RG800");
  EXPECT_EQ(config->sim_memory_mib, 98304u);
  EXPECT_TRUE(config->allow_cluster_reconfigure);
  EXPECT_EQ(config->instance_hook_program, "/opt/xpu/bin/xpuctl");
}

TEST(Config, ALibraryListKeepsItsOrderAndBareNames) {
  TempDir dir;
  write_file(
      dir.path() / "xpud.conf",
      "[xpuml]\nlibrary = /opt/xpu//lib64/libxpuml.so.1 \t libxpuml.so.1   /usr/lib64/libxpuml.so"
      "  ; the loader's search second\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->xpuml_libraries,
            (std::vector<std::filesystem::path>{"/opt/xpu/lib64/libxpuml.so.1", "libxpuml.so.1",
                                                "/usr/lib64/libxpuml.so"}));
}

TEST(Config, TopologyQuirksMustBeAnAbsolutePath) {
  TempDir dir;
  write_file(dir.path() / "xpud.conf", "[topology]\nquirks = topology.quirk\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error(),
            (dir.path() / "xpud.conf").string() +
                ":2: bad value for topology.quirks: 'topology.quirk' is not an absolute path");
}

TEST(Config, CdiKeysRejectWhatARuntimeCouldNotUseWithFileLineAndReason) {
  TempDir dir;
  const auto path = dir.path() / "xpud.conf";
  const std::pair<const char*, const char*> cases[] = {
      {"enabled = yes", "bad value for cdi.enabled: 'yes' is not one of auto, true, false"},
      {"directory = run/cdi", "bad value for cdi.directory: 'run/cdi' is not an absolute path"},
      {"file = nvidia.json",
       "bad value for cdi.file: 'nvidia.json' does not start with 'kunlunxin'"},
      {"file = kunlunxin.yaml",
       "bad value for cdi.file: 'kunlunxin.yaml' does not end in '.json' (the spec is JSON)"},
      {"file = kunlunxin/../../etc/x.json",
       "bad value for cdi.file: 'kunlunxin/../../etc/x.json' is not a plain "
       "file name (it contains '/'); set the directory with [cdi] directory"},
      {"spec = on", "unknown key 'spec' in section [cdi]"},
  };
  for (const auto& [line, reason] : cases) {
    write_file(path, std::string("[cdi]\n") + line + "\n");
    auto config = load_config(path, true);
    ASSERT_FALSE(config) << line;
    EXPECT_EQ(config.error(), path.string() + ":2: " + reason);
  }
}

TEST(Config, DropInsOverrideInNameOrder) {
  TempDir dir;
  write_file(dir.path() / "xpud.conf", "[sampling]\ninterval_ms = 1000\n");
  write_file(dir.path() / "xpud.conf.d/20-late.conf", "[sampling]\ninterval_ms = 300\n");
  write_file(dir.path() / "xpud.conf.d/10-early.conf",
             "[sampling]\ninterval_ms = 200\n[sim]\ndevices = 2\n");
  write_file(dir.path() / "xpud.conf.d/30-ignored.txt", "garbage\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->interval.count(), 300);
  EXPECT_EQ(config->sim_devices, 2u);
}

struct BadConfigCase {
  std::string content;
  std::string expected;  // must appear in the error
};

void PrintTo(const BadConfigCase& c, std::ostream* os) {
  *os << "config \"" << c.content << "\"";
}

class BadConfig : public ::testing::TestWithParam<BadConfigCase> {};

TEST_P(BadConfig, IsRejectedWithFileLineAndReason) {
  TempDir dir;
  write_file(dir.path() / "xpud.conf", GetParam().content);
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_FALSE(config) << "accepted: " << GetParam().content;
  EXPECT_NE(config.error().find((dir.path() / "xpud.conf").string() + ":"), std::string::npos)
      << config.error();
  EXPECT_NE(config.error().find(GetParam().expected), std::string::npos) << config.error();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadConfig,
    ::testing::Values(
        BadConfigCase{"[daemon]\nbackend = cuda\n", "xpud.conf:2: bad value for daemon.backend"},
        BadConfigCase{
            "[daemon]\nbackend = auto   # the default\n",
            ":2: bad value for daemon.backend: 'auto   # the default' is not one of auto, xpuml, "
            "sysfs, sim (an inline comment starts with ';', not '#')"},
        BadConfigCase{"[daemon]\nbackend = sim\nflavour = mild\n",
                      ":3: unknown key 'flavour' in section [daemon]"},
        BadConfigCase{"[gpu]\nx = 1\n", ":2: unknown section [gpu]"},
        BadConfigCase{"[sampling]\ninterval_ms = fast\n", "'fast' is not a non-negative integer"},
        BadConfigCase{"[sampling]\ninterval_ms = 5\n", "out of range"},
        BadConfigCase{"[sampling]\nrescan_interval_ms = 999\n", "rescan_interval_ms"},
        BadConfigCase{"[sampling]\ninterval_ms = -1\n", "interval_ms"},
        BadConfigCase{"[sampling]\ninterval_ms = 99999999999999999999999\n", "interval_ms"},
        BadConfigCase{"[sampling]\nfailure_threshold = 0\n", "failure_threshold"},
        BadConfigCase{"[sampling]\nstall_grace_ms = 3600001\n",
                      "sampling.stall_grace_ms: '3600001' is out of range"},
        BadConfigCase{"[daemon]\nlog_level = chatty\n", "log_level"},
        BadConfigCase{
            "[xpuml]\nlibrary = lib/libxpuml.so.1\n",
            ":2: bad value for xpuml.library: 'lib/libxpuml.so.1' is neither an absolute path "
            "nor a bare file name"},
        BadConfigCase{"[xpuml]\nlibrary = /opt/a.so ../libxpuml.so.1\n",
                      "'../libxpuml.so.1' is neither"},
        BadConfigCase{"[xpuml]\nlibrary = /opt/a.so lib$(id).so\n", "'lib$(id).so' is neither"},
        BadConfigCase{"[xpuml]\nlibrary =\n", ":2: bad value for xpuml.library: no library listed"},
        BadConfigCase{"[xpuml]\nlibrary = a b c d e f g h i j k l m n o p q\n",
                      "more than 16 libraries"},
        BadConfigCase{"[sysfs]\nroot =\n", "not an absolute path"},
        BadConfigCase{"[sim]\nmodel = R200;rm -rf\n", "model"},
        BadConfigCase{"[sim]\ndevices = 100000\n", "out of range"},
        BadConfigCase{"[sim]\nmemory_mib = 0\n", "out of range"},
        BadConfigCase{
            "[sriov]\nallow_cluster_reconfigure = yes\n",
            ":2: bad value for sriov.allow_cluster_reconfigure: 'yes' is not true or false"},
        BadConfigCase{"[sim]\ndevices = 2\ndevices = 3\n", ":3: duplicate key 'devices'"},
        BadConfigCase{"[daemon\nbackend = sim\n", ":1: syntax error"},
        BadConfigCase{"[daemon]\nbackend = sim\n[sim\ndevices = 2\n[sampling]\ninterval_ms = 1\n",
                      ":3: syntax error"},
        BadConfigCase{"backend = sim\n", ":1: unknown section []"},
        BadConfigCase{"[daemon]\nthis line has no equals sign\n", ":2: syntax error"}));

TEST(Config, ReleaseCheckIsOnByDefaultAndReadsItsKeys) {
  TempDir dir;
  auto defaults = load_config(dir.path() / "xpud.conf", false);
  ASSERT_TRUE(defaults) << defaults.error();
  EXPECT_TRUE(defaults->release_check);
  EXPECT_EQ(defaults->release_timeout.count(), 30000);
  EXPECT_EQ(defaults->release_idle_memory_mib, 256u);

  write_file(dir.path() / "xpud.conf",
             "[release_check]\nenabled = false\ntimeout_ms = 0\nidle_memory_mib = 1024\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_TRUE(config) << config.error();
  EXPECT_FALSE(config->release_check);
  EXPECT_EQ(config->release_timeout.count(), 0);
  EXPECT_EQ(config->release_idle_memory_mib, 1024u);
  // A drop-in turns it on again, key by key.
  write_file(dir.path() / "xpud.conf.d/50-on.conf",
             "[release_check]\nenabled = true\ntimeout_ms = 86400000\n");
  config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_TRUE(config) << config.error();
  EXPECT_TRUE(config->release_check);
  EXPECT_EQ(config->release_timeout.count(), 86400000);
  EXPECT_EQ(config->release_idle_memory_mib, 1024u);
}

INSTANTIATE_TEST_SUITE_P(
    ReleaseCheck, BadConfig,
    ::testing::Values(
        BadConfigCase{"[release_check]\nenabled = 1\n",
                      ":2: bad value for release_check.enabled: '1' is not true or false"},
        BadConfigCase{"[release_check]\nenabled = true ; on\nenabled = false\n",
                      ":3: duplicate key 'enabled' in section [release_check]"},
        BadConfigCase{"[release_check]\ntimeout_ms = 86400001\n",
                      ":2: bad value for release_check.timeout_ms: '86400001' is out of range"},
        BadConfigCase{"[release_check]\ntimeout_ms = -5\n", "release_check.timeout_ms"},
        BadConfigCase{"[release_check]\ntimeout_ms = 30s\n", "release_check.timeout_ms"},
        BadConfigCase{"[release_check]\nidle_memory_mib = 99999999999999999999999\n",
                      "release_check.idle_memory_mib"},
        BadConfigCase{
            "[release_check]\nidle_memory_mib = 16777217\n",
            ":2: bad value for release_check.idle_memory_mib: '16777217' is out of range"},
        BadConfigCase{"[release_check]\nidle_memory_mib = 256MiB\n",
                      "release_check.idle_memory_mib"},
        BadConfigCase{"[release_check]\nrelease_timeout_seconds = 30\n",
                      ":2: unknown key 'release_timeout_seconds' in section [release_check]"}));

TEST(Config, ErrorInDropInNamesTheDropIn) {
  TempDir dir;
  write_file(dir.path() / "xpud.conf", "[daemon]\nbackend = sim\n");
  write_file(dir.path() / "xpud.conf.d/50-bad.conf", "\n\n[sampling]\ninterval_ms = soon\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("50-bad.conf:4:"), std::string::npos) << config.error();
}

TEST(Config, BinaryGarbageIsRejectedNotCrashed) {
  TempDir dir;
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 131) % 256));
  write_file(dir.path() / "xpud.conf", garbage);
  auto config = load_config(dir.path() / "xpud.conf", true);
  EXPECT_FALSE(config);
}

TEST(Config, PcieFindingsWarnByDefaultAndTheirMarkHoldsFifteenMinutes) {
  TempDir dir;
  auto config = load_config(dir.path() / "xpud.conf", false);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->pcie.downtrain, PcieAction::kWarn);
  EXPECT_EQ(config->pcie.nonfatal, PcieAction::kWarn);
  EXPECT_EQ(config->pcie.error_hold, std::chrono::minutes(15));
}

TEST(Config, PcieSectionMakesFindingsUnhealthy) {
  TempDir dir;
  write_file(dir.path() / "xpud.conf",
             "[pcie]\ndowntrain = unhealthy\nnonfatal = unhealthy  ; take cards out\n"
             "error_hold_ms = 60000\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->pcie, (PcieHealthPolicy{PcieAction::kUnhealthy, PcieAction::kUnhealthy,
                                            std::chrono::milliseconds(60000)}));
}

TEST(Config, PcieKeysRejectWhatTheyDoNotKnowWithFileLineAndReason) {
  TempDir dir;
  const auto path = dir.path() / "xpud.conf";
  const std::pair<const char*, const char*> cases[] = {
      {"downtrain = ignore", "bad value for pcie.downtrain: 'ignore' is not warn or unhealthy"},
      {"nonfatal = Unhealthy", "bad value for pcie.nonfatal: 'Unhealthy' is not warn or unhealthy"},
      {"nonfatal = unhealthy # loud",
       "bad value for pcie.nonfatal: 'unhealthy # loud' is not warn or unhealthy (an inline "
       "comment starts with ';', not '#')"},
      {"error_hold_ms = 999", "bad value for pcie.error_hold_ms: '999' is out of range"},
      {"error_hold_ms = 86400001", "bad value for pcie.error_hold_ms: '86400001' is out of range"},
      {"error_hold_ms = -5", "bad value for pcie.error_hold_ms"},
      {"correctable = warn", "unknown key 'correctable' in section [pcie]"},
  };
  for (const auto& [line, reason] : cases) {
    write_file(path, std::string("[pcie]\n") + line + "\n");
    auto config = load_config(path, true);
    ASSERT_FALSE(config) << line;
    EXPECT_NE(config.error().find(path.string() + ":2: " + reason), std::string::npos)
        << config.error();
  }
}

TEST(Config, RecoveryIsOffByDefault) {
  TempDir dir;
  auto config = load_config(dir.path() / "xpud.conf", false);
  ASSERT_TRUE(config) << config.error();
  EXPECT_FALSE(config->recovery.enabled);
  EXPECT_FALSE(config->recovery.automatic);
  EXPECT_EQ(config->recovery.max_resets_per_hour, 3u);
  EXPECT_EQ(config->recovery.unhealthy_for, std::chrono::minutes(5));
  EXPECT_EQ(config->recovery.check_timeout, std::chrono::seconds(30));
}

TEST(Config, RecoverySectionReadsEveryKey) {
  TempDir dir;
  write_file(dir.path() / "xpud.conf",
             "[recovery]\nenabled = true\nauto = true  ; reset cards by itself\n"
             "max_resets_per_hour = 1\nunhealthy_for_ms = 2000\ncheck_timeout_ms = 5000\n");
  auto config = load_config(dir.path() / "xpud.conf", true);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->recovery, (RecoveryPolicy{true, true, 1, std::chrono::milliseconds(2000),
                                              std::chrono::milliseconds(5000)}));
}

TEST(Config, RecoveryKeysRejectHostileValuesWithFileLineAndReason) {
  TempDir dir;
  const auto path = dir.path() / "xpud.conf";
  const std::pair<const char*, const char*> cases[] = {
      {"enabled = yes", "bad value for recovery.enabled: 'yes' is not true or false"},
      {"auto = 1", "bad value for recovery.auto: '1' is not true or false"},
      {"max_resets_per_hour = 0",
       "bad value for recovery.max_resets_per_hour: '0' is out of range"},
      {"max_resets_per_hour = 61",
       "bad value for recovery.max_resets_per_hour: '61' is out of range"},
      {"max_resets_per_hour = -1", "bad value for recovery.max_resets_per_hour"},
      {"max_resets_per_hour = 99999999999999999999999",
       "bad value for recovery.max_resets_per_hour"},
      {"unhealthy_for_ms = 999", "bad value for recovery.unhealthy_for_ms: '999' is out of range"},
      {"unhealthy_for_ms = 3s", "bad value for recovery.unhealthy_for_ms"},
      {"check_timeout_ms = 600001",
       "bad value for recovery.check_timeout_ms: '600001' is out of range"},
      {"method = remove", "unknown key 'method' in section [recovery]"},
  };
  for (const auto& [line, reason] : cases) {
    write_file(path, std::string("[recovery]\n") + line + "\n");
    auto config = load_config(path, true);
    ASSERT_FALSE(config) << line;
    EXPECT_NE(config.error().find(path.string() + ":2: " + reason), std::string::npos)
        << config.error();
  }
}

}  // namespace
}  // namespace xpud
