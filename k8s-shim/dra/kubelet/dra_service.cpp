#include "k8s-shim/dra/kubelet/dra_service.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <spdlog/spdlog.h>

#include "k8s-shim/dra/kubelet/claim_cdi_names.h"

namespace shim::dra {
namespace {

// No pod holds that many claims: a call with more is not the kubelet's, and is refused whole.
grpc::Status too_many_claims(int count) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "too many claims in one call (" + std::to_string(count) + ", at most " +
                          std::to_string(DraService::kMaxClaimsPerCall) + ")");
}

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string devices_text(const PreparedClaim& claim) {
  std::string text;
  for (const PreparedDevice& d : claim.devices) {
    if (!text.empty()) text += ",";
    text += d.device + "(" + d.uuid + ")";
  }
  return text.empty() ? "none" : text;
}

void fill(const PreparedClaim& claim, drapb::NodePrepareResourceResponse& out) {
  for (const PreparedDevice& d : claim.devices) {
    drapb::Device* device = out.add_devices();
    for (const std::string& request : d.requests) device->add_request_names(request);
    device->set_pool_name(d.pool);
    device->set_device_name(d.device);
    for (const std::string& id : d.cdi_ids) device->add_cdi_device_ids(id);
  }
}

}  // namespace

DraService::DraService(ClaimLookup lookup, CardSource cards, std::string node_name,
                       PreparedClaims claims, ClaimCdiSpecs specs,
                       std::function<void()> claims_changed, HookSource instance_hook)
    : lookup_(std::move(lookup)),
      cards_(std::move(cards)),
      node_name_(std::move(node_name)),
      claims_(std::move(claims)),
      specs_(std::move(specs)),
      claims_changed_(std::move(claims_changed)),
      instance_hook_(std::move(instance_hook)) {
  std::lock_guard lock(mutex_);
  publish_claims();
}

void DraService::publish_claims() {
  std::vector<PreparedClaim> claims;
  for (const auto& [uid, claim] : claims_.claims()) claims.push_back(claim);
  std::lock_guard lock(published_mutex_);
  published_ = std::move(claims);
}

std::size_t DraService::prepared_count() const {
  std::lock_guard lock(published_mutex_);
  return published_.size();
}

std::vector<PreparedClaim> DraService::prepared_claims() const {
  std::lock_guard lock(published_mutex_);
  return published_;
}

xpu::Result<PreparedClaim> DraService::prepare(const drapb::Claim& claim) {
  const std::string label = claim_label(claim.namespace_(), claim.name());
  if (claim.uid().empty() || claim.name().empty() || claim.namespace_().empty())
    return xpu::Error{"claim " + label + ": the kubelet sent an empty namespace, name or UID"};
  if (!is_claim_uid(claim.uid()))
    return xpu::Error{"claim " + label + ": invalid UID \"" + claim.uid() + "\""};

  std::lock_guard lock(mutex_);
  if (const PreparedClaim* recorded = claims_.find(claim.uid())) {
    // Prepared before (perhaps before a restart): answer the same cards without asking anyone,
    // and put the spec back in case /var/run was emptied by a reboot.
    if (auto written = specs_.write(*recorded); !written)
      return xpu::Error{"claim " + label + ": " + written.error()};
    return *recorded;
  }
  xpu::Result<AllocatedClaim> allocated = lookup_(claim.namespace_(), claim.name());
  if (!allocated) return xpu::Error{"claim " + label + ": " + allocated.error()};
  xpu::Result<PreparedClaim> prepared =
      prepare_claim(ClaimReference{claim.namespace_(), claim.uid(), claim.name()}, *allocated,
                    node_name_, cards_());
  if (!prepared) return prepared;
  const bool has_share = std::any_of(prepared->devices.begin(), prepared->devices.end(),
                                     [](const PreparedDevice& d) { return !d.share_id.empty(); });
  if (has_share && instance_hook_) {
    InstanceHook hook = instance_hook_();
    prepared->instance_hook = std::move(hook.command);
    prepared->instance_hook_names_share = hook.names_share && !prepared->instance_hook.empty();
  }
  // The spec before the record: a crash in between leaves a spec that the kubelet's next
  // prepare rewrites, never a record without its spec.
  if (auto written = specs_.write(*prepared); !written)
    return xpu::Error{"claim " + label + ": " + written.error()};
  if (auto recorded = claims_.add(*prepared); !recorded) {
    if (auto removed = specs_.remove(claim.uid()); !removed)
      spdlog::warn("claim {}: {}", label, removed.error());
    return xpu::Error{"claim " + label + ": cannot record it: " + recorded.error()};
  }
  publish_claims();
  if (claims_changed_) claims_changed_();
  return prepared;
}

