// Where the API server is and how this process proves who it is: the in-cluster service account.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shim::kube {

struct KubeApiConfig {
  std::string server;                        // "https://host:port" (tests: "http://127.0.0.1:port")
  std::filesystem::path token_file;          // re-read per request: projected tokens rotate
  std::filesystem::path ca_file;             // empty: the system's CA store
  std::chrono::milliseconds timeout{10000};  // whole request, connect included
};

inline constexpr std::string_view kServiceAccountTokenFile =
    "/var/run/secrets/kubernetes.io/serviceaccount/token";
inline constexpr std::string_view kServiceAccountCaFile =
    "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

// The config of a pod's service account, from KUBERNETES_SERVICE_HOST/PORT as the kubelet sets
// them. `getenv` is injected so that tests need not touch the process environment.
xpu::Result<KubeApiConfig> in_cluster_config(
    const std::function<std::optional<std::string>(std::string_view)>& getenv);

}  // namespace shim::kube
