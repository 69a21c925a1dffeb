// discover(): the identity of each scripted card as xpud will publish it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/card_builder.h"
#include "tests/xpud/backends/captured_log.h"
#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/device_uuid.h"
#include "xpud/backends/virtual_functions.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class XpumlDiscoverTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> load(const std::filesystem::path& library = test::fake_xpuml_library()) {
    auto backend = make_xpuml_backend(library, host.sysfs_root());
    if (!backend.ok()) ADD_FAILURE() << backend.error();
    return backend.ok() ? std::move(*backend) : nullptr;
  }

  std::vector<DeviceIdentity> discover(Backend& backend) {
    auto devices = backend.discover();
    if (!devices.ok()) ADD_FAILURE() << devices.error();
    return devices.ok() ? *devices : std::vector<DeviceIdentity>{};
  }

  static std::vector<unsigned> indices(const std::vector<DeviceIdentity>& devices) {
    std::vector<unsigned> out;
    for (const auto& d : devices) out.push_back(d.index);
    return out;
  }

  test::FakeXpumlHost host;
};

TEST_F(XpumlDiscoverTest, ScriptedCardsWithFullIdentity) {
  host.write_scenario(R"(
devices 2
device 1
serial 02K00XYZ0042
uuid 4f1c2b3a-1111-4222-8333-444455556666
bus_id 0000AF12:AF:1F.7
board 101
memory_total 16GiB
)");
  host.write_numa_node("0000:3b:00.0", "0\n");
  host.write_numa_node("af12:af:1f.7", "1\n");
  // The variant with xpumlDeviceGetUUID (no real library is known to have it).
  auto backend = load(test::fake_xpuml_uuid_library());
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);

  const DeviceIdentity first = xpu::test::card(0)
                                   .uuid("fa4e0000-0000-4000-8000-000000000000")
                                   .serial("02K00FAKE0000")
                                   .model("R200")
                                   .pci_bus_id("0000:3b:00.0")
                                   .numa_node(0)
                                   .memory_total_bytes(std::uint64_t{32} << 30)
                                   .device_nodes({"/dev/xpu0", "/dev/xpuctrl"});
  EXPECT_EQ(devices[0], first);

  const DeviceIdentity second = xpu::test::card(1)
                                    .uuid("4f1c2b3a-1111-4222-8333-444455556666")
                                    .serial("02K00XYZ0042")
                                    .model("R300")
                                    .pci_bus_id("af12:af:1f.7")
                                    .numa_node(1)
                                    .memory_total_bytes(std::uint64_t{16} << 30)
                                    .device_nodes({"/dev/xpu1", "/dev/xpuctrl"});
  EXPECT_EQ(devices[1], second);
  // The library exposes no interconnect, so no links are claimed.
  EXPECT_TRUE(devices[1].linked_devices.empty());
}

