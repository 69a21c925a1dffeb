#include "k8s-shim/dra/kubelet/claim_preparation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s-shim/pod_resources/held_cards.h"
#include "tests/support/card_builder.h"

namespace shim::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kUid = "3f1c2a9e-1111-4222-8333-444455556666";
constexpr const char* kNode = "node-a";
constexpr const char* kDriver = "xpu.kunlunxin.com";

using xpu::test::card;

std::vector<xpu::DeviceInfo> cards() {
  return {card(0).uuid("KL-UUID-0"), card(1).uuid("KL-UUID-1"), card(2).uuid("KL-UUID-2"),
          card(3).uuid("123")};
}

ClaimReference reference() {
  return {"team", kUid, "gpu-claim"};
}

AllocatedClaim allocated(std::vector<AllocatedDevice> results) {
  return AllocatedClaim{"gpu-claim", "team", kUid, true, std::move(results)};
}

TEST(dra_ClaimPreparation, OneRequestTwoCardsGetsTheirOwnNamesAndTheClaimEntryLast) {
  auto prepared = prepare_claim(
      reference(),
      allocated({{"train", kDriver, kNode, "xpu-1"}, {"train", kDriver, kNode, "xpu-0"}}), kNode,
      cards());
  ASSERT_TRUE(prepared) << prepared.error();
  EXPECT_EQ(prepared->uid, kUid);
  EXPECT_EQ(prepared->namespace_name, "team");
  EXPECT_EQ(prepared->name, "gpu-claim");
  ASSERT_EQ(prepared->devices.size(), 2u);
  const PreparedDevice& first = prepared->devices[0];
  EXPECT_THAT(first.requests, ElementsAre("train"));
  EXPECT_EQ(first.pool, kNode);
  EXPECT_EQ(first.device, "xpu-1");
  EXPECT_EQ(first.index, 1u);
  EXPECT_EQ(first.uuid, "KL-UUID-1");
  EXPECT_THAT(first.cdi_ids, ElementsAre("kunlunxin.com/xpu=KL-UUID-1"));
  EXPECT_THAT(prepared->devices[1].cdi_ids,
              ElementsAre("kunlunxin.com/xpu=KL-UUID-0",
                          std::string("kunlunxin.com/claim=") + kUid + "-train"));
}

TEST(dra_ClaimPreparation, ACardWhoseUuidCannotBeACdiNameIsNamedByIndex) {
  auto prepared =
      prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-3"}}), kNode, cards());
  ASSERT_TRUE(prepared) << prepared.error();
  EXPECT_THAT(
      prepared->devices[0].cdi_ids,
      ElementsAre("kunlunxin.com/xpu=3", std::string("kunlunxin.com/claim=") + kUid + "-r"));
}

TEST(dra_ClaimPreparation, ResultsOfOtherDriversAreIgnored) {
  auto prepared = prepare_claim(
      reference(),
      allocated({{"gpu", "gpu.example.com", "elsewhere", "gpu-0"}, {"x", kDriver, kNode, "xpu-2"}}),
      kNode, cards());
  ASSERT_TRUE(prepared) << prepared.error();
  ASSERT_EQ(prepared->devices.size(), 1u);
  EXPECT_EQ(prepared->devices[0].device, "xpu-2");
}

TEST(dra_ClaimPreparation, OneCardInSeveralRequestsIsOneDeviceWithEveryRequest) {
  auto prepared = prepare_claim(reference(),
                                allocated({{"a", kDriver, kNode, "xpu-0"},
                                           {"b", kDriver, kNode, "xpu-0"},
                                           {"b", kDriver, kNode, "xpu-1"}}),
                                kNode, cards());
  ASSERT_TRUE(prepared) << prepared.error();
  ASSERT_EQ(prepared->devices.size(), 2u);
  EXPECT_THAT(prepared->devices[0].requests, ElementsAre("a", "b"));
  EXPECT_THAT(prepared->devices[1].requests, ElementsAre("b"));
  // a's last (only) card is xpu-0; b's last card is xpu-1.
  EXPECT_THAT(prepared->devices[0].cdi_ids,
              ElementsAre("kunlunxin.com/xpu=KL-UUID-0",
                          std::string("kunlunxin.com/claim=") + kUid + "-a"));
  EXPECT_THAT(prepared->devices[1].cdi_ids,
              ElementsAre("kunlunxin.com/xpu=KL-UUID-1",
                          std::string("kunlunxin.com/claim=") + kUid + "-b"));
}

