#include "xpud/backends/sim/sim_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "common/names.h"
#include "tests/support/child_process.h"
#include "xpud/backends/backend_factory.h"
#include "xpud/backends/simulator.h"

namespace xpud {
namespace {

namespace metric = xpu::names::metric;

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
  auto [backend, sim] = make_sim_backend({8, "R200", 32768});
  ASSERT_NE(sim, nullptr);
  auto devices = backend->discover();
  EXPECT_FALSE(sim->set_health(3, false, "ECC storm"));
  EXPECT_EQ(backend->read((*devices)[3]).fault, "ECC storm");
  EXPECT_FALSE(backend->read((*devices)[2]).fault);
  EXPECT_FALSE(sim->set_health(3, true, ""));
  EXPECT_FALSE(backend->read((*devices)[3]).fault);
}

TEST(SimBackend, PinnedMetricsAndTheirRelease) {
  auto [backend, sim] = make_sim_backend({1, "R200", 32768});
  auto devices = backend->discover();
  EXPECT_FALSE(sim->set_metric(0, "temperature_celsius", 91.5));
  EXPECT_EQ(backend->read((*devices)[0]).metrics.at("temperature_celsius"), 91.5);
  EXPECT_FALSE(sim->set_metric(0, "temperature_celsius", std::nan("")));
  EXPECT_NE(backend->read((*devices)[0]).metrics.at("temperature_celsius"), 91.5);
}

TEST(SimBackend, BadInjectionsAreRejected) {
  auto [backend, sim] = make_sim_backend({2, "R200", 32768});
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

}  // namespace
}  // namespace xpud
