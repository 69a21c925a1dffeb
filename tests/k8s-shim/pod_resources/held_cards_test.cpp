#include "k8s-shim/pod_resources/held_cards.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/pod_resources/reply_builder.h"
#include "tests/support/card_builder.h"

namespace shim {
namespace {

using test::ReplyBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using xpu::test::card;
using xpu::test::present;

constexpr std::string_view kDomain = "kunlunxin.com";
const std::string kDriver = "xpu.kunlunxin.com";

HeldCards uuids(std::set<std::string> held) {
  return HeldCards{.uuids = std::move(held), .indices = {}};
}

// --- the DRA driver's reading: cards held through the device plugin ---

TEST(CardsHeldByDevicePlugin, WholeCardsPerModelNamesAndVirtualFunctionsByTheirUuid) {
  ReplyBuilder reply;
  reply.container("ml", "train-0", "worker")
      .devices("kunlunxin.com/xpu", {"uuid-0", "uuid-1"})
      .container("ml", "train-0", "sidecar")
      .devices("kunlunxin.com/R200", {"uuid-2"})
      .container("default", "vf", "main")
      .devices("kunlunxin.com/vxpu", {"uuid-vf-9"});
  HeldCardsReading reading = cards_held_by_device_plugin(reply, kDomain);
  EXPECT_EQ(reading.held, uuids({"uuid-0", "uuid-1", "uuid-2", "uuid-vf-9"}));
  EXPECT_THAT(reading.ignored, IsEmpty());
}

TEST(CardsHeldByDevicePlugin, ReplicasAndMemoryUnitsHoldTheirCard) {
  ReplyBuilder reply;
  reply.container("a", "shared", "main")
      .devices("kunlunxin.com/xpu-shared", {"uuid-3::0", "uuid-3::2"})
      .container("a", "memory", "main")
      .devices("kunlunxin.com/vxpu-memory", {"uuid-4::m0", "uuid-4::m15"})
      .container("a", "per-model", "main")
      .devices("kunlunxin.com/R200-vxpu-memory", {"uuid-5::m3"});
  EXPECT_EQ(cards_held_by_device_plugin(reply, kDomain).held,
            uuids({"uuid-3", "uuid-4", "uuid-5"}));
}

TEST(CardsHeldByDevicePlugin, OtherDomainsAndDraClaimsHoldNothing) {
  ReplyBuilder reply;
  reply.container("a", "gpu", "main")
      .devices("nvidia.com/gpu", {"uuid-0"})
      .devices("kunlunxin.com.example/xpu", {"uuid-1"})
      .devices("example.com/kunlunxin.com/xpu", {"uuid-2"})
      .claim("a", "xpus")
      .claim_device(kDriver, "node-1", "xpu-3", {"kunlunxin.com/xpu=uuid-3"});
  HeldCardsReading reading = cards_held_by_device_plugin(reply, kDomain);
  EXPECT_TRUE(reading.held.empty());
  EXPECT_THAT(reading.ignored, IsEmpty());
}

TEST(CardsHeldByDevicePlugin, ACustomisedResourceNameIsReadInItsDomain) {
  ReplyBuilder reply;
  reply.container("a", "p", "main")
      .devices("accel.example.org/xpu", {"uuid-0"})
      .devices("kunlunxin.com/xpu", {"uuid-1"});
  EXPECT_EQ(cards_held_by_device_plugin(reply, "accel.example.org").held, uuids({"uuid-0"}));
}

TEST(CardsHeldByDevicePlugin, GarbageIdsAreIgnoredAndNamedEscapedAFewAtATime) {
  ReplyBuilder reply;
  reply.container("a", "p", "main")
      .devices("kunlunxin.com/xpu",
               {"", "two words", "line\nbreak", std::string(64, 'u'), "uuid-0"});
  HeldCardsReading reading = cards_held_by_device_plugin(reply, kDomain);
  EXPECT_EQ(reading.held, uuids({"uuid-0"}));
  ASSERT_EQ(reading.ignored.size(), 4u);
  EXPECT_THAT(reading.ignored[0], HasSubstr("container \"main\" of pod \"a\"/\"p\""));
  EXPECT_THAT(reading.ignored[0], HasSubstr("\"kunlunxin.com/xpu\" device \"\""));
  EXPECT_THAT(reading.ignored[2], HasSubstr("\"line\\x0abreak\""));
  for (const auto& line : reading.ignored) EXPECT_EQ(line.find('\n'), std::string::npos) << line;

  ReplyBuilder flood;
  flood.container("a", "flood", "main");
  for (int i = 0; i < 1000; ++i)
    flood.devices("kunlunxin.com/xpu", {"bad id " + std::to_string(i)});
  HeldCardsReading flooded = cards_held_by_device_plugin(flood, kDomain);
  EXPECT_TRUE(flooded.held.empty());
  ASSERT_EQ(flooded.ignored.size(), kMaxIgnoredNamed + 1);
  EXPECT_EQ(flooded.ignored.back(), "and 992 more entries like these");
}

// --- the device plugin's reading: cards held through DRA claims ---

TEST(CardsHeldThroughDra, CardsVirtualFunctionsAndSharesByNameAndCdiName) {
  ReplyBuilder reply;
  reply.container("ml", "train-0", "worker")
      .claim("ml", "train-0-xpus")
      .claim_device(kDriver, "node-1", "xpu-0",
                    {"kunlunxin.com/xpu=uuid-0", "kunlunxin.com/claim=0f1e-main"})
      .container("ml", "vf", "main")
      .claim("ml", "vf-xpu")
      .claim_device(kDriver, "node-1", "xpu-9", {"kunlunxin.com/xpu=uuid-vf-9"})
      .container("ml", "share", "main")
      .claim("ml", "share-xpu")
      .claim_device(kDriver, "node-1", "xpu-2-shared",
                    {"kunlunxin.com/xpu=uuid-2", "kunlunxin.com/claim=1a2b-main"});
  HeldCardsReading reading = cards_held_through_dra(reply);
  EXPECT_EQ(reading.held.indices, (std::set<unsigned>{0, 2, 9}));
  EXPECT_EQ(reading.held.uuids, (std::set<std::string>{"uuid-0", "uuid-2", "uuid-vf-9"}));
  EXPECT_THAT(reading.ignored, IsEmpty());
}

TEST(CardsHeldThroughDra, OnlyTheLastCardNameIsADevicesOwn) {
  // The kubelet lists under each device of a claim the CDI names of the devices before it too.
  ReplyBuilder reply;
  reply.container("a", "p", "main")
      .claim("a", "two")
      .claim_device(kDriver, "node-1", "xpu-1",
                    {"kunlunxin.com/xpu=uuid-7", "kunlunxin.com/xpu=uuid-1"});
  EXPECT_EQ(cards_held_through_dra(reply).held.uuids, (std::set<std::string>{"uuid-1"}));
}

TEST(CardsHeldThroughDra, ACardNamedByIndexInTheCdiSpecIsHeldByIndex) {
  ReplyBuilder reply;
  reply.container("a", "p", "main")
      .claim("a", "c")
      .claim_device(kDriver, "node-1", "xpu-3", {"kunlunxin.com/xpu=4"});
  HeldCardsReading reading = cards_held_through_dra(reply);
  EXPECT_EQ(reading.held.indices, (std::set<unsigned>{3, 4}));
  EXPECT_THAT(reading.held.uuids, IsEmpty());
}

TEST(CardsHeldThroughDra, OtherDriversAndDevicePluginDevicesHoldNothing) {
  ReplyBuilder reply;
  reply.container("a", "p", "main")
      .devices("kunlunxin.com/xpu", {"uuid-0"})
      .claim("a", "gpu")
      .claim_device("gpu.nvidia.com", "node-1", "gpu-0", {"nvidia.com/gpu=0"})
      .claim_device("xpu.kunlunxin.com.example", "node-1", "xpu-1", {"kunlunxin.com/xpu=uuid-1"});
  HeldCardsReading reading = cards_held_through_dra(reply);
  EXPECT_TRUE(reading.held.empty());
  EXPECT_THAT(reading.ignored, IsEmpty());
}

TEST(CardsHeldThroughDra, NamesOfOursThatNameNoCardAreIgnoredAndNamed) {
  ReplyBuilder reply;
  reply.container("a", "p", "main").claim("a", "odd");
  for (const char* name : {"gpu-0", "xpu-", "xpu-01", "xpu-4294967296", "xpu-1-shared-shared"})
    reply.claim_device(kDriver, "node-1", name);
  reply.claim_device(kDriver, "node-1", "xpu-5", {"kunlunxin.com/xpu=all"});
  reply.claim_device(kDriver, "node-1", "\x01", {"kunlunxin.com/xpu=uuid-6"});
  HeldCardsReading reading = cards_held_through_dra(reply);
  // What names a card still counts: xpu-5 by its name, uuid-6 by its CDI name.
  EXPECT_EQ(reading.held.indices, (std::set<unsigned>{5}));
  EXPECT_EQ(reading.held.uuids, (std::set<std::string>{"uuid-6"}));
  ASSERT_EQ(reading.ignored.size(), 7u);
  EXPECT_THAT(reading.ignored[0],
              HasSubstr("claim \"a\"/\"odd\" of container \"main\" of pod \"a\"/\"p\" holds the "
                        "device \"gpu-0\" of xpu.kunlunxin.com, which is no device name"));
  EXPECT_THAT(reading.ignored[5], HasSubstr("CDI device \"kunlunxin.com/xpu=all\""));
  EXPECT_THAT(reading.ignored[6], HasSubstr("device \"\\x01\""));
}

// --- what a role offers ---

TEST(WithoutHeldCards, LeavesOutTheCardsNamedByUuidOrIndexAndKeepsTheRest) {
  const xpu::DeviceView view =
      present({card(0), card(1), card(2), card(3).virtual_function()}, "5.0.21");
  std::vector<std::string> left_out;
  HeldCards held{.uuids = {"uuid-1", "uuid-elsewhere"}, .indices = {3, 40}};
  xpu::DeviceView offered = without_held_cards(view, held, &left_out);
  ASSERT_EQ(offered.devices.size(), 2u);
  EXPECT_EQ(offered.devices[0].index, 0u);
  EXPECT_EQ(offered.devices[1].index, 2u);
  EXPECT_EQ(offered.xpud_present, view.xpud_present);
  EXPECT_EQ(offered.manager, view.manager);
  EXPECT_THAT(left_out, ElementsAre("xpu1", "xpu3"));

  left_out.clear();
  EXPECT_EQ(without_held_cards(view, {}, &left_out), view);
  EXPECT_THAT(left_out, IsEmpty());
}

// --- functions on vfio-pci, held through either way across a switch ---

TEST(CardsHeldByDevicePlugin, TheVfioResourcesIdsAreAddressesOfFunctionsNotCards) {
  ReplyBuilder reply;
  reply.container("vms", "virt-launcher-a", "compute")
      .devices("kunlunxin.com/xpu_vfio", {"0000:5e:00.0", "0000:5e:00.1", "uuid-7"});
  HeldCardsReading reading = cards_held_by_device_plugin(reply, kDomain);
  EXPECT_EQ(reading.held.vfio_functions, (std::set<std::string>{"0000:5e:00.0", "0000:5e:00.1"}));
  EXPECT_THAT(reading.held.uuids, IsEmpty());
  ASSERT_EQ(reading.ignored.size(), 1u);
  EXPECT_THAT(reading.ignored[0],
              HasSubstr("\"kunlunxin.com/xpu_vfio\" device \"uuid-7\", which is "
                        "no PCI address"));
}

TEST(CardsHeldThroughDra, AFunctionOnVfioIsHeldByItsEntryInXpudsVfioSpec) {
  ReplyBuilder reply;
  reply.container("vms", "virt-launcher-b", "compute")
      .claim("vms", "vm-xpu")
      .claim_device(kDriver, "node-1", "vfio-0000-5e-00-0",
                    {"kunlunxin.com/xpu_vfio=0000:5e:00.0", "kunlunxin.com/claim=uid-vm"})
      .claim_device(kDriver, "node-1", "vfio-0000-5e-00-1");
  HeldCardsReading reading = cards_held_through_dra(reply);
  EXPECT_EQ(reading.held.vfio_functions, (std::set<std::string>{"0000:5e:00.0"}));
  EXPECT_THAT(reading.held.indices, IsEmpty());
  ASSERT_EQ(reading.ignored.size(), 1u);
  EXPECT_THAT(reading.ignored[0], HasSubstr("holds the device \"vfio-0000-5e-00-1\" with no "
                                            "function of xpud's VFIO CDI spec"));
}

TEST(WithoutHeldCards, LeavesOutTheHeldFunctionsOnVfio) {
  xpu::DeviceView view = present({card(0)}, "5.0.21");
  view.vfio_functions = {xpu::test::on_vfio("0000:5e:00.0", "7"),
                         xpu::test::on_vfio("0000:5e:00.1", "8", true)};
  std::vector<std::string> left_out;
  HeldCards held;
  held.vfio_functions = {"0000:5e:00.1"};
  xpu::DeviceView offered = without_held_cards(view, held, &left_out);
  ASSERT_EQ(offered.vfio_functions.size(), 1u);
  EXPECT_EQ(offered.vfio_functions[0].pci_bus_id, "0000:5e:00.0");
  EXPECT_EQ(offered.devices, view.devices);
  EXPECT_THAT(left_out, ElementsAre("0000:5e:00.1"));
}

}  // namespace
}  // namespace shim
