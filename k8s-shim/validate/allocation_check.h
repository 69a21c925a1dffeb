// What the validator checks inside a pod that was given cards: the variable the device plugin and
// the DRA driver both set (XPU_VISIBLE_DEVICES), and a character device for each card it names
// plus the control node, as the vendor's driver creates them (/dev/xpu<N>, /dev/xpuctrl).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace shim::validate {

// The most cards one allocation can name: the limit of the index as the shim hands it out.
inline constexpr unsigned kMaxCards = 256;

struct AllocationSeen {
  std::optional<std::string> visible_devices;  // XPU_VISIBLE_DEVICES, absent when unset
  std::filesystem::path device_dir = "/dev";
  std::optional<unsigned> expect_cards;  // --expect-cards
};

struct AllocationReport {
  std::vector<std::string> lines;  // one per check, "ok: ..." or "FAILED: ..."
  bool passed = false;
};

// Every check runs, also after one failed, so that the report says all that is wrong at once.
// Reads only the environment value given and stat() of the device nodes: it opens no device.
AllocationReport check_allocation(const AllocationSeen& seen);

}  // namespace shim::validate