TEST_F(XpumlDiscoverTest, IdentityIsTheSameOnEveryDiscovery) {
  host.write_scenario("devices 4\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto first = discover(*backend);
  EXPECT_EQ(first.size(), 4u);
  EXPECT_EQ(discover(*backend), first);
}

TEST_F(XpumlDiscoverTest, ModelFromBoardIdThenPciIdsThenName) {
  host.write_scenario(R"(
devices 4
device 0
board 2
device 1
board 7777
pci_subsystem_id 0x00060002
device 2
board 7777
pci_subsystem_id 0x00630002
name R999
device 3
board -1
pci_device_id 0x00000000
name ""
)");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0].model, "K200");
  EXPECT_EQ(devices[1].model, "R420");
  EXPECT_EQ(devices[2].model, "R999");
  EXPECT_EQ(devices[3].model, "unknown");
}

TEST_F(XpumlDiscoverTest, VirtualFunctionsByPciIdOrModelIdAndSriovOnMarksAPhysicalFunction) {
  host.write_scenario(R"(
devices 5
device 0
pci_device_id 0x36851d22
device 1
pci_device_id 0
vxpu_mode 2
device 2
pci_device_id 0
vxpu_mode 1
device 3
vxpu_mode 2
model_id 200
device 4
pci_device_id 0
model_id 202
)");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 5u);
  EXPECT_TRUE(devices[0].is_virtual_function);
  EXPECT_EQ(devices[0].model, "KL2-VF");
  // SRIOV_ON is a PF whose virtual functions are on, whatever its PCI ids: not a VF.
  EXPECT_FALSE(devices[1].is_virtual_function);
  EXPECT_TRUE(devices[1].sriov_enabled);
  EXPECT_FALSE(devices[2].is_virtual_function);
  EXPECT_FALSE(devices[2].sriov_enabled);
  EXPECT_FALSE(devices[3].is_virtual_function);
  EXPECT_TRUE(devices[3].sriov_enabled);
  EXPECT_EQ(devices[3].model, "R200");
  // A VF by its model id alone, named as the vendor's device plugin names it.
  EXPECT_TRUE(devices[4].is_virtual_function);
  EXPECT_FALSE(devices[4].sriov_enabled);
  EXPECT_EQ(devices[4].model, "R200-VF-8G");
}

TEST_F(XpumlDiscoverTest, PhysicalFunctionWithVirtualFunctionsOnAndItsVfs) {
  host.write_scenario("devices 2\ndevice 0\nmax_vfs 3\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);
  ASSERT_NE(backend->virtual_functions(), nullptr);
  ASSERT_EQ(backend->virtual_functions()->set_virtual_function_count(devices[0], 2), std::nullopt);

  devices = discover(*backend);
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_TRUE(devices[0].sriov_enabled);
  EXPECT_FALSE(devices[0].is_virtual_function);
  EXPECT_EQ(devices[0].model, "R200");
  EXPECT_EQ(devices[1].pci_bus_id, "0000:3c:00.0");
  EXPECT_FALSE(devices[1].sriov_enabled);
  // The VFs: the next physical ids after the cards', their own model and share of memory.
  for (unsigned i : {2u, 3u}) {
    EXPECT_EQ(devices[i].index, i);
    EXPECT_TRUE(devices[i].is_virtual_function);
    EXPECT_FALSE(devices[i].sriov_enabled);
    EXPECT_EQ(devices[i].model, "R200-VF-8G");
    EXPECT_EQ(devices[i].memory_total_bytes, std::uint64_t{16} << 30);
    EXPECT_EQ(devices[i].device_nodes,
              (std::vector<std::string>{"/dev/xpu" + std::to_string(i), "/dev/xpuctrl"}));
  }
  EXPECT_EQ(devices[2].pci_bus_id, "0000:3b:00.1");
}

TEST_F(XpumlDiscoverTest, MaxVfCountNotAvailableMeansNoSriov) {
  host.write_scenario("devices 1\n");  // maxVFCount 4294967295, as a K200 reports it
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 1u);
  auto error = backend->virtual_functions()->set_virtual_function_count(devices[0], 2);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, DriverChangeError::Kind::NotSupported);
  EXPECT_THAT(error->message, HasSubstr("no SR-IOV capability (maxVFCount not available)"));
}

TEST_F(XpumlDiscoverTest, PhysicalIdIsTheIndexNotTheMinorAndCardsAreOrderedByIt) {
  // Minors 0, 2, 4 (the driver's steps of two) and physical ids in neither order.
  host.write_scenario(R"(
devices 3
device 0
id 5
device 1
id 1
device 2
id 3
)");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  EXPECT_THAT(indices(devices), ElementsAre(1, 3, 5));
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[2].device_nodes, (std::vector<std::string>{"/dev/xpu5", "/dev/xpuctrl"}));
  EXPECT_EQ(devices[2].pci_bus_id, "0000:3b:00.0");
}

