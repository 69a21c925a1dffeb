// The taint that keeps new pods off a node while the device plugin hands it over.
//
// Why: the scheduler sends a pod that asks for `kunlunxin.com/xpu` to the device plugin's path
// while the Node's status.allocatable counts cards, and to DRA's extended resource only where it
// counts none (k8s.io/kubernetes v1.37.2 pkg/scheduler/framework/plugins/noderesources/fit.go,
// shouldDelegateResourceToDRA). The kubelet writes allocatable on its status period (10 s by
// default: pkg/kubelet/kubelet.go, syncNodeStatus on nodeStatusUpdateFrequency; nothing in
// pkg/kubelet/cm/devicemanager triggers a sooner write). So for up to that long after a device
// plugin stops, the node still counts its cards, and the kubelet rejects every pod bound to it
// meanwhile: "no healthy devices present" (UnexpectedAdmissionError), and a bare pod stays Failed.
// The stopping plugin therefore taints its node NoSchedule, stops, waits until the kubelet has
// taken its resources out of allocatable (or a new plugin serves them), and removes the taint:
// pods that arrive meanwhile wait Pending instead of failing. What is left: a pod the scheduler
// bound in the moment before it saw the taint, and the kubelet admits after the plugin stopped.
// Serving on a few seconds would close that too, but the DaemonSet's next pod may start while
// this one terminates, and the kubelet refuses its registration while this one's streams are
// open (the real-node suite saw it).
//
// The taint is one entry of spec.taints, a list the API replaces whole (+listType=atomic), so it
// is written by a JSON patch of the whole list carrying the resourceVersion it was read at: a
// concurrent writer makes it fail with 409 and it is read and tried again.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shim::node_status {

inline constexpr std::string_view kHandoverTaintKey = "kunlunxin.com/xpu-handover";

// What the hand-over reads of a Node.
struct HandoverView {
  std::string resource_version;
  std::string taints_json = "[]";  // spec.taints as the API gave it (each entry kept as it was)
  bool tainted = false;            // the hand-over taint is among them
  std::map<std::string, std::string> allocatable;  // status.allocatable
};

// Errors name the field; never throws.
xpu::Result<HandoverView> parse_handover_view(std::string_view node_json);

// The JSON patch (application/json-patch+json) that adds (`raise`) or removes the hand-over taint,
// leaving every other taint as it is, conditional on the view's resourceVersion; nullopt when the
// node already is as asked.
std::optional<std::string> handover_patch(const HandoverView& view, bool raise);

// Whether the node's allocatable no longer counts any of `resources` (absent or "0").
bool resources_withdrawn(const HandoverView& view, const std::vector<std::string>& resources);

}  // namespace shim::node_status
