#include "k8s-shim/device_plugin/device_plugin_service.h"

#include <optional>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "k8s-shim/device_plugin/container_allocation.h"
#include "k8s-shim/device_plugin/kubelet_messages.h"
#include "k8s-shim/device_plugin/memory_share_allocation.h"
#include "k8s-shim/device_plugin/shared_allocation.h"

namespace shim {
namespace {

// How often a waiting stream checks whether its client or server went away; bounds how long a
// shutdown or a dropped kubelet connection keeps a handler thread.
constexpr std::chrono::milliseconds kStreamCheckInterval{100};

// Counts a decision for as long as the call runs.
class DecisionUnderWay {
 public:
  explicit DecisionUnderWay(std::atomic<unsigned>& count) : count_(count) { ++count_; }
  ~DecisionUnderWay() { --count_; }
  DecisionUnderWay(const DecisionUnderWay&) = delete;
  DecisionUnderWay& operator=(const DecisionUnderWay&) = delete;

 private:
  std::atomic<unsigned>& count_;
};

grpc::Status invalid(std::size_t container, const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "container request " + std::to_string(container) + ": " + message);
}

}  // namespace

DevicePluginService::DevicePluginService(std::shared_ptr<ResourceFeed> feed, MemoryUnit memory_unit,
                                         CdiMode cdi, DecisionHooks hooks)
    : feed_(std::move(feed)), memory_unit_(memory_unit), cdi_(cdi), hooks_(std::move(hooks)) {}

void DevicePluginService::stop() {
  stopping_ = true;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  *response = plugin_options();
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  streams_opened_.fetch_add(1);
  auto snapshot = feed_->latest();
  spdlog::info("{}: ListAndWatch opened by {}, sending {} devices", feed_->resource_name(),
               context->peer(), snapshot.state->devices.size());
  if (!writer->Write(to_list_and_watch(*snapshot.state))) return grpc::Status::OK;
  std::uint64_t seen = snapshot.generation;
  while (!stopping_ && !context->IsCancelled() && !feed_->closed()) {
    auto next = feed_->wait_newer(seen, kStreamCheckInterval);
    if (!next) continue;
    seen = next->generation;
    if (!writer->Write(to_list_and_watch(*next->state))) {
      spdlog::info("{}: ListAndWatch stream closed by the kubelet", feed_->resource_name());
      return grpc::Status::OK;
    }
    spdlog::debug("{}: ListAndWatch sent {} devices", feed_->resource_name(),
                  next->state->devices.size());
  }
  spdlog::info("{}: ListAndWatch stream ends", feed_->resource_name());
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  const DecisionUnderWay counted(decisions_);
  // The kubelet offers what this plugin last advertised; a card a pod took through a DRA claim
  // since then is left out of the preference only if the feed knows it now.
  if (hooks_.refresh) hooks_.refresh();
  auto state = feed_->latest().state;
  const TopologyAllocator allocator = to_topology(*state);
  for (int i = 0; i < request->container_requests_size(); ++i) {
    const AllocationRequest wanted = to_allocation_request(request->container_requests(i));
    auto chosen = state->memory_unit_bytes > 0 ? preferred_memory_allocation(*state, wanted)
                  : state->shared              ? preferred_shared_allocation(*state, wanted)
                                               : allocator.preferred(wanted);
    if (!chosen) {
      spdlog::warn("{}: GetPreferredAllocation rejected: container request {}: {}",
                   feed_->resource_name(), i, chosen.error());
      return invalid(static_cast<std::size_t>(i), chosen.error());
    }
    auto* out = response->add_container_responses();
    for (const auto& id : *chosen) out->add_deviceids(id);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  const DecisionUnderWay counted(decisions_);
  // No refresh here, and no List of this plugin's meanwhile: allocation_window.h.
  // GetPreferredAllocation comes first, before the kubelet marks anything in use.
  std::optional<AllocationWindow::Open> open;
  if (hooks_.allocations) open.emplace(*hooks_.allocations);
  auto state = feed_->latest().state;
  if (request->container_requests_size() == 0)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no container requests");
  std::vector<ContainerAllocation> allocations;
  for (int i = 0; i < request->container_requests_size(); ++i) {
    const auto& ids = request->container_requests(i).devices_ids();
    auto allocation =
        allocate_container(*state, std::vector<std::string>(ids.begin(), ids.end()), cdi_);
    if (!allocation) {
      spdlog::warn("{}: Allocate rejected: container request {}: {}", feed_->resource_name(), i,
                   allocation.error());
      return invalid(static_cast<std::size_t>(i), allocation.error());
    }
    allocations.push_back(std::move(*allocation));
  }
  // Only once every container request succeeded: the call fails or succeeds as a whole.
  for (std::size_t i = 0; i < allocations.size(); ++i) {
    fill_container_response(allocations[i], *response->add_container_responses());
    std::string granted;
    std::uint64_t total = 0;
    for (const auto& device : allocations[i].granted) {
      if (!granted.empty()) granted += ", ";
      granted += xpu::names::device_name(device.index) + " (" + device.id + ", " +
                 format_memory(device.memory_total_bytes, memory_unit_) + ")";
      total += device.memory_total_bytes;
    }
    std::string cdi;
    for (const auto& name : allocations[i].cdi_devices)
      cdi += (cdi.empty() ? "; CDI " : ", ") + name;
    const std::uint64_t limit = allocations[i].memory_limit_bytes;
    spdlog::info("{}: allocated to container request {}: {}; {} of XPU memory{}{}",
                 feed_->resource_name(), i, granted, format_memory(total, memory_unit_),
                 limit > 0 ? ", limited to " + format_memory(limit, memory_unit_) : std::string(),
                 cdi);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  // pre_start_required is false: the kubelet never needs this, but answering is harmless.
  return grpc::Status::OK;
}

}  // namespace shim