TEST_F(XpumlDiscoverTest, DefaultMinorsInStepsOfTwoNameNothing) {
  host.write_scenario("devices 8\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  EXPECT_THAT(indices(discover(*backend)), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST_F(XpumlDiscoverTest, NamesThatDifferFromTheLibraryOrderAreNotedOnceAtInfoLevel) {
  test::CapturedLog log;
  host.write_scenario("devices 2\ndevice 0\nid 1\ndevice 1\nid 0\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  discover(*backend);
  discover(*backend);
  EXPECT_EQ(log.count("info", "index 0 (0000:3b:00.0) is xpu1; the vendor's container runtime"), 1);
  EXPECT_EQ(log.count("info", "CXPU_VISIBLE_DEVICES"), 2);  // one line per card
}

TEST_F(XpumlDiscoverTest, SecondCardClaimingTheSameIndexIsSkipped) {
  host.write_scenario("devices 2\ndevice 1\nid 0\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].pci_bus_id, "0000:3b:00.0");
}

TEST_F(XpumlDiscoverTest, GetIdFailureFallsBackOnTheClassLinkThenOnTheLibraryIndex) {
  test::CapturedLog log;
  host.write_scenario(R"(
devices 3
device 1
id 9
fail xpumlDeviceGetId UNKNOWN
device 2
id 8
fail xpumlDeviceGetId UNKNOWN
)");
  // The driver's class device names the second card; the third has none.
  host.tree().add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3c:00.0", 1));
  host.tree().add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3d:00.0", 1));
  host.tree().publish_class_device("0000:3c:00.0", 4);
  auto backend = load();
  ASSERT_TRUE(backend);
  EXPECT_THAT(indices(discover(*backend)), ElementsAre(0, 2, 4));
  EXPECT_EQ(log.count("warning", "naming it xpu4 after the xpu class device"), 1);
  EXPECT_EQ(log.count("warning", "naming it xpu2 by the library's order"), 1);
  // Once per appearance, not on every discovery.
  discover(*backend);
  EXPECT_EQ(log.count("warning", "naming it xpu2 by the library's order"), 1);
}

TEST_F(XpumlDiscoverTest, LibraryWithoutGetIdIsNamedByTheClassLinks) {
  // An older library: sysfs's class devices name the cards, a K200's two chips included.
  host.write_scenario(R"(
devices 3
device 0
bus_id 00000000:5E:00.0
board 2
pci_subsystem_id 0
device 1
bus_id 00000000:5E:00.0
board 2
pci_subsystem_id 0
device 2
bus_id 00000000:3B:00.0
)");
  host.tree().add_pci_function(xpu::fakes::kunlunxin_k200("0000:5e:00.0"));
  host.tree().add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1));
  host.tree().publish_class_device("0000:5e:00.0", 6);
  host.tree().publish_class_device("0000:5e:00.0", 7);
  host.tree().publish_class_device("0000:3b:00.0", 2);
  test::CapturedLog log;
  auto backend = load(test::fake_xpuml_old_library());
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  EXPECT_THAT(indices(devices), ElementsAre(2, 6, 7));
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(devices[1].uuid, derived_device_uuid("0000:5e:00.0", "K200", 0));
  EXPECT_EQ(devices[2].uuid, derived_device_uuid("0000:5e:00.0", "K200", 1));
  EXPECT_EQ(log.count("warning", "naming it"), 0);
}

TEST_F(XpumlDiscoverTest, OldLibraryUsesLibraryIndexAndDerivesStableUuids) {
  host.write_scenario(R"(
devices 4
device 1
minor 7
device 2
fail xpumlDeviceGetSerial NOT_SUPPORTED
sn 0x1122 0x3344
device 3
fail xpumlDeviceGetSerial NOT_SUPPORTED
sn 0 0
)");
  std::vector<DeviceIdentity> devices;
  {
    auto backend = load(test::fake_xpuml_old_library());
    ASSERT_TRUE(backend);
    devices = discover(*backend);
  }
  EXPECT_THAT(indices(devices), ElementsAre(0, 1, 2, 3));
  ASSERT_EQ(devices.size(), 4u);
  // The ids the sysfs backend gives these cards; serials, present or not, do not enter them.
  EXPECT_EQ(devices[0].uuid, "8476b011-3489-568c-b45e-bbf7ea54fcab");  // 0000:3b:00.0/R200/0
  EXPECT_EQ(devices[1].uuid, derived_device_uuid("0000:3c:00.0", "R200", 0));
  EXPECT_EQ(devices[2].serial, "");
  EXPECT_EQ(devices[2].uuid, derived_device_uuid("0000:3d:00.0", "R200", 0));
  EXPECT_EQ(devices[3].uuid, derived_device_uuid("0000:3e:00.0", "R200", 0));
  // Model comes from the board id; no xpumlDeviceGetName needed.
  EXPECT_EQ(devices[0].model, "R200");

  // A restarted daemon sees the same IDs.
  auto again = load(test::fake_xpuml_old_library());
  ASSERT_TRUE(again);
  EXPECT_EQ(discover(*again), devices);
}

TEST_F(XpumlDiscoverTest, DerivedUuidsDoNotDependOnSerials) {
  host.write_scenario("devices 2\ndevice 0\nserial SAME\ndevice 1\nserial SAME\n");
  auto backend = load(test::fake_xpuml_old_library());
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].uuid, derived_device_uuid("0000:3b:00.0", "R200", 0));
  EXPECT_EQ(devices[1].uuid, derived_device_uuid("0000:3c:00.0", "R200", 0));

  // A serial the driver reports differently after an update renames nothing.
  host.write_scenario("devices 2\ndevice 0\nserial OTHER\n");
  auto updated = load(test::fake_xpuml_old_library());
  ASSERT_TRUE(updated);
  auto again = discover(*updated);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].serial, "OTHER");
  EXPECT_EQ(again[0].uuid, devices[0].uuid);
  EXPECT_EQ(again[1].uuid, devices[1].uuid);
}

