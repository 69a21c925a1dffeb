#include "k8s-shim/dra/claim_device_status.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "k8s-shim/cards/card_state.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"
#include "k8s-shim/kube/api_time.h"
#include "k8s-shim/printable.h"

namespace shim::dra {
namespace {

constexpr std::string_view kUnhealthyReason = "Unhealthy";
// A prepared card xpud no longer reports (hot-unplugged, or a VF that went away).
constexpr std::string_view kCardGoneReason = "CardGone";

// After a failed write; the API server being down or slow is the usual cause, so the pace is the
// slice publisher's.
constexpr std::chrono::seconds kFirstRetry{1};
constexpr std::chrono::seconds kMaxRetry{60};

// metav1.Condition's limits (apimachinery v0.37.2, pkg/apis/meta/v1/validation, maxReasonLen and
// maxMessageLen).
constexpr std::size_t kMaxReasonBytes = 1024;
constexpr std::size_t kMaxMessageBytes = 32 * 1024;

bool is_lower_word(std::string_view kind) {
  if (kind.empty() || kind.front() == '_' || kind.back() == '_') return false;
  return std::all_of(kind.begin(), kind.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

std::string condition_reason(bool healthy, std::string_view reason_kind) {
  if (healthy) return "Healthy";
  // A reason must start with a letter; a kind is lower case words joined by '_'.
  if (!is_lower_word(reason_kind) || !std::isalpha(static_cast<unsigned char>(reason_kind[0])) ||
      reason_kind.size() > kMaxReasonBytes)
    return std::string(kUnhealthyReason);
  std::string reason;
  bool upper = true;
  for (char c : reason_kind) {
    if (c == '_') {
      upper = true;
      continue;
    }
    reason += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return reason;
}

std::string device_status_apply_body(const PreparedClaim& claim,
                                     const std::vector<DeviceStatusEntry>& entries) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& entry : entries) {
    nlohmann::json condition = {
        {"type", kHealthyConditionType},
        {"status", entry.healthy ? "True" : "False"},
        {"reason", entry.reason},
        {"message", entry.message},
        {"lastTransitionTime", entry.last_transition_time},
    };
    nlohmann::json device = {
        {"driver", kDriverName},
        {"pool", entry.pool},
        {"device", entry.device},
        {"conditions", nlohmann::json::array({std::move(condition)})},
        {"data", {{"uuid", entry.uuid}, {"index", entry.index}}},
    };
    if (!entry.share_id.empty()) device["shareID"] = entry.share_id;
    devices.push_back(std::move(device));
  }
  nlohmann::json body = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", claim.name}, {"namespace", claim.namespace_name}, {"uid", claim.uid}}},
      {"status", {{"devices", std::move(devices)}}},
  };
  // Invalid UTF-8 in a message from xpud is replaced, not thrown on.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void DeviceStatusWriter::set(const std::vector<PreparedClaim>& claims, const xpu::DeviceView& cards,
                             bool xpud_lost, std::chrono::system_clock::time_point wall_now) {
  if (!cards.xpud_present && !xpud_lost && cards.devices.empty()) return;
  std::map<unsigned, const xpu::DeviceInfo*> by_index;
  for (const auto& card : cards.devices) by_index.emplace(card.index, &card);
  std::set<std::string, std::less<>> present;
  decltype(known_) still_known;
  for (const auto& claim : claims) {
    present.insert(claim.uid);
    std::vector<DeviceStatusEntry> desired;
    for (const auto& device : claim.devices) {
      // A function on vfio-pci is no card of xpud's: vfio-pci holds it whatever xpud says, and
      // its health is the VM's to tell. No condition rather than a wrong one.
      if (!device.vfio_pci_bus_id.empty()) continue;
      auto card = by_index.find(device.index);
      const bool found = card != by_index.end() && card->second->uuid == device.uuid;
      DeviceStatusEntry entry{.pool = device.pool,
                              .device = device.device,
                              .share_id = device.share_id,
                              .healthy = found && card->second->healthy,
                              .reason = {},
                              .message = {},
                              .last_transition_time = {},
                              .uuid = device.uuid,
                              .index = device.index};
      if (found) {
        entry.reason = condition_reason(entry.healthy, card->second->health_reason_kind);
        if (!entry.healthy)
          entry.message = truncate_utf8(card->second->health_reason, kMaxMessageBytes);
      } else if (xpud_lost) {
        // xpud gone since before this process knew the card: what every card says then.
        entry.reason = condition_reason(false, kXpudUnreachableReasonKind);
        entry.message = kXpudUnreachableReason;
      } else {
        entry.reason = kCardGoneReason;
        entry.message = "xpud no longer reports this card";
      }
      auto key = std::make_tuple(claim.uid, device.device, device.share_id);
      auto known = known_.find(key);
      Known now{.healthy = entry.healthy, .since = kube::rfc3339(wall_now)};
      if (known != known_.end() && known->second.healthy == entry.healthy) now = known->second;
      entry.last_transition_time = now.since;
      still_known.emplace(std::move(key), std::move(now));
      desired.push_back(std::move(entry));
    }
    auto [it, added] = claims_.try_emplace(claim.uid);
    Claim& tracked = it->second;
    tracked.claim = claim;
    if (added || tracked.desired != desired) {
      tracked.desired = std::move(desired);
      tracked.settled = false;
    }
  }
  known_ = std::move(still_known);
  // Unprepared claims are left as they are: the claim is being deallocated or deleted, and the
  // API server drops status.devices with the allocation.
  std::erase_if(claims_, [&](const auto& item) { return !present.contains(item.first); });
}

DeviceStatusWriter::Clock::time_point DeviceStatusWriter::reconcile(Clock::time_point now) {
  Clock::time_point next = Clock::time_point::max();
  for (auto& [uid, entry] : claims_) {
    if (entry.settled || entry.written == entry.desired) continue;
    if (now >= entry.next_attempt && !write(entry, now)) return entry.next_attempt;
    if (!entry.settled && entry.written != entry.desired) next = std::min(next, entry.next_attempt);
  }
  return next;
}

bool DeviceStatusWriter::write(Claim& entry, Clock::time_point now) {
  const PreparedClaim& claim = entry.claim;
  const std::string label = claim_label(claim.namespace_name, claim.name);
  auto result = api_.apply_resource_claim_status(claim.namespace_name, claim.name, kDriverName,
                                                 device_status_apply_body(claim, entry.desired));
  if (result) {
    ++writes_;
    entry.written = entry.desired;
    entry.backoff = {};
    std::size_t unhealthy = std::count_if(entry.desired.begin(), entry.desired.end(),
                                          [](const auto& d) { return !d.healthy; });
    spdlog::info("claim {}: status of {} cards written ({} unhealthy)", label, entry.desired.size(),
                 unhealthy);
    return true;
  }
  const kube::ApiError& error = result.error();
  if (error.not_found() || error.conflict()) {
    // Deleted, or deleted and made again under its name (the UID in the apply does not match):
    // nothing of ours to write there.
    spdlog::info("claim {}: not writing its status: {}", label, error.message);
    entry.settled = true;
    return true;
  }
  if (error.code == 0 && error.reason == "Invalid") {
    // Refused before sending (a name that cannot be one): it never will be sent.
    spdlog::warn("claim {}: {}", label, error.message);
    entry.settled = true;
    return true;
  }
  // Not allowed: a missing right is fixed by an operator, so the write is tried again (with the
  // backoff) rather than given up. 1.36+ says so as 422 from the status validation.
  const bool forbidden =
      error.code == 403 ||
      (error.code == 422 && error.message.find("resourceclaims/driver") != std::string::npos);
  if (error.code == 422 && !forbidden) {
    // Our entry does not validate (the allocation changed under us?); the same body would be
    // refused again.
    spdlog::warn("claim {}: the API server refused its status: {}", label, error.message);
    entry.settled = true;
    return true;
  }
  if (forbidden && !forbidden_logged_) {
    spdlog::error(
        "claim {}: {}; the driver needs patch on resourceclaims/status and, on Kubernetes 1.36 "
        "and later, associated-node:patch on resourceclaims/driver for {} (the chart's "
        "xpu-dra-driver ClusterRole grants both)",
        label, error.message, kDriverName);
    forbidden_logged_ = true;
  } else if (!forbidden) {
    spdlog::warn("claim {}: writing its status failed: {}; retrying", label, error.message);
  }
  entry.backoff = entry.backoff == Clock::duration{}
                      ? Clock::duration(kFirstRetry)
                      : std::min<Clock::duration>(entry.backoff * 2, kMaxRetry);
  entry.next_attempt = now + entry.backoff;
  // No answer, an overloaded or failing server: the next claim would fare the same.
  return error.code != 0 && error.code < 500 && error.code != 429;
}

std::optional<std::vector<DeviceStatusEntry>> DeviceStatusWriter::written(
    std::string_view uid) const {
  auto it = claims_.find(uid);
  if (it == claims_.end()) return std::nullopt;
  return it->second.written;
}

}  // namespace shim::dra
