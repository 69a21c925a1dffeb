#include "k8s-shim/token_sync/kubeconfig.h"

#include <gtest/gtest.h>

namespace shim::token_sync {
namespace {

TEST(Kubeconfig, PointsAtTheSyncedFilesAndTheServer) {
  const std::string expected =
      "# Written by xpu-k8s-shim token-sync; rewritten on every change, do not edit.\n"
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: kubernetes\n"
      "  cluster:\n"
      "    server: \"https://10.96.0.1:443\"\n"
      "    certificate-authority: \"/xpu-runtime/auth/ca.crt\"\n"
      "users:\n"
      "- name: xpu-runtime\n"
      "  user:\n"
      "    tokenFile: \"/xpu-runtime/auth/token\"\n"
      "contexts:\n"
      "- name: xpu-runtime\n"
      "  context:\n"
      "    cluster: kubernetes\n"
      "    user: xpu-runtime\n"
      "    namespace: \"kube-system\"\n"
      "current-context: xpu-runtime\n";
  EXPECT_EQ(render_kubeconfig({"https://10.96.0.1:443", "/xpu-runtime/auth/ca.crt",
                               "/xpu-runtime/auth/token", "kube-system"}),
            expected);
}

TEST(Kubeconfig, QuotingKeepsOddPathsFromChangingTheDocument) {
  EXPECT_EQ(yaml_quote("plain"), "\"plain\"");
  EXPECT_EQ(yaml_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(yaml_quote("line\nbreak: yes"), "\"line\\x0abreak: yes\"");
  EXPECT_EQ(yaml_quote("# not a comment"), "\"# not a comment\"");
}

}  // namespace
}  // namespace shim::token_sync
