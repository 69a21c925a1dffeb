#include "xpud/backends/sim/sim_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>

#include "common/names.h"
#include "tests/support/child_process.h"
#include "xpud/backends/backend_factory.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/backends/simulator.h"
#include "xpud/backends/virtual_functions.h"

namespace xpud {
namespace {

namespace metric = xpu::names::metric;
using ::testing::HasSubstr;
using Kind = DriverChangeError::Kind;

constexpr std::uint64_t kGiB = 1ull << 30;

TEST(SimBackend, EightCardTopologyMatchesTheFacts) {
  auto backend = make_sim_backend({8, "R200", 32768}).backend;
  auto devices = backend->discover();
  ASSERT_TRUE(devices);
  ASSERT_EQ(devices->size(), 8u);
  for (const auto& d : *devices) {
    EXPECT_EQ(d.numa_node, d.index < 4 ? 0 : 1) << d.index;
    std::set<unsigned> expected;
    for (unsigned other = 0; other < 8; ++other)
      if (other != d.index && (other / 4 == d.index / 4 || other % 4 == d.index % 4))
        expected.insert(other);
    EXPECT_EQ(std::set<unsigned>(d.linked_devices.begin(), d.linked_devices.end()), expected)
        << d.index;
    EXPECT_EQ(d.device_nodes,
              (std::vector<std::string>{"/dev/xpu" + std::to_string(d.index), "/dev/xpuctrl"}));
    EXPECT_EQ(d.model, "R200");
    EXPECT_EQ(d.memory_total_bytes, 32768ull << 20);
    EXPECT_LE(d.uuid.size(), 63u);
    EXPECT_EQ(d.pci_bus_id.size(), 12u);
    // One root complex per NUMA half, its bus below each of the half's cards' buses.
    EXPECT_EQ(d.pcie_root, d.index < 4 ? "pci0000:00" : "pci0000:80") << d.index;
    EXPECT_EQ(d.pci_bus_id.substr(0, 4), d.pcie_root.substr(3, 4));
    EXPECT_GE(d.pci_bus_id.substr(5, 2), d.pcie_root.substr(8, 2));
  }
  std::set<std::string> uuids;
  for (const auto& d : *devices) uuids.insert(d.uuid);
  EXPECT_EQ(uuids.size(), 8u);
}

// A card with no process holds no memory (docs/hardware.md), and xpud reports one that does
// (release_check.h): the simulation must never make that fault by itself, at any load. Card 7
// starts at the trough of its load cycle, where a workload counted out at low load would leave
// its card so.
TEST(SimBackend, ACardThatHoldsMemoryAlwaysListsItsProcess) {
  auto backend = make_sim_backend({8, "R200", 32768}).backend;
  auto devices = backend->discover();
  ASSERT_TRUE(devices);
  for (int n = 0; n < 300; ++n) {
    for (const auto& device : *devices) {
      auto reading = backend->read(device);
      if (reading.metrics.at(std::string(metric::kMemoryUsed)) == 0) continue;
      ASSERT_GE(reading.metrics.at(std::string(metric::kProcessCount)), 1.0)
          << device.index << " at reading " << n;
    }
  }
}

TEST(SimBackend, IdentitiesAreStableAcrossInstances) {
  auto a = make_sim_backend({4, "R200", 1024}).backend->discover();
  auto b = make_sim_backend({4, "R200", 1024}).backend->discover();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

TEST(SimBackend, MetricsArePlausibleAndMove) {
  auto backend = make_sim_backend({2, "R200", 32768}).backend;
  auto devices = backend->discover();
  ASSERT_TRUE(devices);
  std::set<double> utilizations;
  for (int i = 0; i < 20; ++i) {
    auto reading = backend->read((*devices)[0]);
    EXPECT_FALSE(reading.fault);
    ASSERT_EQ(reading.metrics.size(), metric::kAll.size());
    const auto& m = reading.metrics;
    EXPECT_GE(m.at("utilization_ratio"), 0.0);
    EXPECT_LE(m.at("utilization_ratio"), 1.0);
    EXPECT_LE(m.at("memory_used_bytes"), m.at("memory_total_bytes"));
    EXPECT_GT(m.at("temperature_celsius"), 20.0);
    EXPECT_LT(m.at("temperature_celsius"), 100.0);
    EXPECT_GT(m.at("power_watts"), 0.0);
    utilizations.insert(m.at("utilization_ratio"));
  }
  EXPECT_GT(utilizations.size(), 1u) << "metrics never change";
}

TEST(SimBackend, InjectedFaultAndRecovery) {
  auto [backend, sim, reset] = make_sim_backend({8, "R200", 32768});
  ASSERT_NE(sim, nullptr);
  auto devices = backend->discover();
  EXPECT_FALSE(sim->set_health(3, false, "ECC storm"));
  EXPECT_EQ(backend->read((*devices)[3]).fault, "ECC storm");
  EXPECT_FALSE(backend->read((*devices)[2]).fault);
  EXPECT_FALSE(sim->set_health(3, true, ""));
  EXPECT_FALSE(backend->read((*devices)[3]).fault);
}

TEST(SimBackend, PinnedMetricsAndTheirRelease) {
  auto [backend, sim, reset] = make_sim_backend({1, "R200", 32768});
  auto devices = backend->discover();
  EXPECT_FALSE(sim->set_metric(0, "temperature_celsius", 91.5));
  EXPECT_EQ(backend->read((*devices)[0]).metrics.at("temperature_celsius"), 91.5);
  EXPECT_FALSE(sim->set_metric(0, "temperature_celsius", std::nan("")));
  EXPECT_NE(backend->read((*devices)[0]).metrics.at("temperature_celsius"), 91.5);
}

TEST(SimBackend, BadInjectionsAreRejected) {
  auto [backend, sim, reset] = make_sim_backend({2, "R200", 32768});
  auto no_device = sim->set_health(2, false, "x");
  ASSERT_TRUE(no_device);
  EXPECT_EQ(no_device->kind, InjectionError::Kind::NoSuchDevice);
  auto bad_key = sim->set_metric(0, "fan_speed", 1.0);
  ASSERT_TRUE(bad_key);
  EXPECT_EQ(bad_key->kind, InjectionError::Kind::InvalidArgument);
  EXPECT_TRUE(sim->set_metric(0, "power_watts", -1.0));
  EXPECT_TRUE(sim->set_metric(0, "power_watts", INFINITY));
}

TEST(SimBackend, OnlyTheSimBackendComesWithASimulator) {
  // The injection hook is not part of Backend: the factory hands it out beside the sim backend.
  Config config;
  config.backend = "sim";
  config.sim_devices = 2;
  auto sim = make_backend(config);
  ASSERT_TRUE(sim) << sim.error();
  EXPECT_NE(sim->simulator, nullptr);
  config.backend = "sysfs";
  xpu::test::TempDir root;  // a host without cards
  std::filesystem::create_directories(root.path() / "sys/bus/pci/devices");
  config.sysfs_root = root.path();
  auto sysfs = make_backend(config);
  ASSERT_TRUE(sysfs) << sysfs.error();
  EXPECT_EQ(sysfs->simulator, nullptr);
}

// SR-IOV on the sim: an 8-card sim of 16 GiB R200s, the size the vendor's VF names are for.
class SimVirtualFunctionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(backend->virtual_functions(), nullptr);
    devices = discover();
    ASSERT_EQ(devices.size(), 8u);
  }

