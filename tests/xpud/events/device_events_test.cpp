// Which device events concern an XPU, how the test hook reads one, and when the sampler
// discovers: the pure decisions behind event-driven discovery.
#include <gtest/gtest.h>

#include "xpud/events/device_event.h"
#include "xpud/events/injected_device_events.h"
#include "xpud/sampling/discovery_schedule.h"

namespace xpud {
namespace {

using namespace std::chrono_literals;

TEST(ConcernsXpu, PciFunctionsOfVendor1d22InEitherCase) {
  EXPECT_TRUE(concerns_xpu({"add", "pci", "0000:3b:00.0", "1D22:3684"}));
  EXPECT_TRUE(concerns_xpu({"remove", "pci", "0000:3b:00.0", "1d22:3685"}));
  EXPECT_FALSE(concerns_xpu({"add", "pci", "0000:00:1f.0", "8086:1572"}));
  EXPECT_FALSE(concerns_xpu({"add", "pci", "0000:3b:00.0", ""}));
  EXPECT_FALSE(concerns_xpu({"add", "pci", "0000:3b:00.0", "1D22"}));
  EXPECT_FALSE(concerns_xpu({"add", "pci", "0000:3b:00.0", "1D223684x"}));
  // A PCI function named like a node is still judged by its id.
  EXPECT_FALSE(concerns_xpu({"add", "pci", "xpu0", "8086:1572"}));
}

TEST(ConcernsXpu, DeviceNodesByNameWhateverTheirClass) {
  EXPECT_TRUE(concerns_xpu({"add", "xpu", "xpu0", ""}));
  EXPECT_TRUE(concerns_xpu({"remove", "kunlun", "xpu17", ""}));
  EXPECT_TRUE(concerns_xpu({"add", "misc", "xpuctrl", ""}));
  EXPECT_FALSE(concerns_xpu({"add", "xpu", "xpu", ""}));
  EXPECT_FALSE(concerns_xpu({"add", "xpu", "xpu01", ""}));
  EXPECT_FALSE(concerns_xpu({"add", "net", "xpu0abc", ""}));
  EXPECT_FALSE(concerns_xpu({"add", "block", "sda", ""}));
}

TEST(ParseUeventProperties, KernelStyleNulOrNewlineSeparated) {
  auto event = parse_uevent_properties(
      std::string_view("ACTION=add\0DEVPATH=/devices/pci0000:b0/"
                       "0000:b1:00.0\0SUBSYSTEM=pci\0PCI_ID=1D22:3684\0SEQNUM=42\0",
                       93));
  ASSERT_TRUE(event) << event.error();
  EXPECT_EQ(event->action, "add");
  EXPECT_EQ(event->subsystem, "pci");
  EXPECT_EQ(event->sysname, "0000:b1:00.0");
  EXPECT_EQ(event->pci_id, "1D22:3684");
  event = parse_uevent_properties("ACTION=remove\nDEVPATH=/devices/x/xpu/xpu3\nSUBSYSTEM=xpu\n");
  ASSERT_TRUE(event) << event.error();
  EXPECT_EQ(event->sysname, "xpu3");
  EXPECT_EQ(event->pci_id, "");
}

TEST(ParseUeventProperties, RejectsWhatIsNotAUevent) {
  auto error = [](std::string_view text) {
    auto event = parse_uevent_properties(text);
    return event ? std::string("accepted") : event.error();
  };
  EXPECT_EQ(error(""), "no ACTION");
  EXPECT_EQ(error("ACTION=add\nDEVPATH=/devices/x\n"), "no SUBSYSTEM");
  EXPECT_EQ(error("ACTION=add\nSUBSYSTEM=pci\n"), "no DEVPATH (or one ending in '/')");
  EXPECT_EQ(error("ACTION=add\nSUBSYSTEM=pci\nDEVPATH=/devices/\n"),
            "no DEVPATH (or one ending in '/')");
  EXPECT_EQ(error("garbage"), "'garbage' is not KEY=VALUE");
  EXPECT_EQ(error("=add"), "'=add' is not KEY=VALUE");
  EXPECT_EQ(error("ACTION=a\x01\n"),
            "the value of ACTION is not printable text of at most 1024 bytes");
  EXPECT_EQ(error("ACTION=" + std::string(1025, 'a')),
            "the value of ACTION is not printable text of at most 1024 bytes");
}

TEST(DiscoverySchedule, StartEventsGoneCardsFailuresAndTheRescan) {
  DiscoverySchedule schedule;
  using Clock = DiscoverySchedule::Clock;
  const auto t0 = Clock::now();
  const auto rescan = 60000ms;
  EXPECT_EQ(schedule.take_due(t0, rescan), "start");
  schedule.discovered(t0, true);
  EXPECT_EQ(schedule.take_due(t0 + 1s, rescan), std::nullopt);

  schedule.request();
  EXPECT_EQ(schedule.take_due(t0 + 2s, rescan), "device event");
  schedule.discovered(t0 + 2s, true);
  EXPECT_EQ(schedule.take_due(t0 + 3s, rescan), std::nullopt) << "a request is consumed";

  schedule.note_read("card-a", true);
  EXPECT_EQ(schedule.take_due(t0 + 4s, rescan), "a card is gone");
  schedule.discovered(t0 + 4s, true);
  schedule.note_read("card-a", true);
  EXPECT_EQ(schedule.take_due(t0 + 5s, rescan), std::nullopt)
      << "a card that stays gone triggers once";
  schedule.note_read("card-a", false);
  schedule.note_read("card-a", true);
  EXPECT_EQ(schedule.take_due(t0 + 6s, rescan), "a card is gone") << "found again, then gone again";
  schedule.discovered(t0 + 6s, false);
  EXPECT_EQ(schedule.take_due(t0 + 7s, rescan), "retrying the failed discovery");
  schedule.discovered(t0 + 7s, true);

  EXPECT_EQ(schedule.take_due(t0 + 7s + rescan - 1ms, rescan), std::nullopt);
  EXPECT_EQ(schedule.take_due(t0 + 7s + rescan, rescan), "safety rescan");
}

}  // namespace
}  // namespace xpud
