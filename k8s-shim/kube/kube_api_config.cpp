#include "k8s-shim/kube/kube_api_config.h"

#include <charconv>

namespace shim::kube {

xpu::Result<KubeApiConfig> in_cluster_config(
    const std::function<std::optional<std::string>(std::string_view)>& getenv) {
  auto host = getenv("KUBERNETES_SERVICE_HOST");
  if (!host || host->empty())
    return xpu::Error{"not in a cluster: KUBERNETES_SERVICE_HOST is not set"};
  auto port = getenv("KUBERNETES_SERVICE_PORT");
  if (!port || port->empty())
    return xpu::Error{"not in a cluster: KUBERNETES_SERVICE_PORT is not set"};

  unsigned number = 0;
  auto [end, error] = std::from_chars(port->data(), port->data() + port->size(), number);
  if (error != std::errc() || end != port->data() + port->size() || number == 0 || number > 65535)
    return xpu::Error{"KUBERNETES_SERVICE_PORT is not a port number: \"" + *port + "\""};
  // Anything that could end the authority part of the URL would let the variable pick another
  // server or path than the one it names.
  if (host->find_first_of("/?#@ []") != std::string::npos)
    return xpu::Error{"KUBERNETES_SERVICE_HOST is not a host name or address: \"" + *host + "\""};

  KubeApiConfig config;
  // An IPv6 literal needs brackets in a URL ("https://[fd00::1]:443").
  bool ipv6 = host->find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  config.token_file = kServiceAccountTokenFile;
  config.ca_file = kServiceAccountCaFile;
  return config;
}

}  // namespace shim::kube
