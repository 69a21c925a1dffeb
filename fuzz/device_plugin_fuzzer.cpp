// The device plugin's GetPreferredAllocation and Allocate handlers (DevicePluginService) on
// requests as the kubelet sends them: the first input byte picks the node (eight whole cards with
// one unhealthy, two shared cards of four replicas, or two virtual functions) and the call; the
// rest is the serialised request. An accepted request must get an answer the kubelet can use:
// the asked number of distinct available IDs with every must-include one, device nodes under
// /dev. A refused one gets INVALID_ARGUMENT with a message that fits on one log line.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include <grpcpp/grpcpp.h>

#include "deviceplugin_v1beta1.pb.h"

#include "fuzz/protobuf_support.h"
#include "k8s-shim/device_plugin/device_plugin_service.h"
#include "k8s-shim/device_plugin/resource_feed.h"

namespace {

using xpu::fuzz::check;

shim::PluginDevice card(unsigned index, int numa_node) {
  shim::PluginDevice device;
  device.id = device.card_id = "uuid-" + std::to_string(index);
  device.index = index;
  device.model = "R200";
  device.numa_node = numa_node;
  device.memory_total_bytes = 32ull << 30;
  device.healthy = true;
  return device;
}

// The 8-card R200 node of xpu-facts.md; xpu6 unhealthy, xpu7's NUMA node unknown.
shim::ResourceState eight_cards() {
  shim::ResourceState state{"kunlunxin.com/xpu", "kunlunxin-xpu.sock", {}, false};
  for (unsigned i = 0; i < 8; ++i) {
    auto device = card(i, i < 4 ? 0 : (i == 7 ? -1 : 1));
    for (unsigned j = 0; j < 8; ++j)
      if (j != i && ((i < 4) == (j < 4) || j == (i + 4) % 8))
        device.linked_ids.push_back("uuid-" + std::to_string(j));
    state.devices.push_back(device);
  }
  state.devices[6].healthy = false;
  state.devices[6].unhealthy_reason = "driver reports state ERROR (207)";
  return state;
}

shim::ResourceState shared_cards() {
  shim::ResourceState state{"kunlunxin.com/xpu-shared", "kunlunxin-xpu-shared.sock", {}, true};
  for (unsigned i = 0; i < 2; ++i)
    for (unsigned r = 0; r < 4; ++r) {
      auto replica = card(i, 0);
      replica.id = replica.card_id + "::" + std::to_string(r);
      replica.replica = r;
      state.devices.push_back(replica);
    }
  return state;
}

shim::ResourceState virtual_functions() {
  shim::ResourceState state{"kunlunxin.com/vxpu", "kunlunxin-vxpu.sock", {}, false};
  for (unsigned i = 8; i < 10; ++i) {
    auto vf = card(i, 0);
    vf.model = "KL2-VF";
    vf.virtual_function = true;
    vf.device_nodes = {"/dev/xpu" + std::to_string(i), "/dev/xpuctrl"};
    state.devices.push_back(vf);
  }
  return state;
}

bool fits_one_line(const std::string& text) {
  for (char c : text)
    if (c == '\n' || c == '\r') return false;
  return true;
}

void check_preferred(const v1beta1::PreferredAllocationRequest& request,
                     const v1beta1::PreferredAllocationResponse& response) {
  check(response.container_responses_size() == request.container_requests_size(),
        "an answer per container request");
  for (int i = 0; i < request.container_requests_size(); ++i) {
    const auto& wanted = request.container_requests(i);
    const auto& chosen = response.container_responses(i).deviceids();
    const std::set<std::string> ids(chosen.begin(), chosen.end());
    const std::set<std::string> available(wanted.available_deviceids().begin(),
                                          wanted.available_deviceids().end());
    check(ids.size() == static_cast<std::size_t>(chosen.size()), "an ID chosen twice");
    check(static_cast<std::int64_t>(ids.size()) == wanted.allocation_size(),
          "not the asked number of IDs",
          std::to_string(ids.size()) + " for " + std::to_string(wanted.allocation_size()));
    for (const auto& id : ids) check(available.count(id) == 1, "chose an unavailable ID", id);
    for (const auto& id : wanted.must_include_deviceids())
      check(ids.count(id) == 1, "left out a must-include ID", id);
  }
}

void check_allocated(const shim::ResourceState& state, const v1beta1::AllocateRequest& request,
                     const v1beta1::AllocateResponse& response) {
  check(response.container_responses_size() == request.container_requests_size(),
        "an answer per container request");
  for (const auto& answer : response.container_responses()) {
    check(answer.envs().count("XPU_VISIBLE_DEVICES") == 1, "no XPU_VISIBLE_DEVICES");
    // The vendor's runtime injects what CXPU_VISIBLE_DEVICES names: always exactly the same cards.
    check(answer.envs().count("CXPU_VISIBLE_DEVICES") == 1 &&
              answer.envs().at("CXPU_VISIBLE_DEVICES") == answer.envs().at("XPU_VISIBLE_DEVICES"),
          "CXPU_VISIBLE_DEVICES is not XPU_VISIBLE_DEVICES");
    for (const auto& spec : answer.devices())
      check(
          spec.host_path().starts_with("/dev/") && spec.host_path().find("..") == std::string::npos,
          "a device node outside /dev", spec.host_path());
  }
  for (const auto& wanted : request.container_requests())
    for (const auto& id : wanted.devices_ids()) {
      bool known = false;
      for (const auto& device : state.devices) known = known || (device.id == id && device.healthy);
      check(known, "allocated an unknown or unhealthy ID", id);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging_and_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return -1;
  const unsigned choice = data[0];
  const auto* message = data + 1;
  const int message_size = static_cast<int>(size - 1);
  shim::ResourceState state = choice % 3 == 0   ? eight_cards()
                              : choice % 3 == 1 ? shared_cards()
                                                : virtual_functions();
  auto feed = std::make_shared<shim::ResourceFeed>(state);
  shim::DevicePluginService service(feed, shim::MemoryUnit::GiB);

  grpc::Status status;
  if ((choice / 3) % 2 == 0) {
    v1beta1::PreferredAllocationRequest request;
    if (!request.ParseFromArray(message, message_size)) return -1;
    v1beta1::PreferredAllocationResponse response;
    status = service.GetPreferredAllocation(nullptr, &request, &response);
    if (status.ok()) check_preferred(request, response);
  } else {
    v1beta1::AllocateRequest request;
    if (!request.ParseFromArray(message, message_size)) return -1;
    v1beta1::AllocateResponse response;
    status = service.Allocate(nullptr, &request, &response);
    if (status.ok()) check_allocated(state, request, response);
  }
  if (!status.ok()) {
    check(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT, "refused with another code",
          status.error_message());
    check(fits_one_line(status.error_message()), "refusal message spans lines",
          status.error_message());
  }
  return 0;
}
