// The CDI spec as the real xpud keeps it: written before READY=1, left alone when only health
// changes, rewritten when a card comes, put back when removed behind its back, moved or removed
// by a reload, left in place by a clean stop. xpud on a real private bus, the sim backend (and
// the sysfs backend over a fake tree for hot-plug), a test-owned NOTIFY_SOCKET.
#include <signal.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <sdbus-c++/sdbus-c++.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/notify_socket.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
namespace names = xpu::names;
namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Device names in the spec at `path`; empty when there is no (parsable) spec.
std::vector<std::string> spec_devices(const fs::path& path) {
  std::vector<std::string> names;
  auto spec = json::parse(read(path), nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object() || !spec.contains("devices")) return names;
  for (const auto& d : spec["devices"]) names.push_back(d["name"]);
  return names;
}

struct FileStamp {
  ino_t inode = 0;
  timespec modified{};
  bool operator==(const FileStamp& o) const {
    return inode == o.inode && modified.tv_sec == o.modified.tv_sec &&
           modified.tv_nsec == o.modified.tv_nsec;
  }
};

std::optional<FileStamp> stamp(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{st.st_ino, st.st_mtim};
}

class XpudCdi : public ::testing::Test {
 protected:
  void start(const std::string& config) {
    xpu::test::write_file(config_path(), config);
    xpud_.emplace(std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address",
                                           bus_.address(), "--config", config_path().string()},
                  dir_.path() / "xpud.log",
                  std::map<std::string, std::string>{{"NOTIFY_SOCKET", notify_.path()}});
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
    client_.emplace(xpu::ClientOptions{bus_.address(), 2s});
  }

  void reload_with(const std::string& config) {
    xpu::test::write_file(config_path(), config);
    const size_t before = notify_.messages().size();
    xpud_->signal(SIGHUP);
    const int reloading = notify_.wait_for("RELOADING=1", 5s, before);
    ASSERT_GE(reloading, 0);
    ASSERT_GT(notify_.wait_for("READY=1", 5s, static_cast<size_t>(reloading)), reloading);
  }

  std::string sim_config(const std::string& cdi) const {
    return "[daemon]\nbackend = sim\n[sampling]\ninterval_ms = 100\n[sim]\ndevices = 4\n[cdi]\n" +
           cdi;
  }
  std::string enabled_in(const fs::path& directory,
                         const std::string& file = "kunlunxin-xpu.json") const {
    return "enabled = true\ndirectory = " + directory.string() + "\nfile = " + file + "\n";
  }

  // Lets `n` more samples happen (each GetMetrics timestamp is one cycle's).
  bool wait_cycles(unsigned n) {
    std::uint64_t last = 0;
    unsigned seen = 0;
    return wait_until(
        [&] {
          auto metrics = client_->get_metrics();
          if (metrics && metrics->timestamp_usec != last) {
            if (last != 0) ++seen;
            last = metrics->timestamp_usec;
          }
          return seen >= n;
        },
        10s);
  }

  void set_health(unsigned index, const std::string& health, const std::string& reason) {
    auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
    sdbus::createProxy(*connection, std::string(names::kBusName), std::string(names::kManagerPath))
        ->callMethod("SetHealth")
        .onInterface(std::string(names::kSimulatorInterface))
        .withArguments(index, health, reason);
  }

  bool card_healthy(unsigned index) {
    auto devices = client_->list_devices();
    return devices && devices->size() > index && (*devices)[index].healthy;
  }

  fs::path config_path() const { return dir_.path() / "xpud.conf"; }
  fs::path cdi_dir() const { return dir_.path() / "cdi"; }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::optional<ChildProcess> xpud_;
  std::optional<xpu::XpudClient> client_;
};

const std::vector<std::string> kFourSimCards = {"0", "", "1", "", "2", "", "3", "", "all"};

// The sim cards' UUIDs sit between the indices: check the shape, and that each is a card's UUID.
void expect_four_sim_cards(const std::vector<std::string>& devices, xpu::XpudClient& client) {
  ASSERT_EQ(devices.size(), kFourSimCards.size());
  auto listed = client.list_devices();
  ASSERT_TRUE(listed);
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(devices[2 * i], std::to_string(i));
    EXPECT_EQ(devices[2 * i + 1], (*listed)[i].uuid);
  }
  EXPECT_EQ(devices.back(), "all");
}