  std::vector<DeviceIdentity> discover() {
    auto found = backend->discover();
    if (!found) ADD_FAILURE() << found.error();
    return found ? *found : std::vector<DeviceIdentity>{};
  }

  // Sets a count on a device of the last discovery, then discovers again, as xpud does.
  std::optional<DriverChangeError> set(unsigned index, unsigned count) {
    auto error = backend->virtual_functions()->set_virtual_function_count(devices.at(index), count);
    devices = discover();
    return error;
  }

  SimBackend sim = make_sim_backend({8, "R200", 16384});
  std::shared_ptr<Backend> backend = sim.backend;
  std::vector<DeviceIdentity> devices;
};

// Done, or the failure shows the backend's message.
#define EXPECT_DONE(call)                                    \
  do {                                                       \
    auto error_ = (call);                                    \
    EXPECT_FALSE(error_) << (error_ ? error_->message : ""); \
  } while (0)

TEST_F(SimVirtualFunctionsTest, TwoVirtualFunctionsAreDevicesOfTheirOwn) {
  const DeviceIdentity pf = devices[7];
  EXPECT_DONE(set(7, 2));
  ASSERT_EQ(devices.size(), 10u);
  for (unsigned i = 0; i < devices.size(); ++i) EXPECT_EQ(devices[i].index, i);

  // The PF stays itself, with SR-IOV on.
  EXPECT_TRUE(devices[7].sriov_enabled);
  EXPECT_FALSE(devices[7].is_virtual_function);
  EXPECT_EQ(devices[7].uuid, pf.uuid);
  EXPECT_EQ(devices[7].pci_bus_id, pf.pci_bus_id);
  EXPECT_EQ(devices[7].device_nodes, pf.device_nodes);
  for (unsigned i = 0; i < 7; ++i) EXPECT_FALSE(devices[i].sriov_enabled) << i;

  const std::regex bdf("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]");
  for (unsigned i : {8u, 9u}) {
    const auto& vf = devices[i];
    EXPECT_TRUE(vf.is_virtual_function) << i;
    EXPECT_FALSE(vf.sriov_enabled) << i;
    EXPECT_EQ(vf.model, "R200-VF-8G") << i;
    EXPECT_EQ(vf.memory_total_bytes, 8 * kGiB) << i;
    EXPECT_EQ(vf.physical_function, pf.pci_bus_id) << i;
    EXPECT_TRUE(std::regex_match(vf.pci_bus_id, bdf)) << vf.pci_bus_id;
    EXPECT_EQ(vf.numa_node, pf.numa_node) << i;
    EXPECT_EQ(vf.pcie_root, pf.pcie_root) << i;
    EXPECT_TRUE(vf.linked_devices.empty()) << i;
    EXPECT_EQ(vf.device_nodes,
              (std::vector<std::string>{"/dev/xpu" + std::to_string(i), "/dev/xpuctrl"}));
  }
  // Further functions of the PF's device: 0000:86:00.0 has 0000:86:00.1 and .2.
  EXPECT_EQ(pf.pci_bus_id, "0000:86:00.0");
  EXPECT_EQ(devices[8].pci_bus_id, "0000:86:00.1");
  EXPECT_EQ(devices[9].pci_bus_id, "0000:86:00.2");
  std::set<std::string> bus_ids, uuids;
  for (const auto& d : devices) {
    bus_ids.insert(d.pci_bus_id);
    uuids.insert(d.uuid);
  }
  EXPECT_EQ(bus_ids.size(), 10u);
  EXPECT_EQ(uuids.size(), 10u);

  // A VF reads as a card of its own, with its share of the memory; the PF still reads.
  auto reading = backend->read(devices[9]);
  EXPECT_FALSE(reading.read_error);
  ASSERT_EQ(reading.metrics.size(), metric::kAll.size());
  EXPECT_EQ(reading.metrics.at("memory_total_bytes"), static_cast<double>(8 * kGiB));
  EXPECT_LE(reading.metrics.at("memory_used_bytes"), reading.metrics.at("memory_total_bytes"));
  auto pf_reading = backend->read(devices[7]);
  EXPECT_FALSE(pf_reading.read_error);
  EXPECT_EQ(pf_reading.metrics.at("memory_total_bytes"), static_cast<double>(16 * kGiB));

  // The same split gives the same identities in another run.
  auto again = make_sim_backend({8, "R200", 16384}).backend;
  auto before = again->discover();
  ASSERT_TRUE(before);
  EXPECT_DONE(again->virtual_functions()->set_virtual_function_count((*before)[7], 2));
  EXPECT_EQ(*again->discover(), devices);
}

TEST_F(SimVirtualFunctionsTest, OneTwoOrThreeAreTheVendorsShares) {
  EXPECT_DONE(set(7, 3));
  ASSERT_EQ(devices.size(), 11u);
  for (unsigned i : {8u, 9u, 10u}) {
    EXPECT_EQ(devices[i].model, "R200-VF-5G") << i;
    EXPECT_EQ(devices[i].memory_total_bytes, 5 * kGiB) << i;
  }
  EXPECT_EQ(devices[10].pci_bus_id, "0000:86:00.3");
  const std::string three_uuid = devices[8].uuid;

  // From three to one (through none, as the kernel wants): the indexes are handed out again.
  EXPECT_DONE(set(7, 1));
  ASSERT_EQ(devices.size(), 9u);
  EXPECT_EQ(devices[8].model, "R200-VF-16G");
  EXPECT_EQ(devices[8].memory_total_bytes, 16 * kGiB);
  EXPECT_NE(devices[8].uuid, three_uuid) << "another share is another device";
}

TEST_F(SimVirtualFunctionsTest, MoreThanThreeIsRefused) {
  auto error = set(7, 4);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, Kind::InvalidArgument);
  EXPECT_THAT(error->message,
              HasSubstr("xpu7 (0000:86:00.0) supports at most 3 virtual functions"));
  EXPECT_EQ(devices.size(), 8u);
  EXPECT_FALSE(devices[7].sriov_enabled);
}

