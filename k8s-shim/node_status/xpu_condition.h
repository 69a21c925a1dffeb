// The node condition XPUHealthy as the cards make it: a pure function of what the process's
// CardState answers (xpud's view with the grace period applied), so that its tests need neither a
// bus nor an API server. What each status and reason means for an operator is in the README's
// Health section; the writer (node_status_writer.h) adds the times.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/xpud_types.h"

namespace shim::node_status {

inline constexpr std::string_view kConditionType = "XPUHealthy";

// v1.ConditionStatus.
namespace condition_status {
inline constexpr std::string_view kTrue = "True";
inline constexpr std::string_view kFalse = "False";
inline constexpr std::string_view kUnknown = "Unknown";
}  // namespace condition_status

// One CamelCase word each, as node conditions' reasons are (the kubelet's KubeletReady,
// KubeletHasSufficientMemory): repair tools and alerts match on them.
namespace condition_reason {
inline constexpr std::string_view kHealthy = "XPUsHealthy";     // True: every card healthy
inline constexpr std::string_view kUnhealthy = "XPUUnhealthy";  // False: cards named in message
inline constexpr std::string_view kNoCards = "NoXPUs";          // False: xpud reports none
inline constexpr std::string_view kXpudUnreachable = "XpudUnreachable";  // Unknown: past grace
}  // namespace condition_reason

// A node condition's message is not bounded by the API server, but it is printed by `kubectl
// describe node` and copied by every repair tool: this keeps it to a screen.
inline constexpr std::size_t kMaxMessageBytes = 1024;
// One card's reason text, of which a message quotes at most this much.
inline constexpr std::size_t kMaxCardReasonBytes = 160;

struct XpuCondition {
  std::string status;  // condition_status::*
  std::string reason;  // condition_reason::*
  std::string message;

  bool operator==(const XpuCondition&) const = default;
};

// The condition for the cards `cards`, `xpud_lost` when xpud has been gone past the grace period
// (`grace_period`, for the message). nullopt while nothing is known yet: xpud has not answered
// since the process started and the grace period is not over, so no card can be judged. Every
// card xpud lists counts, virtual functions and physical functions with SR-IOV on among them:
// a card that is unhealthy is a node fault whichever way it is offered. xpud's reason text is
// carried as it is (control characters become spaces, each cut to kMaxCardReasonBytes).
std::optional<XpuCondition> xpu_condition(const xpu::DeviceView& cards, bool xpud_lost,
                                          std::chrono::seconds grace_period);

}  // namespace shim::node_status