TEST_F(XpudCdi, WrittenBeforeReadyAndAHealthFlapLeavesTheFileAlone) {
  start(sim_config(enabled_in(cdi_dir())));
  const fs::path spec = cdi_dir() / "kunlunxin-xpu.json";
  // READY=1 has been sent: the spec must already be there.
  ASSERT_TRUE(fs::exists(spec)) << xpud_->output();
  expect_four_sim_cards(spec_devices(spec), *client_);
  const auto before = stamp(spec);
  const std::string text = read(spec);
  ASSERT_TRUE(before);

  set_health(2, "Unhealthy", "test fault");
  ASSERT_TRUE(wait_until([&] { return !card_healthy(2); })) << xpud_->output();
  ASSERT_TRUE(wait_cycles(3));
  set_health(2, "Healthy", "");
  ASSERT_TRUE(wait_until([&] { return card_healthy(2); })) << xpud_->output();
  ASSERT_TRUE(wait_cycles(3));

  EXPECT_EQ(stamp(spec), before) << "the spec was rewritten for a health change";
  EXPECT_EQ(read(spec), text);
  const std::string log = xpud_->output();
  EXPECT_EQ(log.find("CDI spec written"), log.rfind("CDI spec written")) << log;
}

TEST_F(XpudCdi, AFileRemovedBehindItsBackIsPutBack) {
  start(sim_config(enabled_in(cdi_dir())));
  const fs::path spec = cdi_dir() / "kunlunxin-xpu.json";
  ASSERT_TRUE(fs::exists(spec));
  fs::remove(spec);
  ASSERT_TRUE(wait_until([&] { return fs::exists(spec); }, 5s)) << xpud_->output();
  expect_four_sim_cards(spec_devices(spec), *client_);
}

TEST_F(XpudCdi, AutoOnAPrivateBusWritesNothing) {
  // `auto` is the default: only the system bus's xpud is the host's, and owns the host's spec.
  start(sim_config("enabled = auto\ndirectory = " + cdi_dir().string() + "\n"));
  ASSERT_TRUE(wait_cycles(2));
  EXPECT_FALSE(fs::exists(cdi_dir())) << xpud_->output();
  EXPECT_NE(xpud_->output().find(
                "CDI spec: not written ([cdi] enabled = auto, and xpud serves a private bus)"),
            std::string::npos)
      << xpud_->output();
}

TEST_F(XpudCdi, AReloadMovesOrRemovesTheSpecAndACleanStopLeavesIt) {
  start(sim_config(enabled_in(cdi_dir())));
  const fs::path first = cdi_dir() / "kunlunxin-xpu.json";
  ASSERT_TRUE(fs::exists(first));

  reload_with(sim_config(enabled_in(cdi_dir(), "kunlunxin-node.json")));
  const fs::path second = cdi_dir() / "kunlunxin-node.json";
  EXPECT_FALSE(fs::exists(first)) << "two specs of one kind in one directory conflict";
  ASSERT_TRUE(fs::exists(second)) << xpud_->output();
  expect_four_sim_cards(spec_devices(second), *client_);

  reload_with(sim_config("enabled = false\n"));
  EXPECT_FALSE(fs::exists(second)) << xpud_->output();

  reload_with(sim_config(enabled_in(cdi_dir())));
  ASSERT_TRUE(fs::exists(first)) << xpud_->output();

  xpud_->signal(SIGTERM);
  ASSERT_EQ(xpud_->wait(10s), 0) << xpud_->output();
  // Runtimes starting containers while xpud restarts still resolve the cards.
  EXPECT_TRUE(fs::exists(first));
  EXPECT_EQ(std::vector<std::string>{"kunlunxin-xpu.json"}, [&] {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(cdi_dir()))
      names.push_back(entry.path().filename());
    return names;
  }()) << "no temp file left behind";
}