TEST(dra_ClaimPreparation, ASubrequestGetsAValidCdiName) {
  auto prepared = prepare_claim(reference(), allocated({{"main/big", kDriver, kNode, "xpu-0"}}),
                                kNode, cards());
  ASSERT_TRUE(prepared) << prepared.error();
  EXPECT_THAT(prepared->devices[0].requests, ElementsAre("main/big"));
  EXPECT_EQ(prepared->devices[0].cdi_ids.back(),
            std::string("kunlunxin.com/claim=") + kUid + "-main.big");
}

TEST(dra_ClaimPreparation, ARecreatedClaimIsRefused) {
  AllocatedClaim claim = allocated({{"r", kDriver, kNode, "xpu-0"}});
  claim.uid = "99999999-1111-4222-8333-444455556666";
  auto prepared = prepare_claim(reference(), claim, kNode, cards());
  ASSERT_FALSE(prepared);
  EXPECT_THAT(prepared.error(), HasSubstr("team/gpu-claim"));
  EXPECT_THAT(prepared.error(), HasSubstr("recreated"));
}

TEST(dra_ClaimPreparation, AnUnallocatedClaimIsRefused) {
  AllocatedClaim claim = allocated({});
  claim.allocated = false;
  auto prepared = prepare_claim(reference(), claim, kNode, cards());
  ASSERT_FALSE(prepared);
  EXPECT_THAT(prepared.error(), HasSubstr("team/gpu-claim"));
  EXPECT_THAT(prepared.error(), HasSubstr("not allocated"));
}

TEST(dra_ClaimPreparation, AnotherNodesPoolIsRefused) {
  auto prepared =
      prepare_claim(reference(), allocated({{"r", kDriver, "node-b", "xpu-0"}}), kNode, cards());
  ASSERT_FALSE(prepared);
  EXPECT_THAT(prepared.error(), HasSubstr("team/gpu-claim"));
  EXPECT_THAT(prepared.error(), HasSubstr("pool node-b"));
}

TEST(dra_ClaimPreparation, ADeviceNameOfAnotherShapeIsRefused) {
  for (const char* device : {"gpu-0", "xpu-01", "xpu-", "xpu0"}) {
    auto prepared =
        prepare_claim(reference(), allocated({{"r", kDriver, kNode, device}}), kNode, cards());
    ASSERT_FALSE(prepared) << device;
    EXPECT_THAT(prepared.error(), HasSubstr("not a device name")) << device;
  }
}

TEST(dra_ClaimPreparation, AMissingCardIsRefused) {
  auto missing =
      prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-7"}}), kNode, cards());
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error(), HasSubstr("xpu-7 of request r is not a card on this node"));
}

