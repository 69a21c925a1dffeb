#include "k8s-shim/node_status/xpu_condition.h"

#include <algorithm>
#include <string>
#include <vector>

#include "k8s-shim/printable.h"

namespace shim::node_status {
namespace {

std::string card_name(const xpu::DeviceInfo& card) {
  return card.name.empty() ? "card " + std::to_string(card.index) : card.name;
}

// xpud's text on one line: a newline in a message would split `kubectl describe`'s table.
std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte < 0x20 || byte == 0x7f ? ' ' : c;
  }
  return truncate_utf8(std::move(out), kMaxCardReasonBytes);
}

std::string plural(std::size_t count, std::string_view one) {
  return std::to_string(count) + " " + std::string(one) + (count == 1 ? "" : "s");
}

}  // namespace

std::optional<XpuCondition> xpu_condition(const xpu::DeviceView& cards, bool xpud_lost,
                                          std::chrono::seconds grace_period) {
  if (xpud_lost)
    return XpuCondition{
        .status = std::string(condition_status::kUnknown),
        .reason = std::string(condition_reason::kXpudUnreachable),
        .message = "xpud has been unreachable for longer than the grace period (" +
                   std::to_string(grace_period.count()) +
                   " s): no card is offered until it is back" +
                   (cards.devices.empty()
                        ? std::string()
                        : " (" + plural(cards.devices.size(), "card") + " known before)")};
  if (!cards.xpud_present) return std::nullopt;  // gone, within the grace period: no news yet
  if (cards.devices.empty())
    return XpuCondition{.status = std::string(condition_status::kFalse),
                        .reason = std::string(condition_reason::kNoCards),
                        .message = "xpud reports no cards on this node"};
  std::vector<const xpu::DeviceInfo*> unhealthy;
  for (const auto& card : cards.devices)
    if (!card.healthy) unhealthy.push_back(&card);
  if (unhealthy.empty())
    return XpuCondition{
        .status = std::string(condition_status::kTrue),
        .reason = std::string(condition_reason::kHealthy),
        .message = cards.devices.size() == 1
                       ? std::string("the node's card is healthy")
                       : "all " + std::to_string(cards.devices.size()) + " cards are healthy"};
  std::string message = std::to_string(unhealthy.size()) + " of " +
                        plural(cards.devices.size(), "card") + " unhealthy: ";
  for (std::size_t i = 0; i < unhealthy.size(); ++i) {
    const xpu::DeviceInfo& card = *unhealthy[i];
    std::string entry =
        (i == 0 ? "" : "; ") + card_name(card) + ": " +
        (card.health_reason.empty() ? std::string("unhealthy") : one_line(card.health_reason));
    // Room for the tail that says how many were left out.
    const std::string rest = "; and " + std::to_string(unhealthy.size() - i) + " more";
    if (message.size() + entry.size() + (i + 1 < unhealthy.size() ? rest.size() : 0) >
        kMaxMessageBytes) {
      message += rest;
      break;
    }
    message += entry;
  }
  return XpuCondition{.status = std::string(condition_status::kFalse),
                      .reason = std::string(condition_reason::kUnhealthy),
                      .message = std::move(message)};
}

}  // namespace shim::node_status