grpc::Status DraService::NodePrepareResources(grpc::ServerContext* /*context*/,
                                              const drapb::NodePrepareResourcesRequest* request,
                                              drapb::NodePrepareResourcesResponse* response) {
  if (request->claims_size() > kMaxClaimsPerCall) return too_many_claims(request->claims_size());
  // The answer holds one entry per UID. A UID sent twice (never by a real kubelet, which keys its
  // claims by UID) would get the devices of both copies, or an error and devices at once, and an
  // answer that depends on which copy came first: it is refused, and nothing is prepared for it.
  std::map<std::string_view, int> copies;
  for (const drapb::Claim& claim : request->claims()) ++copies[claim.uid()];
  for (const drapb::Claim& claim : request->claims()) {
    const auto start = Clock::now();
    const int sent = copies[claim.uid()];
    xpu::Result<PreparedClaim> prepared =
        sent > 1 ? xpu::Result<PreparedClaim>(xpu::Error{
                       "claim " + claim_label(claim.namespace_(), claim.name()) + ": UID \"" +
                       claim.uid() + "\" appears " + std::to_string(sent) + " times in one call"})
                 : prepare(claim);
    drapb::NodePrepareResourceResponse& out = (*response->mutable_claims())[claim.uid()];
    if (prepared) {
      fill(*prepared, out);
      spdlog::info("prepared claim {} (uid {}): {} in {:.1f} ms",
                   claim_label(claim.namespace_(), claim.name()), claim.uid(),
                   devices_text(*prepared), milliseconds_since(start));
    } else {
      out.set_error(prepared.error());
      spdlog::warn("prepare of claim uid {} failed in {:.1f} ms: {}", claim.uid(),
                   milliseconds_since(start), prepared.error());
    }
  }
  return grpc::Status::OK;
}

xpu::Result<std::string> DraService::unprepare(const drapb::Claim& claim) {
  const std::string label = claim_label(claim.namespace_(), claim.name());
  if (claim.uid().empty()) return xpu::Error{"claim " + label + ": the kubelet sent an empty UID"};
  // A UID we could never have prepared: nothing to undo (failing would block the pod's deletion).
  if (!is_claim_uid(claim.uid())) return std::string("none (never prepared)");
  std::lock_guard lock(mutex_);
  const PreparedClaim* recorded = claims_.find(claim.uid());
  const bool was_prepared = recorded != nullptr;
  std::string devices = recorded ? devices_text(*recorded) : "none (not prepared here)";
  // Spec first, then the record: a crash in between leaves a record whose unprepare the kubelet
  // repeats, never a spec nobody will remove.
  if (auto removed = specs_.remove(claim.uid()); !removed)
    return xpu::Error{"claim " + label + ": " + removed.error()};
  auto forgotten = claims_.remove(claim.uid());
  publish_claims();
  if (!forgotten)
    return xpu::Error{"claim " + label + ": cannot update the checkpoint: " + forgotten.error()};
  if (was_prepared && claims_changed_) claims_changed_();
  return devices;
}

grpc::Status DraService::NodeUnprepareResources(grpc::ServerContext* /*context*/,
                                                const drapb::NodeUnprepareResourcesRequest* request,
                                                drapb::NodeUnprepareResourcesResponse* response) {
  if (request->claims_size() > kMaxClaimsPerCall) return too_many_claims(request->claims_size());
  for (const drapb::Claim& claim : request->claims()) {
    const auto start = Clock::now();
    xpu::Result<std::string> done = unprepare(claim);
    drapb::NodeUnprepareResourceResponse& out = (*response->mutable_claims())[claim.uid()];
    if (done) {
      spdlog::info("unprepared claim {} (uid {}): {} in {:.1f} ms",
                   claim_label(claim.namespace_(), claim.name()), claim.uid(), *done,
                   milliseconds_since(start));
    } else {
      out.set_error(done.error());
      spdlog::warn("unprepare of claim uid {} failed in {:.1f} ms: {}", claim.uid(),
                   milliseconds_since(start), done.error());
    }
  }
  return grpc::Status::OK;
}

}  // namespace shim::dra
