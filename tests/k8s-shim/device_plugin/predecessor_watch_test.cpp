// The watch a new plugin keeps on the server it replaced, against the real gRPC server of a
// PluginServer: it stays open while that server serves, even with a ListAndWatch stream of the
// kubelet's open and after another server took the path, and ends when that server stops.
#include <gtest/gtest.h>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "k8s-shim/device_plugin/plugin_server.h"
#include "k8s-shim/device_plugin/predecessor_watch.h"
#include "tests/support/child_process.h"
#include "tests/support/resource_state_builder.h"
#include "tests/support/wait.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using xpu::test::wait_until;

class PredecessorWatchTest : public ::testing::Test {
 protected:
  std::unique_ptr<PluginServer> serve() {
    auto server = PluginServer::start(path_, feed_, MemoryUnit::GiB);
    EXPECT_TRUE(server.ok()) << server.error();
    return server ? std::move(*server) : nullptr;
  }

  xpu::test::TempDir dir_;
  std::filesystem::path path_ = dir_.path() / "kunlunxin-xpu.sock";
  std::shared_ptr<ResourceFeed> feed_ =
      std::make_shared<ResourceFeed>(xpu::test::whole_cards({0, 1}));
};

TEST_F(PredecessorWatchTest, NothingToWatchWhereNobodyServes) {
  EXPECT_FALSE(PredecessorWatch::connect(path_).has_value()) << "no socket at all";
  auto server = serve();
  ASSERT_TRUE(server);
  server.reset();  // removes its socket
  EXPECT_FALSE(PredecessorWatch::connect(path_).has_value()) << "the socket was removed";
}

TEST_F(PredecessorWatchTest, OpenWhileTheOldServerServesAndClosedOnceItStops) {
  auto old_server = serve();
  ASSERT_TRUE(old_server);
  // The kubelet's stream on the old server.
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + path_.string(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 30s);
  auto stream = stub->ListAndWatch(&context, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(stream->Read(&message));

  auto watch = PredecessorWatch::connect(path_);
  ASSERT_TRUE(watch.has_value());
  auto new_server = serve();  // renamed over the old one's socket, as a rolling update's new pod
  ASSERT_TRUE(new_server);
  // Still open after a while: the old server keeps a connection that sent nothing.
  EXPECT_FALSE(wait_until([&] { return watch->closed(); }, 300ms));

  old_server.reset();
  EXPECT_TRUE(wait_until([&] { return watch->closed(); }, 10s));
  EXPECT_FALSE(stream->Read(&message)) << "the old server's stream ended";
  EXPECT_TRUE(watch->closed()) << "and stays closed";
}

}  // namespace
}  // namespace shim
