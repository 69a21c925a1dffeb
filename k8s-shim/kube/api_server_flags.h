// The flags of a role that calls the API server, and the config they make: where the server is
// (default: in-cluster), the token and CA (default: the pod's service account), and the node the
// role runs on (--node-name, else $NODE_NAME, which the chart sets from spec.nodeName).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/command_line.h"
#include "common/result.h"
#include "k8s-shim/kube/kube_api_config.h"

namespace shim::kube {

using Getenv = std::function<std::optional<std::string>(std::string_view)>;

struct ApiServerFlags {
  std::string server;      // --api-server; empty: in-cluster
  std::string token_file;  // --api-token-file; empty: the pod's service-account token
  std::string ca_file;     // --api-ca-file; empty: the pod's service-account CA
};

// --api-server URL, --api-token-file PATH, --api-ca-file PATH.
void add_api_server_options(xpu::CommandLine& cli, ApiServerFlags& flags);
xpu::Result<KubeApiConfig> api_config(const ApiServerFlags& flags, const Getenv& getenv);

// Whether `name` is a Kubernetes node name (a DNS subdomain: lower-case letters, digits, '-' and
// '.', at most 253 characters, each label starting and ending with a letter or digit).
xpu::Status validate_node_name(std::string_view name);
// --node-name NAME (`help` says what the role uses it for).
void add_node_name_option(xpu::CommandLine& cli, std::string& node_name, std::string help);
// `node_name` as given, else $NODE_NAME; an error names what is missing or wrong.
xpu::Status complete_node_name(std::string& node_name, const Getenv& getenv);

// The process's own environment, for the command lines.
std::optional<std::string> process_environment(std::string_view name);

}  // namespace shim::kube