// Its slice may predate the VFs being turned on: the kubelet's prepare still finds it refused.
TEST(dra_ClaimPreparation, APhysicalFunctionWithSriovOnIsRefused) {
  std::vector<xpu::DeviceInfo> with_sriov = cards();
  with_sriov[2].sriov_enabled = true;
  auto prepared =
      prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-2"}}), kNode, with_sriov);
  ASSERT_FALSE(prepared);
  EXPECT_THAT(prepared.error(), HasSubstr("team/gpu-claim"));
  EXPECT_THAT(prepared.error(),
              HasSubstr("xpu-2 of request r is a physical function with SR-IOV on"));
  EXPECT_TRUE(
      prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-1"}}), kNode, with_sriov));
}

TEST(dra_ClaimPreparation, AnUnhealthyCardIsRefusedWithItsReason) {
  std::vector<xpu::DeviceInfo> sick = cards();
  sick[1].healthy = false;
  sick[1].health_reason = "ECC errors";
  auto prepared = prepare_claim(
      reference(), allocated({{"r", kDriver, kNode, "xpu-0"}, {"r", kDriver, kNode, "xpu-1"}}),
      kNode, sick);
  ASSERT_FALSE(prepared);
  EXPECT_THAT(prepared.error(), HasSubstr("team/gpu-claim"));
  EXPECT_THAT(prepared.error(), HasSubstr("xpu-1 of request r is unhealthy: ECC errors"));
}

// A slice the scheduler read before the driver left a card out (one the kubelet had not yet
// removed after the driver last went): the card a pod holds through the device plugin is not
// prepared for the claim, with the reason, until that pod is gone.
TEST(dra_ClaimPreparation, ACardHeldThroughTheDevicePluginIsRefusedUntilReleased) {
  const HeldCards held{.uuids = {"KL-UUID-1"}, .indices = {}};
  auto refused = prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-1"}}), kNode,
                               with_held_cards_unhealthy(cards(), held, "held by pod ml/train"));
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error(), HasSubstr("xpu-1 of request r is unhealthy: held by pod ml/train"));
  // The other cards, and the card once released, are prepared.
  EXPECT_TRUE(prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-2"}}), kNode,
                            with_held_cards_unhealthy(cards(), held, "held")));
  EXPECT_TRUE(prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-1"}}), kNode,
                            with_held_cards_unhealthy(cards(), {}, "held")));
}

TEST(dra_ClaimPreparation, AnAdminAccessClaimGetsAnUnhealthyCardToLookAt) {
  std::vector<xpu::DeviceInfo> sick = cards();
  sick[1].healthy = false;
  sick[1].health_reason = "ECC errors";
  AllocatedDevice watch{"watch", kDriver, kNode, "xpu-1", true};
  auto prepared = prepare_claim(reference(), allocated({watch}), kNode, sick);
  ASSERT_TRUE(prepared) << prepared.error();
  EXPECT_EQ(prepared->devices.at(0).index, 1u);
  EXPECT_THAT(prepared->devices.at(0).cdi_ids,
              ElementsAre("kunlunxin.com/xpu=KL-UUID-1",
                          std::string("kunlunxin.com/claim=") + kUid + "-watch"));
  // Only the admin result: an ordinary one on the same claim is still refused.
  auto mixed =
      prepare_claim(reference(), allocated({watch, {"r", kDriver, kNode, "xpu-1"}}), kNode, sick);
  ASSERT_FALSE(mixed);
  EXPECT_THAT(mixed.error(), HasSubstr("of request r is unhealthy"));
}

TEST(dra_ClaimPreparation, AUidThatCannotBeAFileOrCdiNameIsRefused) {
  ClaimReference bad = reference();
  bad.uid = "../../etc";
  AllocatedClaim claim = allocated({{"r", kDriver, kNode, "xpu-0"}});
  claim.uid = bad.uid;
  auto prepared = prepare_claim(bad, claim, kNode, cards());
  ASSERT_FALSE(prepared);
  EXPECT_THAT(prepared.error(), HasSubstr("not a valid claim UID"));
}

TEST(dra_ClaimPreparation, NoResultOfOursGivesNoDevices) {
  auto prepared = prepare_claim(reference(), allocated({}), kNode, cards());
  ASSERT_TRUE(prepared) << prepared.error();
  EXPECT_TRUE(prepared->devices.empty());
}

