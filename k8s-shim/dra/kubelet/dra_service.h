// The kubelet's DRAPlugin service (k8s.io.kubelet.pkg.apis.dra.v1): a thin gRPC edge over
// prepare_claim, the claim CDI specs and the checkpoint.
//
// Threads: gRPC's server threads call in; one mutex serialises every prepare and unprepare, so
// the checkpoint and the spec files change one claim at a time. The claim lookup runs under that
// mutex too: it must be time-boxed by whoever provides it (the API half's HTTP timeout).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/xpud_client.h"
#include "dra_v1.grpc.pb.h"
#include "k8s-shim/dra/kubelet/allocated_claim.h"
#include "k8s-shim/dra/kubelet/claim_cdi_spec.h"
#include "k8s-shim/dra/kubelet/prepared_claims.h"

namespace shim::dra {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

// The claim as the API server holds it, by namespace and name.
using ClaimLookup = std::function<xpu::Result<AllocatedClaim>(std::string_view namespace_name,
                                                              std::string_view name)>;
// The cards on this node now (from xpud).
using CardSource = std::function<std::vector<xpu::DeviceInfo>()>;
// The command OCI hooks run to make a share's cXPU instance through xpud (Manager.InstanceHook;
// empty: the shares' CDI specs carry no hooks), and whether it takes the share and its claim
// (Manager.ShareInstancesSupported).
struct InstanceHook {
  std::vector<std::string> command;
  bool names_share = false;
};
using HookSource = std::function<InstanceHook()>;

class DraService final : public drapb::DRAPlugin::Service {
 public:
  // More claims than this in one call is refused outright: no pod has that many.
  static constexpr int kMaxClaimsPerCall = 128;

  // `claims_changed`, if set, is called (on a gRPC thread) after a claim was recorded or
  // forgotten: the role's loop then reads prepared_claims() again.
  DraService(ClaimLookup lookup, CardSource cards, std::string node_name, PreparedClaims claims,
             ClaimCdiSpecs specs, std::function<void()> claims_changed = {},
             HookSource instance_hook = {});

  // Per claim: a claim's error goes in its own entry and never fails the others.
  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const drapb::NodePrepareResourcesRequest* request,
                                    drapb::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(grpc::ServerContext* context,
                                      const drapb::NodeUnprepareResourcesRequest* request,
                                      drapb::NodeUnprepareResourcesResponse* response) override;

  // How many claims are prepared now (for the role's status line and the tests).
  std::size_t prepared_count() const;
  // The claims prepared now, as a copy. Never waits for a prepare in progress (which may wait
  // seconds on the API server): the role's loop reads it.
  std::vector<PreparedClaim> prepared_claims() const;
  // The node, which names our pool.
  const std::string& node_name() const { return node_name_; }

 private:
  xpu::Result<PreparedClaim> prepare(const drapb::Claim& claim);
  // The devices it had (for the log).
  xpu::Result<std::string> unprepare(const drapb::Claim& claim);
  // With mutex_ held: copies claims_ to what prepared_claims() hands out.
  void publish_claims();

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
};

}  // namespace shim::dra
