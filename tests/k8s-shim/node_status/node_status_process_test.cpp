// The device plugin with --node-status over the life of the process: the real shim against the
// real xpud (xpuml backend over the fake libxpuml) on a private bus, a kubelet stand-in's
// Registration service and a stand-in for the API server's Node endpoints (node_server.py). The
// label appears once the plugin is registered, the condition says the cards, and SIGTERM
// releases the label before the process exits 0, leaving the condition.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/k8s-shim/device_plugin/kubelet_registration_standin.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::KubeletRegistrationStandin;
using xpu::test::wait_until;
using xpu::test::write_file;
namespace fs = std::filesystem;

constexpr auto kDeadline = 20s;
constexpr const char* kLabel = "kunlunxin.com/xpu.ready";

class NodeStatusProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(plugin_dir_);
    write_file(dir_.path() / "scenario", "devices 2\n");
    write_file(
        dir_.path() / "xpud.conf",
        "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n[xpuml]\nlibrary = " FAKE_XPUML
        "\n[sysfs]\nroot = " +
            dir_.path().string() + "\n");
    write_file(dir_.path() / "token", "a-token\n");
    server_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{
            "/usr/bin/python3",
            std::string(XPU_SOURCE_DIR) + "/tests/k8s-shim/node_status/node_server.py",
            dir_.path().string(), "node-a"},
        dir_.path() / "server.log");
    ASSERT_TRUE(wait_until([&] { return fs::exists(dir_.path() / "port"); })) << server_->output();
    std::ifstream in(dir_.path() / "port");
    in >> port_;
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{
            {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()}});
  }

  std::unique_ptr<ChildProcess> start_shim(const std::string& log = "shim.log") {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("k8s-shim/xpu-k8s-shim").string(), "--bus-address",
                                 bus_.address(), "device-plugin", "--plugin-dir",
                                 plugin_dir_.string(), "--node-status", "--node-name", "node-a",
                                 "--api-server", "http://127.0.0.1:" + std::to_string(port_),
                                 "--api-token-file", (dir_.path() / "token").string()},
        dir_.path() / log);
  }

  // Whether `shim` logged `text` within the deadline.
  static bool wait_logged(const ChildProcess& shim, const std::string& text) {
    return wait_until([&] { return shim.output().find(text) != std::string::npos; }, kDeadline);
  }

  // The Node as the stand-in holds it now (null before the first request).
  nlohmann::json node() const {
    std::ifstream in(dir_.path() / "node.json");
    if (!in) return nullptr;
    std::ostringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str(), nullptr, false);
  }
  std::optional<std::string> label() const {
    const auto current = node();
    if (!current.is_object() || !current["metadata"]["labels"].contains(kLabel)) return {};
    return current["metadata"]["labels"][kLabel].get<std::string>();
  }
  // Each apply of the node's labels the stand-in took, in order: whether it carried the label.
  std::vector<bool> label_applies() const {
    std::vector<bool> applies;
    std::ifstream in(dir_.path() / "requests.jsonl");
    for (std::string line; std::getline(in, line);) {
      const auto request = nlohmann::json::parse(line, nullptr, false);
      if (!request.is_object() || request["method"] != "PATCH" ||
          request["path"] != "/api/v1/nodes/node-a")
        continue;
      const auto body = nlohmann::json::parse(request["body"].get<std::string>(), nullptr, false);
      applies.push_back(body.is_object() && body.contains("metadata") &&
                        body["metadata"].contains("labels") &&
                        body["metadata"]["labels"].contains(kLabel));
    }
    return applies;
  }
  nlohmann::json condition() const {
    const auto current = node();
    if (!current.is_object()) return nullptr;
    for (const auto& entry : current["status"]["conditions"])
      if (entry["type"] == "XPUHealthy") return entry;
    return nullptr;
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  fs::path plugin_dir_ = dir_.path() / "device-plugins";
  int port_ = 0;
  std::unique_ptr<ChildProcess> server_;
  std::unique_ptr<ChildProcess> xpud_;
};

