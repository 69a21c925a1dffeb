// The watch a new plugin keeps on the server it replaced, against the real gRPC server of a
// PluginServer: it stays open while that server serves, even with a ListAndWatch stream of the
// kubelet's open and after another server took the path, and ends when that server stops.
#include <sys/socket.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <thread>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "common/unique_fd.h"
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

// Not a gRPC server: one that sends much (more than one look reads, which is bounded so that a
// server sending without end cannot hold the plugin's loop) and then closes. The data is no end;
// the close is, once the data before it is read.
TEST_F(PredecessorWatchTest, AServerThatSentMuchBeforeClosingIsSeenClosed) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
  xpu::UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(listener.valid());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);

  auto watch = PredecessorWatch::connect(path_);
  ASSERT_TRUE(watch.has_value());
  std::thread sender([&listener] {
    xpu::UniqueFd connection(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    const std::string chunk(64 * 1024, 'x');
    for (int i = 0; i < 64 && connection.valid(); ++i)  // 4 MiB, then it closes
      if (::send(connection.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;
  });
  EXPECT_TRUE(wait_until([&] { return watch->closed(); }, 30s)) << "the end after the data";
  sender.join();
  EXPECT_TRUE(watch->closed()) << "and it stays so";
}

}  // namespace
}  // namespace shim
