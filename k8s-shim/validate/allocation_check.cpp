#include "k8s-shim/validate/allocation_check.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string_view>

#include "common/command_line.h"
#include "common/errno_text.h"
#include "k8s-shim/printable.h"

namespace shim::validate {
namespace {

// Splits "7,3" into indexes; a malformed list is an error naming the bad part.
std::optional<std::string> parse_indexes(std::string_view list, std::vector<unsigned>& indexes) {
  if (list.empty()) return "is empty";
  while (true) {
    const auto comma = list.find(',');
    const std::string_view part = list.substr(0, comma);
    auto index = xpu::parse_uint(part, 0, kMaxCards - 1);
    if (!index)
      return "'" + printable_excerpt(part) + "' is not a card index (0 to " +
             std::to_string(kMaxCards - 1) + ")";
    if (std::find(indexes.begin(), indexes.end(), *index) != indexes.end())
      return "names card " + std::to_string(*index) + " twice";
    // Distinct indexes below kMaxCards: the list cannot grow past kMaxCards.
    indexes.push_back(static_cast<unsigned>(*index));
    if (comma == std::string_view::npos) return std::nullopt;
    list.remove_prefix(comma + 1);
  }
}

// Nothing when the path is a character device, else why not.
std::optional<std::string> character_device_problem(const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return xpu::errno_text(errno);
  if (!S_ISCHR(status.st_mode)) return "not a character device";
  return std::nullopt;
}

}  // namespace

AllocationReport check_allocation(const AllocationSeen& seen) {
  AllocationReport report;
  report.passed = true;
  auto fail = [&](std::string line) {
    report.lines.push_back("FAILED: " + std::move(line));
    report.passed = false;
  };
  auto ok = [&](std::string line) { report.lines.push_back("ok: " + std::move(line)); };

  std::vector<unsigned> indexes;
  bool named = false;  // XPU_VISIBLE_DEVICES set and well formed
  if (!seen.visible_devices) {
    fail("XPU_VISIBLE_DEVICES is not set: the container was given no card");
  } else if (auto problem = parse_indexes(*seen.visible_devices, indexes)) {
    fail("XPU_VISIBLE_DEVICES " + *problem);
    indexes.clear();
  } else {
    ok("XPU_VISIBLE_DEVICES=" + *seen.visible_devices);
    named = true;
  }

  if (named && seen.expect_cards && indexes.size() != *seen.expect_cards)
    fail("expected " + std::to_string(*seen.expect_cards) + " card(s), XPU_VISIBLE_DEVICES names " +
         std::to_string(indexes.size()));

  for (unsigned index : indexes) {
    const auto node = seen.device_dir / ("xpu" + std::to_string(index));
    if (auto problem = character_device_problem(node))
      fail(node.string() + " (card " + std::to_string(index) + "): " + *problem);
    else
      ok(node.string() + " is a character device");
  }
  const auto control = seen.device_dir / "xpuctrl";
  if (auto problem = character_device_problem(control))
    fail(control.string() + " (the driver's control node): " + *problem);
  else
    ok(control.string() + " is a character device");
  return report;
}

}  // namespace shim::validate