TEST_F(XpudCdi, AnUnwritableDirectoryIsLoggedAndXpudKeepsServing) {
  xpu::test::write_file(dir_.path() / "not-a-dir", "x");
  start(sim_config(enabled_in(dir_.path() / "not-a-dir")));
  EXPECT_TRUE(client_->list_devices().ok());
  ASSERT_TRUE(wait_cycles(3));
  const std::string log = xpud_->output();
  const std::string message = "cannot write the CDI spec: " + (dir_.path() / "not-a-dir").string();
  EXPECT_NE(log.find(message), std::string::npos) << log;
  EXPECT_EQ(log.find(message), log.rfind(message)) << "logged once, not every cycle";
}

// A card or virtual function that comes is in the spec within a rescan; one that goes leaves it.
TEST(XpudCdiHotplug, ACardOrVirtualFunctionThatComesOrGoesRewritesTheSpec) {
  xpu::fakes::FakeSysfsTree tree;
  xpu::test::TempDir dir;
  xpu::test::PrivateBus bus;
  tree.add_control_node();
  tree.add_card(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1, 0), 0);
  tree.publish_class_device("0000:3b:00.0", 0);
  const fs::path cdi = dir.path() / "cdi";
  xpu::test::write_file(
      dir.path() / "xpud.conf",
      "[daemon]\nbackend = sysfs\n[sampling]\ninterval_ms = 100\nrescan_interval_ms = 1000\n"
      "[sysfs]\nroot = " +
          tree.root().string() + "\n[cdi]\nenabled = true\ndirectory = " + cdi.string() + "\n");
  ChildProcess xpud({binary_path("xpud/xpud").string(), "--bus-address", bus.address(), "--config",
                     (dir.path() / "xpud.conf").string()},
                    dir.path() / "xpud.log");
  const fs::path spec = cdi / "kunlunxin-xpu.json";
  ASSERT_TRUE(wait_until([&] { return spec_devices(spec).size() == 3; })) << xpud.output();
  const auto before = stamp(spec);

  tree.add_card(xpu::fakes::kunlunxin_r_series("0000:3d:00.0", 1, 0), 1);
  tree.publish_class_device("0000:3d:00.0", 1);
  ASSERT_TRUE(wait_until([&] { return spec_devices(spec).size() == 5; }, 10s)) << xpud.output();
  EXPECT_NE(stamp(spec), before);
  auto devices = spec_devices(spec);
  EXPECT_EQ(devices[2], "1");

  // A virtual function of card 0 (as the kernel makes it when sriov_numvfs is written) is a
  // device of its own, with the node xpud lists for it.
  tree.add_card(xpu::fakes::kunlunxin_vf("0000:3b:00.1", "0000:3b:00.0"), 2);
  tree.publish_class_device("0000:3b:00.1", 2);
  ASSERT_TRUE(wait_until([&] { return spec_devices(spec).size() == 7; }, 10s)) << xpud.output();
  auto listed = xpu::XpudClient(xpu::ClientOptions{bus.address(), 2s}).list_devices();
  ASSERT_TRUE(listed && listed->size() == 3u);
  EXPECT_TRUE((*listed)[2].is_virtual_function);
  auto spec_json = json::parse(read(spec));
  unsigned vf_entries = 0;
  for (const auto& d : spec_json["devices"]) {
    if (d["name"] != "2" && d["name"] != (*listed)[2].uuid) continue;
    ++vf_entries;
    std::vector<std::string> nodes;
    for (const auto& n : d["containerEdits"]["deviceNodes"]) nodes.push_back(n["path"]);
    EXPECT_EQ(nodes, (std::vector<std::string>{"/dev/xpu2", "/dev/xpuctrl"})) << d.dump();
    EXPECT_EQ(d["containerEdits"]["env"][0], "XPU_VISIBLE_DEVICES=2");
    EXPECT_EQ(d["containerEdits"]["env"][1], "CXPU_VISIBLE_DEVICES=2");
  }
  EXPECT_EQ(vf_entries, 2u) << "by index and by UUID";

  tree.remove_pci_function("0000:3b:00.1");
  tree.remove_device_node(2);
  tree.remove_pci_function("0000:3d:00.0");
  tree.remove_device_node(1);
  ASSERT_TRUE(wait_until([&] { return spec_devices(spec).size() == 3; }, 10s)) << xpud.output();
}

}  // namespace