TEST_F(XpumlDiscoverTest, DerivedUuidsNameTheBoardAsThePciIdsDo) {
  // A K100 has a K200's PCI ids (subsystem 0/0); the sysfs backend cannot tell them apart, so
  // the id names the K200 while the model says K100. A board id the PCI ids contradict does
  // not enter the id either.
  host.write_scenario(R"(
devices 2
device 0
board 1
pci_subsystem_id 0
device 1
board 101
)");
  auto backend = load(test::fake_xpuml_old_library());
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].model, "K100");
  EXPECT_EQ(devices[0].uuid, derived_device_uuid("0000:3b:00.0", "K200", 0));
  EXPECT_EQ(devices[1].model, "R300");
  EXPECT_EQ(devices[1].uuid, derived_device_uuid("0000:3c:00.0", "R200", 0));
}

TEST_F(XpumlDiscoverTest, BothChipsOfAK200ShareOnePciAddress) {
  const char* k200 = R"(
devices 2
device 0
board 2
pci_subsystem_id 0
serial K200SERIAL
device 1
board 2
pci_subsystem_id 0
serial K200SERIAL
bus_id 00000000:3B:00.0
)";
  host.write_scenario(k200);
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].pci_bus_id, devices[1].pci_bus_id);
  EXPECT_EQ(devices[1].model, "K200");

  // Without library UUIDs the address alone cannot tell the chips apart; the chip number can.
  auto old = load(test::fake_xpuml_old_library());
  ASSERT_TRUE(old);
  devices = discover(*old);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].uuid, "59629bb3-fa20-5476-a2c0-a2b5165b9f38");  // 0000:3b:00.0/K200/0
  EXPECT_EQ(devices[1].uuid, "e79a38c5-bbb0-52a6-b5a0-166010adb483");  // 0000:3b:00.0/K200/1

  // A chip that cannot be read keeps its id, and its sibling keeps its own.
  host.write_scenario(std::string(k200) + "device 0\nlost\n");
  EXPECT_EQ(discover(*old), devices);
}

