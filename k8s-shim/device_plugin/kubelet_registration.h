// The plugin's side of the kubelet's Registration service: one Register call.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace shim {

enum class RegisterOutcome {
  kAccepted,
  kFailed,     // nobody listening, a timeout, a refusal: worth trying again later
  kCancelled,  // the stop signal came first
  // The kubelet (1.37 and later) already holds a connection to a plugin on this endpoint and
  // refused the registration ("device plugin already connected" in
  // pkg/kubelet/cm/devicemanager/manager.go, PluginConnected, since kubernetes PR 135437).
  // Trying the same endpoint again cannot succeed: see kubelet_connector.h.
  kEndpointTaken,
};

struct RegisterResult {
  RegisterOutcome outcome = RegisterOutcome::kFailed;
  std::string error;  // empty when accepted
};

// Registers `resource_name` served on `endpoint` (a socket file name in the kubelet's plugin
// directory) with the kubelet at the other end of `connection`, a socket connected to
// `kubelet_socket` (named in errors). The call goes over that connection alone, never a new one:
// the caller knows which kubelet.sock it connected to, and so which kubelet took the call, even
// when the file is replaced meanwhile. When `cancel_fd` (if not -1) turns readable, a stop
// signal, the call is cancelled instead of holding the stop for up to `timeout`.
RegisterResult register_with_kubelet(xpu::UniqueFd connection,
                                     const std::filesystem::path& kubelet_socket,
                                     const std::string& resource_name, const std::string& endpoint,
                                     std::chrono::milliseconds timeout, int cancel_fd = -1);

}  // namespace shim
