// --reconfig-vxpu's decisions: which card to ask xpud for virtual functions, and when to stop.
#include "k8s-shim/device_plugin/vf_reconfiguration.h"

#include <gtest/gtest.h>

#include "tests/support/card_builder.h"

namespace shim {
namespace {

using xpu::test::card;
using xpu::test::present;

// Physical functions are "pf-<index>", virtual functions "vf-<index>".
xpu::DeviceInfo pf(unsigned index) {
  return card(index).uuid("pf-" + std::to_string(index));
}
xpu::DeviceInfo vf(unsigned index) {
  return card(index).uuid("vf-" + std::to_string(index)).virtual_function();
}

TEST(VfReconfiguration, AsksThePhysicalCardsInIndexOrderWhileTheCountIsWrong) {
  const auto view = present({pf(0), pf(1), vf(2)});  // 1 VF, 2 x 2 expected
  auto first = next_card_to_reconfigure(view, 2, {});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->index, 0u);
  auto second = next_card_to_reconfigure(view, 2, {"pf-0"});
  ASSERT_TRUE(second);
  EXPECT_EQ(second->index, 1u);
  EXPECT_FALSE(next_card_to_reconfigure(view, 2, {"pf-0", "pf-1"})) << "each card once";
}

TEST(VfReconfiguration, LeavesARightNodeAlone) {
  EXPECT_FALSE(next_card_to_reconfigure(present({pf(0), vf(1), vf(2)}), 2, {}));
  EXPECT_FALSE(next_card_to_reconfigure(present({pf(0), pf(1)}), 0, {})) << "N = 0: no expectation";
  xpu::DeviceView gone = present({pf(0)});
  gone.xpud_present = false;
  EXPECT_FALSE(next_card_to_reconfigure(gone, 2, {}));
}

TEST(VfReconfiguration, OneCallPerStepAndNoRepeatUntilXpudComesBack) {
  std::vector<std::pair<unsigned, unsigned>> calls;
  VfReconfiguration reconfiguration(3, [&](unsigned index, unsigned count) -> xpu::Status {
    calls.emplace_back(index, count);
    if (index == 1) return xpu::Error{"xpu1 has no SR-IOV capability"};
    return xpu::ok_status();
  });
  const auto view = present({pf(0), pf(1)});
  EXPECT_TRUE(reconfiguration.step(view)) << "xpu1 still to ask";
  EXPECT_FALSE(reconfiguration.step(view));
  EXPECT_FALSE(reconfiguration.step(view)) << "a refusal is not repeated";
  EXPECT_EQ(calls, (std::vector<std::pair<unsigned, unsigned>>{{0, 3}, {1, 3}}));

  xpu::DeviceView away = view;
  away.xpud_present = false;
  EXPECT_FALSE(reconfiguration.step(away));
  reconfiguration.step(view);
  EXPECT_EQ(calls.size(), 3u) << "a restarted xpud is asked again";
}

}  // namespace
}  // namespace shim
