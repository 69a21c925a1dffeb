// The API server the XPU runtime should talk to, from the in-cluster environment the kubelet
// gives every pod (KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT).
#pragma once

#include <optional>
#include <string>

#include "common/result.h"

namespace shim::token_sync {

inline constexpr const char* kServiceHostVariable = "KUBERNETES_SERVICE_HOST";
inline constexpr const char* kServicePortVariable = "KUBERNETES_SERVICE_PORT";

// The raw values, captured once; nullopt when the variable is not set at all.
struct ApiServerEnvironment {
  std::optional<std::string> host;
  std::optional<std::string> port;

  static ApiServerEnvironment from_process_environment();
};

// "https://HOST:PORT" with an IPv6 host in brackets. The host must be an IPv4 or IPv6 address
// or a DNS name and the port 1-65535; anything else is an error naming the variable and value.
xpu::Result<std::string> api_server_url(const ApiServerEnvironment& environment);

}  // namespace shim::token_sync