TEST_F(XpumlDiscoverTest, K200ChipsAreCountedInDeviceNodeOrder) {
  // The library lists the chip behind /dev/xpu1 first; the sysfs backend counts the chip behind
  // the lower node as chip 0, and so does this one.
  host.write_scenario(R"(
devices 2
device 0
board 2
pci_subsystem_id 0
id 1
device 1
board 2
pci_subsystem_id 0
id 0
bus_id 00000000:3B:00.0
)");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].index, 0u);
  EXPECT_EQ(devices[0].serial, "02K00FAKE0001");  // the library's second card
  EXPECT_EQ(devices[0].uuid, derived_device_uuid("0000:3b:00.0", "K200", 0));
  EXPECT_EQ(devices[1].index, 1u);
  EXPECT_EQ(devices[1].uuid, derived_device_uuid("0000:3b:00.0", "K200", 1));
}

TEST_F(XpumlDiscoverTest, UnusableLibraryUuidIsReplacedByADerivedOne) {
  host.write_scenario(R"(
devices 3
device 0
uuid has spaces in it
device 1
uuid ""
device 2
uuid aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
)");
  auto backend = load(test::fake_xpuml_uuid_library());
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[0].uuid, derived_device_uuid("0000:3b:00.0", "R200", 0));
  EXPECT_EQ(devices[1].uuid, derived_device_uuid("0000:3c:00.0", "R200", 0));
  EXPECT_EQ(devices[2].uuid, derived_device_uuid("0000:3d:00.0", "R200", 0));
}

TEST_F(XpumlDiscoverTest, LibraryUuidReportedTwiceKeepsOnlyTheFirstCard) {
  host.write_scenario(R"(
devices 3
device 0
uuid 4f1c2b3a-1111-4222-8333-444455556666
device 2
uuid 4f1c2b3a-1111-4222-8333-444455556666
)");
  auto backend = load(test::fake_xpuml_uuid_library());
  ASSERT_TRUE(backend);
  test::CapturedLog log;
  auto devices = discover(*backend);
  EXPECT_THAT(indices(devices), ElementsAre(0, 1));
  EXPECT_EQ(log.count("warning",
                      "skipping device 0000:3d:00.0: UUID "
                      "4f1c2b3a-1111-4222-8333-444455556666 reported twice"),
            1);
}

TEST_F(XpumlDiscoverTest, CardsWhoseIdentityCannotBeReadAreSkippedOthersStay) {
  host.write_scenario(R"(
devices 6
device 1
fail xpumlDeviceGetPciInfo NOT_SUPPORTED
device 2
bus_id not-a-bus-id
device 3
lost
device 4
fail xpumlDeviceGetHandleByIndex UNKNOWN
)");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(devices[1].pci_bus_id, "0000:40:00.0");
}

