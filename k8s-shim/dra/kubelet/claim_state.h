// The claims this node has prepared, and the one way to change them: prepare a claim (look it up,
// pick its cards, write its device metadata files and its CDI spec, then the checkpoint) or
// unprepare it (remove the spec and the metadata files, then the record). The gRPC edge
// (dra_service.h) translates the kubelet's requests into these calls; the role's loop reads
// prepared_claims() for the claims' device status.
//
// Threads: any thread may call in (gRPC's do). One mutex serialises every prepare and unprepare,
// so the checkpoint and the spec files change one claim at a time. The claim lookup runs under
// that mutex too: it must be time-boxed by whoever provides it (the API half's HTTP timeout).
// prepared_claims() and prepared_count() read a copy kept under a second lock, so they never wait
// for a prepare in progress.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/xpud_types.h"
#include "k8s-shim/dra/kubelet/allocated_claim.h"
#include "k8s-shim/dra/kubelet/claim_cdi_spec.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"
#include "k8s-shim/dra/kubelet/device_metadata.h"
#include "k8s-shim/dra/kubelet/prepared_claims.h"

namespace shim::dra {

// The claim as the API server holds it, by namespace and name.
using ClaimLookup = std::function<xpu::Result<AllocatedClaim>(std::string_view namespace_name,
                                                              std::string_view name)>;
// The cards on this node now (from xpud).
using CardSource = std::function<std::vector<xpu::DeviceInfo>()>;
// The Kunlunxin functions on vfio-pci now (xpud's Vfio.Devices), for claims of the VFIO class.
using VfioSource = std::function<std::vector<xpu::VfioFunctionInfo>()>;
// The command OCI hooks run to make a share's cXPU instance through xpud (Manager.InstanceHook;
// empty: the shares' CDI specs carry no hooks), and whether it takes the share and its claim
// (Manager.ShareInstancesSupported).
struct InstanceHook {
  std::vector<std::string> command;
  bool names_share = false;
};
using HookSource = std::function<InstanceHook()>;
// Device metadata (KEP-5304): where the files go, and what they say about each device of a claim
// being prepared (called once per device, at prepare; the answer is kept in the checkpoint).
struct DeviceMetadataConfig {
  DeviceMetadataFiles files;
  std::function<DeviceAttributes(const PreparedDevice&)> attributes;
};

class ClaimState {
 public:
  // `claims_changed`, if set, is called (on the caller's thread) after a claim was recorded or
  // forgotten: the role's loop then reads prepared_claims() again. `instance_hook` is asked only
  // when a claim holds a memory share. Without `metadata`, no device metadata is written.
  // Without `vfio_functions`, no function on vfio-pci is prepared.
  ClaimState(ClaimLookup lookup, CardSource cards, std::string node_name, PreparedClaims claims,
             ClaimCdiSpecs specs, std::function<void()> claims_changed = {},
             HookSource instance_hook = {}, std::optional<DeviceMetadataConfig> metadata = {},
             VfioSource vfio_functions = {});
  ClaimState(const ClaimState&) = delete;
  ClaimState& operator=(const ClaimState&) = delete;

  // The claim's devices, recorded with its metadata files and CDI spec written. A recorded claim
  // (perhaps from before a restart) is answered from the checkpoint without a lookup, its files
  // and spec written again. Errors name the claim.
  xpu::Result<PreparedClaim> prepare(const ClaimReference& claim);
  // Removes the claim's spec and record and returns the claim as it was prepared, or nothing when
  // it was not prepared here (success: failing would block the pod's deletion).
  xpu::Result<std::optional<PreparedClaim>> unprepare(const ClaimReference& claim);

  // How many claims are prepared now (for the role's status line and the tests).
  std::size_t prepared_count() const;
  // The claims prepared now, as a copy.
  std::vector<PreparedClaim> prepared_claims() const;
  // The node, which names our pool.
  const std::string& node_name() const { return node_name_; }

 private:
  // With mutex_ held: copies claims_ to what prepared_claims() hands out.
  void publish_claims();
  // With mutex_ held: the claim's metadata files and then its spec (without their mounts when
  // the files cannot be written: logged, not an error).
  xpu::Status write_files(const PreparedClaim& claim) const;
  // With mutex_ held: removes the metadata files of the claim `uid` named, unless a claim of
  // another UID under the same name (recreated in between) holds them now.
  xpu::Status remove_metadata(const ClaimReference& claim) const;

  const ClaimLookup lookup_;
  const CardSource cards_;
  const std::string node_name_;
  mutable std::mutex mutex_;
  PreparedClaims claims_;                 // guarded by mutex_
  mutable std::mutex published_mutex_;    // taken inside mutex_, never the other way round
  std::vector<PreparedClaim> published_;  // guarded by published_mutex_
  const ClaimCdiSpecs specs_;
  const std::function<void()> claims_changed_;
  const HookSource instance_hook_;
  const std::optional<DeviceMetadataConfig> metadata_;
  const VfioSource vfio_functions_;
};

}  // namespace shim::dra
