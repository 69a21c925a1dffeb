#include "k8s-shim/dra/kubelet/dra_service.h"

#include <chrono>
#include <map>
#include <optional>

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

ClaimReference reference(const drapb::Claim& claim) {
  return ClaimReference{claim.namespace_(), claim.uid(), claim.name()};
}

// What an unprepare released, for the log.
std::string released_text(const drapb::Claim& claim, const std::optional<PreparedClaim>& released) {
  if (released) return devices_text(*released);
  return is_claim_uid(claim.uid()) ? "none (not prepared here)" : "none (never prepared)";
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
                 : claims_.prepare(reference(claim));
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

grpc::Status DraService::NodeUnprepareResources(grpc::ServerContext* /*context*/,
                                                const drapb::NodeUnprepareResourcesRequest* request,
                                                drapb::NodeUnprepareResourcesResponse* response) {
  if (request->claims_size() > kMaxClaimsPerCall) return too_many_claims(request->claims_size());
  for (const drapb::Claim& claim : request->claims()) {
    const auto start = Clock::now();
    xpu::Result<std::optional<PreparedClaim>> done = claims_.unprepare(reference(claim));
    drapb::NodeUnprepareResourceResponse& out = (*response->mutable_claims())[claim.uid()];
    if (done) {
      spdlog::info("unprepared claim {} (uid {}): {} in {:.1f} ms",
                   claim_label(claim.namespace_(), claim.name()), claim.uid(),
                   released_text(claim, *done), milliseconds_since(start));
    } else {
      out.set_error(done.error());
      spdlog::warn("unprepare of claim uid {} failed in {:.1f} ms: {}", claim.uid(),
                   milliseconds_since(start), done.error());
    }
  }
  return grpc::Status::OK;
}

}  // namespace shim::dra