TEST_F(SimVirtualFunctionsTest, NoneRemovesThemAndTheirReadingsSayGone) {
  EXPECT_DONE(set(7, 2));
  const DeviceIdentity vf = devices.at(9);
  EXPECT_DONE(set(7, 0));
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_FALSE(devices[7].sriov_enabled);
  for (const auto& d : devices) EXPECT_FALSE(d.is_virtual_function) << d.index;
  // The sampler still holding the VF rediscovers, as after a hot unplug.
  auto reading = backend->read(vf);
  EXPECT_TRUE(reading.read_error);
  EXPECT_TRUE(reading.gone);
  EXPECT_DONE(set(7, 0));  // nothing to do
}

TEST_F(SimVirtualFunctionsTest, AVirtualFunctionOrAnUnknownCardIsRefused) {
  EXPECT_DONE(set(7, 2));
  auto on_vf = set(8, 1);
  ASSERT_TRUE(on_vf);
  EXPECT_EQ(on_vf->kind, Kind::NotSupported);
  EXPECT_THAT(on_vf->message, HasSubstr("xpu8 (0000:86:00.1) is a virtual function"));

  DeviceIdentity ghost = devices[3];
  ghost.index = 42;
  auto gone = backend->virtual_functions()->set_virtual_function_count(ghost, 1);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->kind, Kind::NoSuchDevice);
  EXPECT_EQ(discover().size(), 10u);
}

