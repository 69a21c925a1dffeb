#include "k8s-shim/kube/kube_api_config.h"

#include <gtest/gtest.h>

#include <map>

namespace shim::kube {
namespace {

auto env(std::map<std::string, std::string> values) {
  return [values](std::string_view name) -> std::optional<std::string> {
    auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(InClusterConfig, BuildsTheServiceUrlAndServiceAccountPaths) {
  auto config = in_cluster_config(
      env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->token_file, "/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(config->ca_file, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
  EXPECT_EQ(config->timeout, std::chrono::milliseconds(10000));
}

TEST(InClusterConfig, BracketsAnIpv6Host) {
  auto config = in_cluster_config(
      env({{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://[fd00:10:96::1]:6443");
}

TEST(InClusterConfig, NamesTheMissingVariable) {
  auto no_host = in_cluster_config(env({{"KUBERNETES_SERVICE_PORT", "443"}}));
  ASSERT_FALSE(no_host);
  EXPECT_NE(no_host.error().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  auto no_port = in_cluster_config(env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}}));
  ASSERT_FALSE(no_port);
  EXPECT_NE(no_port.error().find("KUBERNETES_SERVICE_PORT"), std::string::npos);
}

TEST(InClusterConfig, RefusesValuesThatWouldReshapeTheUrl) {
  EXPECT_FALSE(in_cluster_config(
      env({{"KUBERNETES_SERVICE_HOST", "evil.example/x?"}, {"KUBERNETES_SERVICE_PORT", "443"}})));
  EXPECT_FALSE(in_cluster_config(
      env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443/x"}})));
  EXPECT_FALSE(in_cluster_config(
      env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "70000"}})));
}

}  // namespace
}  // namespace shim::kube
