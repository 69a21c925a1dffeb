#include "k8s-shim/kube/api_server_flags.h"

#include <cstdlib>

#include "k8s-shim/shim_options.h"

namespace shim::kube {

void add_api_server_options(xpu::CommandLine& cli, ApiServerFlags& flags) {
  cli.add_option("api-server", "URL",
                 "the Kubernetes API server (default: in-cluster, from KUBERNETES_SERVICE_HOST "
                 "and KUBERNETES_SERVICE_PORT)",
                 [&flags](std::string_view value) -> xpu::Status {
                   if (!value.starts_with("https://") && !value.starts_with("http://"))
                     return xpu::Error{"must start with https:// or http://"};
                   flags.server = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_option("api-token-file", "PATH",
                 "bearer token for the API server, re-read on every call (default: the pod's "
                 "service-account token)",
                 absolute_path_option(flags.token_file));
  cli.add_option("api-ca-file", "PATH",
                 "CA bundle that signs the API server's certificate (default: the pod's "
                 "service-account CA)",
                 absolute_path_option(flags.ca_file));
}

xpu::Result<KubeApiConfig> api_config(const ApiServerFlags& flags, const Getenv& getenv) {
  KubeApiConfig config;
  if (flags.server.empty()) {
    auto in_cluster = in_cluster_config(getenv);
    if (!in_cluster) return xpu::Error{in_cluster.error() + " (or pass --api-server)"};
    config = std::move(*in_cluster);
  } else {
    config.server = flags.server;
    config.token_file = kServiceAccountTokenFile;
    config.ca_file = kServiceAccountCaFile;
  }
  if (!flags.token_file.empty()) config.token_file = flags.token_file;
  if (!flags.ca_file.empty()) config.ca_file = flags.ca_file;
  return config;
}

xpu::Status validate_node_name(std::string_view name) {
  if (name.empty()) return xpu::Error{"a node name must not be empty"};
  if (name.size() > 253) return xpu::Error{"a node name has at most 253 characters"};
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  std::size_t label_start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '.') {
      if (!alnum(name[i]) && name[i] != '-')
        return xpu::Error{"'" + std::string(name) +
                          "' is not a node name (lower-case letters, digits, '-', '.')"};
      continue;
    }
    std::string_view label = name.substr(label_start, i - label_start);
    if (label.empty() || !alnum(label.front()) || !alnum(label.back()))
      return xpu::Error{"'" + std::string(name) +
                        "' is not a node name (each dot-separated part "
                        "starts and ends with a letter or digit)"};
    label_start = i + 1;
  }
  return xpu::ok_status();
}

void add_node_name_option(xpu::CommandLine& cli, std::string& node_name, std::string help) {
  cli.add_option("node-name", "NAME", std::move(help),
                 [&node_name](std::string_view value) -> xpu::Status {
                   if (auto status = validate_node_name(value); !status) return status;
                   node_name = std::string(value);
                   return xpu::ok_status();
                 });
}

xpu::Status complete_node_name(std::string& node_name, const Getenv& getenv) {
  if (!node_name.empty()) return xpu::ok_status();
  auto env = getenv("NODE_NAME");
  if (!env || env->empty()) return xpu::Error{"no node name: pass --node-name or set NODE_NAME"};
  if (auto status = validate_node_name(*env); !status)
    return xpu::Error{"NODE_NAME: " + status.error()};
  node_name = *env;
  return xpu::ok_status();
}

std::optional<std::string> process_environment(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

}  // namespace shim::kube