TEST_F(SimVirtualFunctionsTest, VirtualFunctionsHoldingAnInstanceStay) {
  EXPECT_DONE(set(7, 2));
  auto* instances = backend->cxpu_instances();
  ASSERT_NE(instances, nullptr);
  EXPECT_DONE(instances->create_instance(devices[9], "abc", 2 * kGiB));
  for (unsigned count : {3u, 0u}) {
    auto busy = set(7, count);
    ASSERT_TRUE(busy) << count;
    EXPECT_EQ(busy->kind, Kind::Failed);
    EXPECT_THAT(busy->message,
                HasSubstr("xpu7 (0000:86:00.0): its virtual functions are in use (xpu9 holds cXPU "
                          "instance abc)"));
    EXPECT_EQ(devices.size(), 10u) << count;
  }
  EXPECT_DONE(instances->destroy_instance(devices[9], "abc"));
  EXPECT_DONE(set(7, 3));
  EXPECT_EQ(devices.size(), 11u);
}

TEST_F(SimVirtualFunctionsTest, IndexesFollowCreationAboveEveryOther) {
  EXPECT_DONE(set(7, 2));  // 8, 9
  EXPECT_DONE(set(3, 1));  // 10
  EXPECT_DONE(set(7, 0));
  EXPECT_DONE(set(0, 1));  // above 10, not in 7's old place
  ASSERT_EQ(devices.size(), 10u);
  EXPECT_EQ(devices[8].index, 10u);
  EXPECT_EQ(devices[8].physical_function, devices[3].pci_bus_id);
  EXPECT_EQ(devices[9].index, 11u);
  EXPECT_EQ(devices[9].physical_function, devices[0].pci_bus_id);
  EXPECT_EQ(devices[9].pci_bus_id, "0000:10:00.1");
  EXPECT_EQ(devices[9].numa_node, 0);

  // The Simulator reaches a VF by its index.
  auto& simulator = *sim.simulator;
  EXPECT_FALSE(simulator.set_health(11, false, "VF fault"));
  EXPECT_EQ(backend->read(devices[9]).fault, "VF fault");
  EXPECT_FALSE(backend->read(devices[8]).fault);
  EXPECT_FALSE(simulator.set_metric(10, "temperature_celsius", 77.0));
  EXPECT_EQ(backend->read(devices[8]).metrics.at("temperature_celsius"), 77.0);
  auto removed = simulator.set_health(8, false, "x");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->kind, InjectionError::Kind::NoSuchDevice);
}

