// The kubelet's DRAPlugin service (k8s.io.kubelet.pkg.apis.dra.v1): a thin gRPC edge over
// ClaimState (claim_state.h), which owns the prepared claims, their CDI specs and the checkpoint.
// It checks a request as a whole, loops over its claims, and translates each to and from a
// ClaimState call, logging each with its latency.
//
// Threads: gRPC's server threads call in; ClaimState serialises what they change.
#pragma once

#include <string>

#include "dra_v1.grpc.pb.h"
#include "k8s-shim/dra/kubelet/claim_state.h"

namespace shim::dra {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

class DraService final : public drapb::DRAPlugin::Service {
 public:
  // More claims than this in one call is refused outright: no pod has that many.
  static constexpr int kMaxClaimsPerCall = 128;

  // `claims` must outlive the service (and so the server that calls it).
  explicit DraService(ClaimState& claims) : claims_(claims) {}

  // Per claim: a claim's error goes in its own entry and never fails the others.
  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const drapb::NodePrepareResourcesRequest* request,
                                    drapb::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(grpc::ServerContext* context,
                                      const drapb::NodeUnprepareResourcesRequest* request,
                                      drapb::NodeUnprepareResourcesResponse* response) override;

  // The node, which names our pool.
  const std::string& node_name() const { return claims_.node_name(); }

 private:
  ClaimState& claims_;
};

}  // namespace shim::dra