TEST_F(XpumlDiscoverTest, CardLostDuringIdentityIsSkipped) {
  host.write_scenario("devices 2\ndevice 0\nfail xpumlDeviceGetAttributes XPU_IS_LOST\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].index, 1u);
}

TEST_F(XpumlDiscoverTest, KnownCardKeepsItsIdentityWhenItCannotBeReadAgain) {
  host.write_scenario("devices 3\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto before = discover(*backend);
  ASSERT_EQ(before.size(), 3u);
  host.write_scenario(R"(
devices 3
device 1
lost
device 2
fail xpumlDeviceGetPciInfo TIMEOUT
)");
  EXPECT_EQ(discover(*backend), before);
  EXPECT_EQ(discover(*backend), before);
}

TEST_F(XpumlDiscoverTest, CardsLeaveWhenTheLibraryStopsCountingThem) {
  host.write_scenario("devices 3\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  EXPECT_EQ(discover(*backend).size(), 3u);
  host.write_scenario("devices 2\n");
  EXPECT_THAT(indices(discover(*backend)), ElementsAre(0, 1));
  // With a new count, library indices may name other cards: nothing is carried over.
  host.write_scenario("devices 3\ndevice 1\nlost\n");
  EXPECT_THAT(indices(discover(*backend)), ElementsAre(0, 2));
}

TEST_F(XpumlDiscoverTest, DeviceCountFailureFailsDiscovery) {
  host.write_scenario("devices 2\nfail xpumlDeviceGetCount DRIVER_NOT_LOADED after 0\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = backend->discover();
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.error(),
            "xpumlDeviceGetCount(system): DRIVER_NOT_LOADED (9): fake libxpuml: driver not loaded");
}

TEST_F(XpumlDiscoverTest, MalformedOrMissingNumaNodeIsUnknownButTheCardStays) {
  host.write_scenario("devices 3\n");
  host.write_numa_node("0000:3b:00.0", "garbage\n");
  host.write_numa_node("0000:3c:00.0", "4096\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 3u);
  for (const auto& d : devices) EXPECT_EQ(d.numa_node, -1) << d.pci_bus_id;

  host.write_numa_node("0000:3b:00.0", "1\n");
  EXPECT_EQ(discover(*backend)[0].numa_node, 1);
}

// The PCIe root from the card's bus entry, a link as in real sysfs; anything else is unknown,
// never a reason to drop the card.
TEST_F(XpumlDiscoverTest, PcieRootFromTheBusEntryLinkOrUnknown) {
  host.write_scenario("devices 4\n");
  host.tree().add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1, 0));
  // A link to another function's directory, and a plain directory.
  std::filesystem::create_directories(host.sysfs_root() / "sys/devices/pci0000:00/0000:3b:00.0");
  std::filesystem::create_symlink("../../../devices/pci0000:00/0000:3b:00.0",
                                  host.sysfs_root() / "sys/bus/pci/devices/0000:3c:00.0");
  host.write_numa_node("0000:3d:00.0", "0\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  test::CapturedLog log;
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0].pcie_root, "pci0000:3b");
  for (unsigned i : {1u, 2u, 3u}) EXPECT_EQ(devices[i].pcie_root, "") << devices[i].pci_bus_id;
  EXPECT_EQ(log.count("debug", "0000:3c:00.0: link to"), 1) << log.text();
  EXPECT_EQ(log.count("debug", "0000:3d:00.0: not a link"), 1) << log.text();
}

TEST_F(XpumlDiscoverTest, LastingProblemsAreWarnedAboutOncePerAppearance) {
  host.write_scenario("devices 2\ndevice 1\nfail xpumlDeviceGetPciInfo NOT_SUPPORTED\n");
  host.write_numa_node("0000:3b:00.0", "garbage\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  test::CapturedLog log;
  for (int pass = 0; pass < 3; ++pass) EXPECT_EQ(discover(*backend).size(), 1u);
  EXPECT_EQ(log.count("warning", "numa_node"), 1);
  EXPECT_EQ(log.count("debug", "numa_node"), 2);
  EXPECT_EQ(log.count("warning", "skipping device: xpumlDeviceGetPciInfo(index 1)"), 1);

  host.write_numa_node("0000:3b:00.0", "0\n");
  EXPECT_EQ(discover(*backend).at(0).numa_node, 0);
  host.write_numa_node("0000:3b:00.0", "garbage\n");
  EXPECT_EQ(discover(*backend).at(0).numa_node, -1);
  EXPECT_EQ(log.count("warning", "numa_node"), 2);
}

TEST_F(XpumlDiscoverTest, MemoryTotalFallsBackToTheAttributes) {
  host.write_scenario(
      "devices 1\ndevice 0\nmemory_total 24GiB\nfail xpumlDeviceGetMemoryInfo NOT_SUPPORTED\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].memory_total_bytes, std::uint64_t{24} << 30);
}

TEST_F(XpumlDiscoverTest, NoticesCardsAddedWhileRunning) {
  host.write_scenario("devices 1\n");
  auto backend = load();
  ASSERT_TRUE(backend);
  EXPECT_EQ(discover(*backend).size(), 1u);
  host.write_scenario("devices 3\n");
  EXPECT_THAT(indices(discover(*backend)), ElementsAre(0, 1, 2));
}

}  // namespace
}  // namespace xpud
