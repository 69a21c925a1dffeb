// The kernel's PCIe view of a card as an operator and xpud's clients see it: the real xpud on the
// sysfs backend over a fake sysfs tree (the files as drivers/pci/pci-sysfs.c and
// drivers/pci/pcie/aer.c write them), on a real private bus.
#include <gtest/gtest.h>

#include <sdbus-c++/sdbus-c++.h>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
namespace names = xpu::names;
using Warnings = std::map<std::string, std::string>;

constexpr const char* kCard0 = "0000:3b:00.0";

class XpudPcieHealth : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.add_control_node();
    for (unsigned index : {0u, 1u}) {
      const std::string bus_id = index == 0 ? kCard0 : "0000:3d:00.0";
      tree_.add_card(xpu::fakes::kunlunxin_r_series(bus_id, 1), index);
      tree_.publish_class_device(bus_id, index);
    }
  }

  void start(const std::string& pcie_section = "") {
    xpu::test::write_file(
        dir_.path() / "xpud.conf",
        "[daemon]\nbackend = sysfs\n[sampling]\ninterval_ms = 100\n[sysfs]\nroot = " +
            tree_.root().string() + "\n" + pcie_section);
    xpud_.emplace(
        std::vector<std::string>{xpu::test::binary_path("xpud/xpud").string(), "--bus-address",
                                 bus_.address(), "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log");
    client_.emplace(xpu::ClientOptions{bus_.address(), 2s});
    ASSERT_TRUE(xpu::test::wait_until([&] {
      auto devices = client_->list_devices();
      return devices && devices->size() == 2;
    })) << xpud_->output();
    connection_ = sdbus::createSessionBusConnectionWithAddress(bus_.address());
  }

  template <typename T>
  T property(unsigned index, std::string_view name) {
    auto proxy =
        sdbus::createProxy(*connection_, std::string(names::kBusName), names::device_path(index));
    return proxy->getProperty(std::string(name))
        .onInterface(std::string(names::kDeviceInterface))
        .get<T>();
  }

  // The card's health as clients read it: (Health, HealthReasonKind, HealthReason).
  std::tuple<bool, std::string, std::string> health(unsigned index) {
    auto devices = client_->list_devices();
    if (!devices || devices->size() <= index) return {};
    const auto& card = (*devices)[index];
    return {card.healthy, card.health_reason_kind, card.health_reason};
  }

  xpu::test::TempDir dir_;
  xpu::fakes::FakeSysfsTree tree_;
  xpu::test::PrivateBus bus_;
  std::optional<xpu::test::ChildProcess> xpud_;
  std::optional<xpu::XpudClient> client_;
  std::unique_ptr<sdbus::IConnection> connection_;
};

TEST_F(XpudPcieHealth, TheLinkAndTheErrorCountsAreDeviceProperties) {
  tree_.write_aer_counts(kCard0, {12, 1, 0});
  start();
  EXPECT_EQ(property<std::uint64_t>(0, names::property::kPcieLinkSpeed), 16000000000u);
  EXPECT_EQ(property<std::uint64_t>(0, names::property::kPcieLinkMaxSpeed), 16000000000u);
  EXPECT_EQ(property<std::uint32_t>(0, names::property::kPcieLinkWidth), 16u);
  EXPECT_EQ(property<std::uint32_t>(0, names::property::kPcieLinkMaxWidth), 16u);
  using Counts = std::map<std::string, std::uint64_t>;
  EXPECT_EQ(property<Counts>(0, names::property::kPcieAerErrors),
            (Counts{{"correctable", 12}, {"nonfatal", 1}, {"fatal", 0}}));
  EXPECT_EQ(property<Warnings>(0, names::property::kHealthWarnings), Warnings{});
  // Errors counted before xpud watched the card are no new errors.
  EXPECT_EQ(health(0), std::make_tuple(true, std::string(), std::string()));

  // And in GetMetrics, beside the driver's readings, for the exporter.
  auto metrics = client_->get_metrics();
  ASSERT_TRUE(metrics) << metrics.error();
  const auto& values = metrics->devices.at(0).values;
  EXPECT_EQ(values.at("pcie_link_speed_transfers_per_second"), 16e9);
  EXPECT_EQ(values.at("pcie_link_width_lanes"), 16);
  EXPECT_EQ(values.at("pcie_aer_correctable_errors"), 12);
}

TEST_F(XpudPcieHealth, ANewFatalErrorTakesTheCardOutWithAReasonOfItsOwn) {
  start();
  tree_.write_aer_counts(kCard0, {0, 0, 1});
  ASSERT_TRUE(xpu::test::wait_until([&] { return !std::get<0>(health(0)); }, 10s))
      << xpud_->output();
  EXPECT_EQ(health(0), std::make_tuple(false, std::string("pcie_fatal_error"),
                                       std::string("new fatal PCIe error (AER)")));
  EXPECT_TRUE(std::get<0>(health(1)));
  using Counts = std::map<std::string, std::uint64_t>;
  EXPECT_EQ(property<Counts>(0, names::property::kPcieAerErrors).at("fatal"), 1u);
  EXPECT_NE(xpud_->output().find("xpu0: 1 new fatal PCIe error(s) (AER), 1 since the function"),
            std::string::npos)
      << xpud_->output();
  EXPECT_NE(xpud_->output().find("health: Unhealthy: new fatal PCIe error (AER)"),
            std::string::npos);
}

TEST_F(XpudPcieHealth, ADowntrainedLinkIsAWarningThatLeavesTheCardHealthy) {
  start();
  tree_.write_pcie_link(kCard0, {"8.0 GT/s PCIe", 8, "16.0 GT/s PCIe", 16});
  const Warnings downtrained = {
      {"pcie_link_downtrained", "PCIe link downtrained: 8 GT/s x8, the card can do 16 GT/s x16"}};
  ASSERT_TRUE(xpu::test::wait_until(
      [&] { return property<Warnings>(0, names::property::kHealthWarnings) == downtrained; }, 10s))
      << xpud_->output();
  EXPECT_EQ(property<std::uint64_t>(0, names::property::kPcieLinkSpeed), 8000000000u);
  EXPECT_TRUE(std::get<0>(health(0)));
  EXPECT_NE(xpud_->output().find("health warning (pcie_link_downtrained): PCIe link downtrained"),
            std::string::npos);

  tree_.write_pcie_link(kCard0, {});
  ASSERT_TRUE(xpu::test::wait_until(
      [&] { return property<Warnings>(0, names::property::kHealthWarnings).empty(); }, 10s));
  EXPECT_NE(xpud_->output().find("health warning (pcie_link_downtrained) gone"), std::string::npos);
}

TEST_F(XpudPcieHealth, ADowntrainedLinkTakesTheCardOutWhenXpudConfSaysSo) {
  start("[pcie]\ndowntrain = unhealthy\n");
  tree_.write_pcie_link(kCard0, {"16.0 GT/s PCIe", 4, "16.0 GT/s PCIe", 16});
  ASSERT_TRUE(xpu::test::wait_until([&] { return !std::get<0>(health(0)); }, 10s))
      << xpud_->output();
  EXPECT_EQ(health(0),
            std::make_tuple(false, std::string("pcie_link_downtrained"),
                            std::string("PCIe link downtrained: 16 GT/s x4, the card can do 16 "
                                        "GT/s x16")));
  tree_.write_pcie_link(kCard0, {});
  EXPECT_TRUE(xpu::test::wait_until([&] { return std::get<0>(health(0)); }, 10s));
}

}  // namespace
