// The DevicePlugin gRPC service for one resource: reads the resource's feed and hands requests
// to the pure decision code (TopologyAllocator, allocate_container). Handlers run on gRPC's
// threads; the only shared state is the feed (internally locked) and the stop flag.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include <deviceplugin_v1beta1.grpc.pb.h>

#include "k8s-shim/device_plugin/allocation_window.h"
#include "k8s-shim/device_plugin/container_allocation.h"
#include "k8s-shim/device_plugin/resource_feed.h"
#include "k8s-shim/shim_options.h"

namespace shim {

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  // What the decisions call beyond the feed; each is optional.
  struct DecisionHooks {
    // Called on the gRPC thread before GetPreferredAllocation reads the feed (not Allocate: see
    // allocation_window.h): brings the feed up to date with what it depends on beyond xpud (the
    // cards pods hold through DRA claims), within a deadline of its own.
    std::function<void()> refresh;
    // Held open for the length of each Allocate call.
    std::shared_ptr<AllocationWindow> allocations;
  };

  DevicePluginService(std::shared_ptr<ResourceFeed> feed, MemoryUnit memory_unit,
                      CdiMode cdi = CdiMode::kOff, DecisionHooks hooks = {});

  // Ends this service's ListAndWatch streams (its server is going away).
  void stop();
  // How many ListAndWatch streams were opened on this service: the kubelet opens one as soon as
  // it has accepted a registration, so a non-zero count proves the registration landed even when
  // its answer did not reach us.
  unsigned streams_opened() const { return streams_opened_.load(); }
  // GetPreferredAllocation and Allocate calls under way: the kubelet admits a pod in them, and
  // cancels them when the streams end (the pod is then rejected), so a stopping plugin waits.
  unsigned decisions_under_way() const { return decisions_.load(); }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  const std::shared_ptr<ResourceFeed> feed_;
  const MemoryUnit memory_unit_;
  const CdiMode cdi_;
  const DecisionHooks hooks_;
  std::atomic<bool> stopping_{false};
  std::atomic<unsigned> streams_opened_{0};
  std::atomic<unsigned> decisions_{0};
};

}  // namespace shim
