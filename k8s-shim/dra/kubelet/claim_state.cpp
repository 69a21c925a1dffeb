#include "k8s-shim/dra/kubelet/claim_state.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "k8s-shim/dra/kubelet/claim_cdi_names.h"

namespace shim::dra {

ClaimState::ClaimState(ClaimLookup lookup, CardSource cards, std::string node_name,
                       PreparedClaims claims, ClaimCdiSpecs specs,
                       std::function<void()> claims_changed, HookSource instance_hook,
                       std::optional<DeviceMetadataConfig> metadata, VfioSource vfio_functions)
    : lookup_(std::move(lookup)),
      cards_(std::move(cards)),
      node_name_(std::move(node_name)),
      claims_(std::move(claims)),
      specs_(std::move(specs)),
      claims_changed_(std::move(claims_changed)),
      instance_hook_(std::move(instance_hook)),
      metadata_(std::move(metadata)),
      vfio_functions_(std::move(vfio_functions)) {
  std::lock_guard lock(mutex_);
  publish_claims();
}

void ClaimState::publish_claims() {
  std::vector<PreparedClaim> claims;
  for (const auto& [uid, claim] : claims_.claims()) claims.push_back(claim);
  std::lock_guard lock(published_mutex_);
  published_ = std::move(claims);
}

std::size_t ClaimState::prepared_count() const {
  std::lock_guard lock(published_mutex_);
  return published_.size();
}

std::vector<PreparedClaim> ClaimState::prepared_claims() const {
  std::lock_guard lock(published_mutex_);
  return published_;
}

xpu::Status ClaimState::write_files(const PreparedClaim& claim) const {
  // The files before the spec that mounts them: a runtime never finds a mount without its file.
  // A claim whose files cannot be written (a name that would reshape a path, or too long for
  // one) is prepared without them, as the library's helper does (kubeletplugin/draplugin.go:
  // "Failed to write device metadata", and on): the pod runs, only the file is missing.
  const DeviceMetadataFiles* mounted = nullptr;
  if (metadata_) {
    if (auto written = metadata_->files.write(claim); written) {
      mounted = &metadata_->files;
    } else {
      spdlog::warn("claim {}: its containers get no device metadata: {}",
                   claim_label(claim.namespace_name, claim.name), written.error());
      if (auto removed = remove_metadata({claim.namespace_name, claim.uid, claim.name}); !removed)
        spdlog::warn("claim {}: {}", claim_label(claim.namespace_name, claim.name),
                     removed.error());
    }
  }
  return specs_.write(claim, mounted);
}

xpu::Status ClaimState::remove_metadata(const ClaimReference& claim) const {
  if (!metadata_) return xpu::ok_status();
  // The files are named by namespace and name, as the library names them; a claim deleted and
  // made again under its name may have been prepared before the old one was unprepared.
  for (const auto& [uid, other] : claims_.claims())
    if (uid != claim.uid && other.namespace_name == claim.namespace_name &&
        other.name == claim.name)
      return xpu::ok_status();
  if (auto removed = metadata_->files.remove(claim.namespace_name, claim.name); !removed)
    return xpu::Error{"device metadata: " + removed.error()};
  return xpu::ok_status();
}

xpu::Result<PreparedClaim> ClaimState::prepare(const ClaimReference& claim) {
  const std::string label = claim_label(claim.namespace_name, claim.name);
  if (claim.uid.empty() || claim.name.empty() || claim.namespace_name.empty())
    return xpu::Error{"claim " + label + ": the kubelet sent an empty namespace, name or UID"};
  if (!is_claim_uid(claim.uid))
    return xpu::Error{"claim " + label + ": invalid UID \"" + claim.uid + "\""};

  std::lock_guard lock(mutex_);
  if (const PreparedClaim* recorded = claims_.find(claim.uid)) {
    // Prepared before (perhaps before a restart): answer the same cards without asking anyone,
    // and put the files back in case /var/run was emptied by a reboot.
    if (auto written = write_files(*recorded); !written)
      return xpu::Error{"claim " + label + ": " + written.error()};
    return *recorded;
  }
  xpu::Result<AllocatedClaim> allocated = lookup_(claim.namespace_name, claim.name);
  if (!allocated) return xpu::Error{"claim " + label + ": " + allocated.error()};
  xpu::Result<PreparedClaim> prepared =
      prepare_claim(claim, *allocated, node_name_, cards_(),
                    vfio_functions_ ? vfio_functions_() : std::vector<xpu::VfioFunctionInfo>{});
  if (!prepared) return prepared;
  const bool has_share = std::any_of(prepared->devices.begin(), prepared->devices.end(),
                                     [](const PreparedDevice& d) { return !d.share_id.empty(); });
  if (has_share && instance_hook_) {
    InstanceHook hook = instance_hook_();
    prepared->instance_hook = std::move(hook.command);
    prepared->instance_hook_names_share = hook.names_share && !prepared->instance_hook.empty();
  }
  if (metadata_ && metadata_->attributes)
    for (PreparedDevice& device : prepared->devices)
      device.attributes = metadata_->attributes(device);
  // The files before the record: a crash in between leaves files that the kubelet's next
  // prepare rewrites (or its unprepare removes), never a record without its files.
  if (auto written = write_files(*prepared); !written) {
    if (auto removed = remove_metadata(claim); !removed)
      spdlog::warn("claim {}: {}", label, removed.error());
    return xpu::Error{"claim " + label + ": " + written.error()};
  }
  if (auto recorded = claims_.add(*prepared); !recorded) {
    if (auto removed = specs_.remove(claim.uid); !removed)
      spdlog::warn("claim {}: {}", label, removed.error());
    if (auto removed = remove_metadata(claim); !removed)
      spdlog::warn("claim {}: {}", label, removed.error());
    return xpu::Error{"claim " + label + ": cannot record it: " + recorded.error()};
  }
  publish_claims();
  if (claims_changed_) claims_changed_();
  return prepared;
}

xpu::Result<std::optional<PreparedClaim>> ClaimState::unprepare(const ClaimReference& claim) {
  const std::string label = claim_label(claim.namespace_name, claim.name);
  if (claim.uid.empty()) return xpu::Error{"claim " + label + ": the kubelet sent an empty UID"};
  // A UID we could never have prepared: nothing to undo.
  if (!is_claim_uid(claim.uid)) return std::optional<PreparedClaim>();
  std::lock_guard lock(mutex_);
  std::optional<PreparedClaim> recorded;
  if (const PreparedClaim* found = claims_.find(claim.uid)) recorded = *found;
  // Spec first, then the files it mounts, then the record: a crash in between leaves a record
  // whose unprepare the kubelet repeats, never a spec or a file nobody will remove.
  if (auto removed = specs_.remove(claim.uid); !removed)
    return xpu::Error{"claim " + label + ": " + removed.error()};
  if (auto removed = remove_metadata(claim); !removed)
    return xpu::Error{"claim " + label + ": " + removed.error()};
  auto forgotten = claims_.remove(claim.uid);
  publish_claims();
  if (!forgotten)
    return xpu::Error{"claim " + label + ": cannot update the checkpoint: " + forgotten.error()};
  if (recorded && claims_changed_) claims_changed_();
  return recorded;
}

}  // namespace shim::dra