constexpr const char* kShare = "0b5c2a4e-7d1f-4c55-9a1e-2f3b4c5d6e7f";
constexpr std::int64_t kGiBytes = std::int64_t{1} << 30;

AllocatedDevice share(std::string request, std::string device, std::string share_id,
                      std::optional<std::int64_t> memory) {
  return {std::move(request),  kDriver, kNode, std::move(device), false,
          std::move(share_id), memory};
}

TEST(dra_ClaimPreparation, AShareIsTheCardWithItsShareIdAndGrant) {
  auto prepared =
      prepare_claim(reference(), allocated({share("infer", "xpu-1-shared", kShare, 8 * kGiBytes)}),
                    kNode, cards());
  ASSERT_TRUE(prepared) << prepared.error();
  ASSERT_EQ(prepared->devices.size(), 1u);
  const PreparedDevice& device = prepared->devices[0];
  EXPECT_EQ(device.device, "xpu-1-shared");
  EXPECT_EQ(device.index, 1u);
  EXPECT_EQ(device.share_id, kShare);
  EXPECT_EQ(device.memory_limit, 8 * kGiBytes);
  EXPECT_THAT(device.cdi_ids, ElementsAre("kunlunxin.com/xpu=KL-UUID-1",
                                          std::string("kunlunxin.com/claim=") + kUid + "-infer"));
}

TEST(dra_ClaimPreparation, TwoSharesOfOneCardAreTwoDevices) {
  auto prepared = prepare_claim(
      reference(),
      allocated({share("a", "xpu-0-shared", kShare, 2 * kGiBytes),
                 share("b", "xpu-0-shared", "1b5c2a4e-7d1f-4c55-9a1e-2f3b4c5d6e7f", 4 * kGiBytes)}),
      kNode, cards());
  ASSERT_TRUE(prepared) << prepared.error();
  ASSERT_EQ(prepared->devices.size(), 2u);
  EXPECT_EQ(prepared->devices[0].memory_limit, 2 * kGiBytes);
  EXPECT_EQ(prepared->devices[1].memory_limit, 4 * kGiBytes);
}

TEST(dra_ClaimPreparation, AShareWithoutShareIdOrMemoryIsRefused) {
  auto no_id = prepare_claim(reference(), allocated({share("r", "xpu-0-shared", "", kGiBytes)}),
                             kNode, cards());
  ASSERT_FALSE(no_id);
  EXPECT_THAT(no_id.error(), HasSubstr("device xpu-0-shared of request r is a share without a "
                                       "valid shareID"));
  auto no_memory = prepare_claim(
      reference(), allocated({share("r", "xpu-0-shared", kShare, std::nullopt)}), kNode, cards());
  ASSERT_FALSE(no_memory);
  EXPECT_THAT(no_memory.error(), HasSubstr("without consumedCapacity.memory"));
  auto bad_name =
      prepare_claim(reference(), allocated({share("r", "xpu-0-shared-shared", kShare, kGiBytes)}),
                    kNode, cards());
  EXPECT_FALSE(bad_name);
}

TEST(dra_ClaimPreparation, ARequestWithSharesAndWholeCardsIsRefused) {
  auto mixed = prepare_claim(
      reference(),
      allocated({share("r", "xpu-0-shared", kShare, kGiBytes), {"r", kDriver, kNode, "xpu-1"}}),
      kNode, cards());
  ASSERT_FALSE(mixed);
  EXPECT_THAT(mixed.error(), HasSubstr("request r has both shares and whole cards"));
}