TEST_F(NodeStatusProcessTest, TheLabelFollowsTheRegistrationAndSigtermReleasesIt) {
  auto shim = start_shim();
  // No kubelet yet: the condition is written, the label is not.
  ASSERT_TRUE(wait_until([&] { return !condition().is_null(); }, kDeadline)) << shim->output();
  EXPECT_EQ(condition()["status"], "True");
  EXPECT_EQ(condition()["message"], "all 2 cards are healthy");
  EXPECT_FALSE(label());

  KubeletRegistrationStandin kubelet(plugin_dir_);
  ASSERT_TRUE(wait_until([&] { return label() == "true"; }, kDeadline)) << shim->output();
  // The kubelet's condition is still there.
  const nlohmann::json written = node();
  bool ready_kept = false;
  for (const auto& entry : written["status"]["conditions"])
    ready_kept = ready_kept || (entry["type"] == "Ready" && entry["status"] == "True");
  EXPECT_TRUE(ready_kept) << written.dump();

  shim->signal(SIGTERM);
  EXPECT_EQ(shim->wait(10s), 0) << shim->output();
  EXPECT_FALSE(label()) << node().dump();
  EXPECT_EQ(condition()["status"], "True");  // the condition stays as last written
}

// A rolling update whose new plugin starts beside the old one (a DaemonSet with maxSurge): the new
// one takes the socket over and serves. The old one, displaced, must neither take the label away
// meanwhile nor release it when it stops (both write it as one field manager): the node is served
// throughout. Before, the old one said "not serving" once displaced and released the label on
// SIGTERM, and the new one, having applied it already, put it back only at its next heartbeat.
TEST_F(NodeStatusProcessTest, ADisplacedPluginLeavesTheLabelToThePluginThatServes) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  auto old_plugin = start_shim("old.log");
  ASSERT_TRUE(wait_until([&] { return label() == "true"; }, kDeadline)) << old_plugin->output();
  auto new_plugin = start_shim("new.log");
  ASSERT_TRUE(wait_logged(*old_plugin, "another process serves")) << old_plugin->output();
  ASSERT_TRUE(wait_logged(*new_plugin, "registered with the kubelet")) << new_plugin->output();

  old_plugin->signal(SIGTERM);
  EXPECT_EQ(old_plugin->wait(10s), 0) << old_plugin->output();
  EXPECT_NE(old_plugin->output().find("handing over"), std::string::npos) << old_plugin->output();
  EXPECT_EQ(label(), "true") << node().dump() << "\nold:\n"
                             << old_plugin->output() << "\nnew:\n"
                             << new_plugin->output();
  // And it was never taken away meanwhile, not even for a moment.
  auto applies = label_applies();
  const auto first_true = std::find(applies.begin(), applies.end(), true);
  EXPECT_EQ(std::count(first_true, applies.end(), false), 0)
      << "the label was released after it was applied; old:\n"
      << old_plugin->output() << "\nnew:\n"
      << new_plugin->output();

  new_plugin->signal(SIGTERM);
  EXPECT_EQ(new_plugin->wait(10s), 0) << new_plugin->output();
  EXPECT_FALSE(label()) << node().dump();
}

TEST_F(NodeStatusProcessTest, AnUnreachableApiServerNeverHoldsUpTheRegistrationOrTheStop) {
  server_.reset();  // nothing listens on the port any more
  KubeletRegistrationStandin kubelet(plugin_dir_);
  auto shim = start_shim();
  ASSERT_TRUE(wait_logged(*shim, "registered with the kubelet")) << shim->output();
  shim->signal(SIGTERM);
  // The release is one call that fails at once (connection refused).
  EXPECT_EQ(shim->wait(10s), 0) << shim->output();
}

}  // namespace