TEST(SimBackend, TooLittleMemoryForAGiBPerFunctionIsRefused) {
  auto backend = make_sim_backend({1, "R200", 2048}).backend;
  auto devices = backend->discover();
  ASSERT_TRUE(devices);
  auto error = backend->virtual_functions()->set_virtual_function_count((*devices)[0], 3);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, Kind::InvalidArgument);
  EXPECT_THAT(error->message, HasSubstr("too little memory for 3 virtual functions"));
  EXPECT_FALSE(backend->virtual_functions()->set_virtual_function_count((*devices)[0], 2));
  auto split = backend->discover();
  ASSERT_TRUE(split);
  EXPECT_EQ(split->back().model, "R200-VF-1G");
}

TEST(SimBackend, CardsHaveAPcieLinkAndPinsInjectWhatTheKernelWouldReport) {
  auto sim = make_sim_backend({2, "R200", 32768});
  auto devices = sim.backend->discover();
  ASSERT_TRUE(devices);
  const auto& card = (*devices)[1];
  EXPECT_EQ(sim.backend->read(card).pcie,
            (PcieLinkState{16000000000U, 16000000000U, 16U, 16U, 0U, 0U, 0U}));

  EXPECT_FALSE(sim.simulator->set_metric(1, "pcie_link_width_lanes", 8));
  EXPECT_FALSE(sim.simulator->set_metric(1, "pcie_aer_fatal_errors", 3));
  auto reading = sim.backend->read(card);
  EXPECT_EQ(reading.pcie.width, 8U);
  EXPECT_EQ(reading.pcie.aer_fatal, 3U);
  // The PCIe figures travel beside the driver's readings, not among them.
  EXPECT_EQ(reading.metrics.size(), metric::kAll.size());

  // Only what the kernel could write: whole numbers, at most x32.
  for (auto [key, value] :
       {std::pair{"pcie_link_width_lanes", 33.0}, std::pair{"pcie_aer_fatal_errors", 1.5},
        std::pair{"pcie_link_speed_transfers_per_second", 1e300}}) {
    auto error = sim.simulator->set_metric(1, key, value);
    ASSERT_TRUE(error) << key;
    EXPECT_EQ(error->kind, InjectionError::Kind::InvalidArgument);
  }
  EXPECT_FALSE(sim.simulator->set_metric(1, "pcie_link_width_lanes", std::nan("")));
  EXPECT_EQ(sim.backend->read(card).pcie.width, 16U);
}

TEST(SimBackend, AResetCuresAnInjectedFaultAndFreesTheCardsMemory) {
  auto [backend, sim, reset] = make_sim_backend({2, "R200", 32768});
  ASSERT_NE(reset, nullptr);
  auto devices = backend->discover();
  const DeviceIdentity card = (*devices)[1];
  EXPECT_FALSE(sim->set_health(1, false, "ECC storm"));
  EXPECT_FALSE(sim->set_metric(1, "process_count", 0));
  EXPECT_FALSE(sim->set_metric(1, "memory_used_bytes", 8.0 * 1024 * 1024 * 1024));
  EXPECT_FALSE(reset->reset_card(card));
  const DeviceReading after = backend->read(card);
  EXPECT_FALSE(after.fault);
  EXPECT_EQ(after.metrics.at("memory_used_bytes"), 0.0);  // an idle card's 0 bytes
  EXPECT_EQ(after.metrics.at("process_count"), 0.0);      // the test's pin stays
  // The other card is untouched.
  EXPECT_FALSE(backend->read((*devices)[0]).fault);
}

TEST(SimBackend, AResetToldToFailLeavesTheCardAsItWas) {
  auto [backend, sim, reset] = make_sim_backend({2, "R200", 32768});
  auto devices = backend->discover();
  EXPECT_FALSE(sim->set_health(0, false, "wedged"));
  EXPECT_FALSE(sim->set_reset_fails(0, true));
  EXPECT_FALSE(reset->reset_card((*devices)[0]));
  EXPECT_EQ(backend->read((*devices)[0]).fault, "wedged");
  EXPECT_FALSE(sim->set_reset_fails(0, false));
  EXPECT_FALSE(reset->reset_card((*devices)[0]));
  EXPECT_FALSE(backend->read((*devices)[0]).fault);
  auto no_device = sim->set_reset_fails(7, true);
  ASSERT_TRUE(no_device);
  EXPECT_EQ(no_device->kind, InjectionError::Kind::NoSuchDevice);
  // A card that is gone (another identity at the index) is not reset.
  DeviceIdentity stranger = (*devices)[0];
  stranger.uuid = "not-this-card";
  auto gone = reset->reset_card(stranger);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->kind, DriverChangeError::Kind::NoSuchDevice);
}

}  // namespace
}  // namespace xpud