TEST(dra_ClaimPreparation, AVirtualFunctionIsPreparedAndItsPhysicalFunctionIsNot) {
  std::vector<xpu::DeviceInfo> with_vf = cards();
  with_vf[2].sriov_enabled = true;
  xpu::DeviceInfo vf = card(8).uuid("VF-8").virtual_function();
  vf.physical_function = with_vf[2].pci_bus_id;
  with_vf.push_back(vf);
  auto prepared =
      prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-8"}}), kNode, with_vf);
  ASSERT_TRUE(prepared) << prepared.error();
  EXPECT_EQ(prepared->devices.at(0).index, 8u);
  EXPECT_THAT(prepared->devices.at(0).cdi_ids.front(), HasSubstr("kunlunxin.com/xpu=VF-8"));
  // Its PF stays refused, and a VF has no shareable device.
  EXPECT_FALSE(
      prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-2"}}), kNode, with_vf));
  auto vf_share = prepare_claim(
      reference(), allocated({share("r", "xpu-8-shared", kShare, kGiBytes)}), kNode, with_vf);
  ASSERT_FALSE(vf_share);
  EXPECT_THAT(vf_share.error(), HasSubstr("a share of a virtual function"));
}

std::vector<xpu::VfioFunctionInfo> vfio_functions() {
  return {xpu::test::on_vfio("0000:5e:00.0", "12"), xpu::test::on_vfio("0000:5e:00.1", "13", true)};
}

TEST(dra_ClaimPreparation, FunctionsOnVfioGetTheirNamesInXpudsVfioSpecAndTheClaimEntryLast) {
  auto prepared = prepare_claim(reference(),
                                allocated({{"vm", kDriver, kNode, "vfio-0000-5e-00-1"},
                                           {"vm", kDriver, kNode, "vfio-0000-5e-00-0"}}),
                                kNode, cards(), vfio_functions());
  ASSERT_TRUE(prepared) << prepared.error();
  ASSERT_EQ(prepared->devices.size(), 2u);
  const PreparedDevice& first = prepared->devices[0];
  EXPECT_EQ(first.device, "vfio-0000-5e-00-1");
  EXPECT_EQ(first.vfio_pci_bus_id, "0000:5e:00.1");
  EXPECT_EQ(first.uuid, "");
  EXPECT_THAT(first.cdi_ids, ElementsAre("kunlunxin.com/xpu_vfio=0000:5e:00.1"));
  EXPECT_EQ(prepared->devices[1].vfio_pci_bus_id, "0000:5e:00.0");
  EXPECT_THAT(prepared->devices[1].cdi_ids,
              ElementsAre("kunlunxin.com/xpu_vfio=0000:5e:00.0",
                          std::string("kunlunxin.com/claim=") + kUid + "-vm"));
}

TEST(dra_ClaimPreparation, AFunctionNoLongerOnVfioIsRefused) {
  auto prepared =
      prepare_claim(reference(), allocated({{"vm", kDriver, kNode, "vfio-0000-5e-00-7"}}), kNode,
                    cards(), vfio_functions());
  ASSERT_FALSE(prepared);
  EXPECT_EQ(prepared.error(),
            "claim team/gpu-claim: device vfio-0000-5e-00-7 of request vm is not a function on "
            "vfio-pci on this node");
}

TEST(dra_ClaimPreparation, ACardOnVfioIsNoCardAndARequestCannotMixTheTwo) {
  std::vector<xpu::DeviceInfo> listed = cards();
  listed[1].pci_bus_id = "0000:5e:00.0";  // xpud has not rediscovered since the bind
  auto as_card = prepare_claim(reference(), allocated({{"r", kDriver, kNode, "xpu-1"}}), kNode,
                               listed, vfio_functions());
  ASSERT_FALSE(as_card);
  EXPECT_THAT(as_card.error(), HasSubstr("device xpu-1 of request r is on vfio-pci"));

  auto mixed = prepare_claim(
      reference(),
      allocated({{"r", kDriver, kNode, "xpu-0"}, {"r", kDriver, kNode, "vfio-0000-5e-00-0"}}),
      kNode, cards(), vfio_functions());
  ASSERT_FALSE(mixed);
  EXPECT_THAT(mixed.error(), HasSubstr("request r has both functions on vfio-pci and cards"));
}

}  // namespace
}  // namespace shim::dra
