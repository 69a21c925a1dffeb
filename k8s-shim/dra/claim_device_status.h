// The driver's entries in a ResourceClaim's status.devices (KEP-4817, GA in 1.37, beta and on by
// default since 1.33): one per card of ours the claim holds, each with a condition of type
// "Healthy" that follows xpud's health of the card, so that users and controllers read it from
// the claim (kubectl get resourceclaim -o yaml) and not only from the pod's status.
//
// Written by server-side apply to the claim's status subresource with field manager
// "xpu.kunlunxin.com": status.devices is a map list keyed by driver, pool, device (and shareID),
// so apply owns our entries and leaves other drivers' alone. The apply carries the claim's UID,
// so a claim deleted and made again under the same name is never written by mistake: the server
// answers 422 (metadata.uid is immutable, apimachinery ValidateObjectMetaUpdate), or 404 when no
// claim of the name is left (the status subresource's update never creates one).
//
// The API server checks (k8s.io/kubernetes v1.37.2, pkg/apis/resource/validation,
// validateDeviceStatus): each entry must name a device allocated to the claim, at most 8
// conditions, each a valid metav1.Condition (type, status True/False/Unknown, reason matching
// ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$ and at most 1024 bytes, a message of at most 32768,
// lastTransitionTime); data a JSON object of at most 10 KiB. Since 1.36 it also asks the
// authorizer for associated-node:patch on resourceclaims/driver, inside that validation
// (pkg/registry/resource/utils.go, AuthorizedForDeviceStatus): a driver without the right gets
// 422 naming resourceclaims/driver, not 403.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/xpud_types.h"
#include "k8s-shim/dra/kube/kube_api.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"

namespace shim::dra {

inline constexpr std::string_view kHealthyConditionType = "Healthy";

// One card's entry, as written.
struct DeviceStatusEntry {
  std::string pool, device;
  std::string share_id{};  // a share's shareID, which the API requires with its device
  bool healthy = false;
  std::string reason;   // the condition's reason: "Healthy", or the reason kind in CamelCase
  std::string message;  // xpud's reason text; empty while healthy
  std::string last_transition_time;  // RFC 3339, UTC, seconds
  // data: what identifies the card on the node.
  std::string uuid;
  unsigned index = 0;

  bool operator==(const DeviceStatusEntry&) const = default;
};

// "Healthy" for a healthy card; else xpud's reason kind in CamelCase ("driver_fault" ->
// "DriverFault"), or "Unhealthy" for a kind that cannot be one (empty, other characters, longer
// than a reason may be).
std::string condition_reason(bool healthy, std::string_view reason_kind);

// The apply body for the claim's status: apiVersion, kind, metadata (name, namespace, uid) and
// status.devices with the given entries.
std::string device_status_apply_body(const PreparedClaim& claim,
                                     const std::vector<DeviceStatusEntry>& entries);

// Keeps the status of every prepared claim's cards written. Owned by one thread (the role's
// loop): set() after the claims or the cards changed, reconcile() when due.
class DeviceStatusWriter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DeviceStatusWriter(KubeApi& api) : api_(api) {}

  // The claims prepared now and the cards as the process's CardState gives them (`xpud_lost`:
  // past the grace period); a card's transition time is `wall_now` when its health differs from
  // what this writer last knew of it. Until xpud has answered once nothing is known of any card,
  // so nothing changes (a restarted driver would otherwise call every held card gone).
  void set(const std::vector<PreparedClaim>& claims, const xpu::DeviceView& cards, bool xpud_lost,
           std::chrono::system_clock::time_point wall_now);
  // Writes what is due; returns when it wants to be called again (Clock::time_point::max() when
  // everything is written). A pass stops at the first write that got no answer or a server error:
  // the API server is then down or overloaded for every claim, and each write may take the
  // transport's whole timeout.
  Clock::time_point reconcile(Clock::time_point now);

  std::uint64_t writes() const { return writes_; }
  // The entries last written for a claim UID (for the tests).
  std::optional<std::vector<DeviceStatusEntry>> written(std::string_view uid) const;

 private:
  struct Claim {
    PreparedClaim claim;
    std::vector<DeviceStatusEntry> desired;
    std::optional<std::vector<DeviceStatusEntry>> written;
    // Not written again until `desired` changes (the claim is gone, or the server refused it).
    bool settled = false;
    Clock::time_point next_attempt{};
    Clock::duration backoff{};
  };
  struct Known {
    bool healthy = false;
    std::string since;
  };

  // False when the API server did not answer or failed (the pass should stop).
  bool write(Claim& entry, Clock::time_point now);

  KubeApi& api_;
  std::map<std::string, Claim, std::less<>> claims_;  // by UID
  std::map<std::tuple<std::string, std::string, std::string>, Known>
      known_;  // (claim UID, device, shareID)
  std::uint64_t writes_ = 0;
  bool forbidden_logged_ = false;
};

}  // namespace shim::dra
