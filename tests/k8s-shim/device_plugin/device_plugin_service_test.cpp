// The DevicePlugin gRPC service in-process: a real server on a unix socket, a real gRPC client.
#include <sys/socket.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "k8s-shim/device_plugin/plugin_server.h"
#include "tests/support/child_process.h"
#include "tests/support/resource_state_builder.h"

namespace shim {
namespace {

using namespace std::chrono_literals;

ResourceState eight_cards() {
  ResourceState state = xpu::test::whole_cards({0, 1, 2, 3, 4, 5, 6, 7});
  for (auto& d : state.devices) {
    const unsigned i = d.index;
    d.numa_node = i < 4 ? 0 : 1;
    for (unsigned j = 0; j < 8; ++j)
      if (j != i && ((i < 4) == (j < 4) || j == (i + 4) % 8))
        d.linked_ids.push_back("uuid-" + std::to_string(j));
  }
  state.devices[7].numa_node = -1;  // unknown: no topology on the wire
  return state;
}

std::chrono::system_clock::time_point in(std::chrono::milliseconds ms) {
  return std::chrono::system_clock::now() + ms;
}

// A client of the plugin's socket, as the kubelet connects.
std::unique_ptr<v1beta1::DevicePlugin::Stub> connect(const std::filesystem::path& socket) {
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials()));
}

class DevicePluginServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = PluginServer::start(socket_path(), feed_, MemoryUnit::GiB);
    ASSERT_TRUE(server.ok()) << server.error();
    server_ = std::move(*server);
    stub_ = connect(socket_path());
  }
  std::filesystem::path socket_path() const { return dir_.path() / "kunlunxin-xpu.sock"; }

  xpu::test::TempDir dir_;
  std::shared_ptr<ResourceFeed> feed_ = std::make_shared<ResourceFeed>(eight_cards());
  std::unique_ptr<PluginServer> server_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(DevicePluginServiceTest, Options) {
  grpc::ClientContext context;
  context.set_deadline(in(5000ms));
  v1beta1::DevicePluginOptions options;
  ASSERT_TRUE(stub_->GetDevicePluginOptions(&context, v1beta1::Empty{}, &options).ok());
  EXPECT_TRUE(options.get_preferred_allocation_available());
  EXPECT_FALSE(options.pre_start_required());
}

TEST_F(DevicePluginServiceTest, ListAndWatchSendsTheFullListThenEveryChange) {
  grpc::ClientContext context;
  context.set_deadline(in(20000ms));
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  ASSERT_EQ(message.devices_size(), 8);
  EXPECT_EQ(message.devices(0).id(), "uuid-0");
  EXPECT_EQ(message.devices(0).health(), "Healthy");
  ASSERT_EQ(message.devices(5).topology().nodes_size(), 1);
  EXPECT_EQ(message.devices(5).topology().nodes(0).id(), 1);
  EXPECT_FALSE(message.devices(7).has_topology());

  auto state = eight_cards();
  state.devices[3].healthy = false;
  state.devices[3].unhealthy_reason = "test fault";
  const auto published = std::chrono::steady_clock::now();
  ASSERT_TRUE(feed_->publish(state));
  ASSERT_TRUE(reader->Read(&message));
  const auto latency = std::chrono::steady_clock::now() - published;
  EXPECT_EQ(message.devices_size(), 8);
  EXPECT_EQ(message.devices(3).health(), "Unhealthy");
  EXPECT_EQ(message.devices(2).health(), "Healthy");
  EXPECT_LT(latency, 1s) << "the spec asks for 100 ms; 1 s leaves room for a loaded CI machine";

  // Many changes in a burst: the stream may skip intermediate states but always ends on the last.
  for (unsigned round = 0; round < 50; ++round) {
    state.devices[round % 8].healthy = !state.devices[round % 8].healthy;
    feed_->publish(state);
  }
  const auto expected = ResourceFeed(state).latest();
  auto wire_equal = [&](const v1beta1::ListAndWatchResponse& m) {
    for (int i = 0; i < m.devices_size(); ++i)
      if ((m.devices(i).health() == "Healthy") !=
          expected.state->devices[static_cast<std::size_t>(i)].healthy)
        return false;
    return m.devices_size() == 8;
  };
  int messages = 0;
  while (reader->Read(&message)) {
    ++messages;
    if (wire_equal(message)) break;
  }
  EXPECT_TRUE(wire_equal(message)) << "the last state never arrived";
  EXPECT_LE(messages, 50);
}

TEST_F(DevicePluginServiceTest, AStreamThatDoesNotReadHoldsUpNobody) {
  // Big messages, so the stalled stream's flow-control window fills up quickly.
  auto big = eight_cards();
  for (unsigned i = 8; i < 400; ++i) {
    PluginDevice d = big.devices[0];
    d.id = "padding-device-with-a-rather-long-identifier-" + std::to_string(i);
    d.index = i;
    big.devices.push_back(d);
  }
  grpc::ClientContext stalled_context;
  stalled_context.set_deadline(in(30000ms));
  auto stalled = stub_->ListAndWatch(&stalled_context, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(stalled->Read(&message));  // then never reads again

  grpc::ClientContext context;
  context.set_deadline(in(30000ms));
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty{});
  ASSERT_TRUE(reader->Read(&message));

  const auto started = std::chrono::steady_clock::now();
  for (unsigned round = 0; round < 300; ++round) {
    big.devices[round % 8].healthy = !big.devices[round % 8].healthy;
    feed_->publish(big);
  }
  // Blocked publishing would last until the stalled stream's 30 s deadline; the margin is for
  // sanitizer builds on a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 15s) << "publishing waited for a stream";
  const bool last_first_healthy = big.devices[0].healthy;
  big.devices[1].unhealthy_reason =
      "final";  // invisible on the wire; health of card 1 is the marker
  big.devices[1].healthy = !big.devices[1].healthy;
  feed_->publish(big);
  const bool last_second_healthy = big.devices[1].healthy;
  bool reached = false;
  while (!reached && reader->Read(&message)) {
    reached = message.devices_size() == 400 &&
              (message.devices(0).health() == "Healthy") == last_first_healthy &&
              (message.devices(1).health() == "Healthy") == last_second_healthy;
  }
  EXPECT_TRUE(reached) << "the reading stream never got the last state";
  stalled_context.TryCancel();
}

TEST_F(DevicePluginServiceTest, StoppingTheServerEndsStreamsAndRemovesTheSocket) {
  grpc::ClientContext context;
  context.set_deadline(in(20000ms));
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  ASSERT_TRUE(server_->socket_present());
  const auto started = std::chrono::steady_clock::now();
  server_.reset();
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_FALSE(std::filesystem::exists(socket_path()));
}

TEST_F(DevicePluginServiceTest, ClosingTheFeedEndsStreamsCleanly) {
  grpc::ClientContext context;
  context.set_deadline(in(20000ms));
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  feed_->close();
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(DevicePluginServiceTest, AllocateReturnsDevicesAndEnvironmentPerContainer) {
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("uuid-4");
  auto* second = request.add_container_requests();
  second->add_devices_ids("uuid-2");
  second->add_devices_ids("uuid-0");
  grpc::ClientContext context;
  context.set_deadline(in(5000ms));
  v1beta1::AllocateResponse response;
  auto status = stub_->Allocate(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 2);
  const auto& first = response.container_responses(0);
  ASSERT_EQ(first.devices_size(), 2);
  EXPECT_EQ(first.devices(0).host_path(), "/dev/xpu4");
  EXPECT_EQ(first.devices(0).container_path(), "/dev/xpu4");
  EXPECT_EQ(first.devices(0).permissions(), "rw");
  EXPECT_EQ(first.devices(1).host_path(), "/dev/xpuctrl");
  EXPECT_EQ(first.envs().at("XPU_VISIBLE_DEVICES"), "4");
  const auto& both = response.container_responses(1);
  ASSERT_EQ(both.devices_size(), 3);
  EXPECT_EQ(both.devices(0).host_path(), "/dev/xpu0");
  EXPECT_EQ(both.devices(1).host_path(), "/dev/xpu2");
  EXPECT_EQ(both.devices(2).host_path(), "/dev/xpuctrl");
  EXPECT_EQ(both.envs().at("XPU_VISIBLE_DEVICES"), "0,2");
  EXPECT_EQ(both.envs().at("CXPU_VISIBLE_DEVICES"), "0,2");
  EXPECT_EQ(both.envs().at("KUNLUNXIN_XPU_UUIDS"), "uuid-0,uuid-2");
  EXPECT_EQ(both.mounts_size(), 0);
}

TEST_F(DevicePluginServiceTest, AllocateFailsAsAWhole) {
  auto state = eight_cards();
  state.devices[5].healthy = false;
  state.devices[5].unhealthy_reason = "test fault";
  feed_->publish(state);
  auto call = [&](std::vector<std::vector<std::string>> containers) {
    v1beta1::AllocateRequest request;
    for (const auto& ids : containers) {
      auto* c = request.add_container_requests();
      for (const auto& id : ids) c->add_devices_ids(id);
    }
    grpc::ClientContext context;
    context.set_deadline(in(5000ms));
    v1beta1::AllocateResponse response;
    auto status = stub_->Allocate(&context, request, &response);
    EXPECT_EQ(response.container_responses_size(), 0);
    return status;
  };
  auto unknown = call({{"uuid-0"}, {"uuid-1", "no-such-card"}});
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(
      unknown.error_message(),
      "container request 1: device 'no-such-card' is not a kunlunxin.com/xpu device of this node");
  auto unhealthy = call({{"uuid-5"}});
  EXPECT_EQ(unhealthy.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(unhealthy.error_message(),
            "container request 0: device 'uuid-5' (xpu5) is Unhealthy: test fault");
  auto none = call({});
  EXPECT_EQ(none.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(DevicePluginServiceTest, PreferredAllocationUsesTheTopology) {
  v1beta1::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  for (unsigned i : {7u, 6u, 5u, 4u, 3u, 1u, 0u})
    c->add_available_deviceids("uuid-" + std::to_string(i));
  c->add_must_include_deviceids("uuid-0");
  c->set_allocation_size(4);
  grpc::ClientContext context;
  context.set_deadline(in(5000ms));
  v1beta1::PreferredAllocationResponse response;
  auto status = stub_->GetPreferredAllocation(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 1);
  const auto& ids = response.container_responses(0).deviceids();
  // Card 2 is taken, so no half is free with card 0: the linked group 0-1-4-5.
  EXPECT_EQ(std::vector<std::string>(ids.begin(), ids.end()),
            (std::vector<std::string>{"uuid-0", "uuid-1", "uuid-4", "uuid-5"}));

  c->set_allocation_size(9);
  grpc::ClientContext again;
  again.set_deadline(in(5000ms));
  v1beta1::PreferredAllocationResponse rejected;
  auto bad = stub_->GetPreferredAllocation(&again, request, &rejected);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad.error_message(),
            "container request 0: allocation size 9 exceeds the 7 available devices");
}

TEST(DevicePluginServiceRefresh, ADecisionReadsTheFeedAfterTheRefreshItAsksFor) {
  // The kubelet offers cards 0 and 1, as last advertised; meanwhile a pod took card 0 through a
  // DRA claim, which only the refresh (the held-cards watch's fresh answer) tells.
  xpu::test::TempDir dir;
  auto feed = std::make_shared<ResourceFeed>(eight_cards());
  std::atomic<int> refreshes{0};
  auto refresh = [&feed, &refreshes] {
    ++refreshes;
    ResourceState state = eight_cards();
    state.devices.erase(state.devices.begin());
    feed->publish(state);
  };
  const auto path = dir.path() / "kunlunxin-xpu.sock";
  auto server = PluginServer::start(path, feed, MemoryUnit::GiB, CdiMode::kOff,
                                    {.refresh = refresh, .allocations = nullptr});
  ASSERT_TRUE(server.ok()) << server.error();
  auto stub = connect(path);

  v1beta1::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  c->add_available_deviceids("uuid-0");
  c->add_available_deviceids("uuid-1");
  c->set_allocation_size(1);
  grpc::ClientContext context;
  context.set_deadline(in(5000ms));
  v1beta1::PreferredAllocationResponse preferred;
  auto status = stub->GetPreferredAllocation(&context, request, &preferred);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(refreshes.load(), 1);
  ASSERT_EQ(preferred.container_responses_size(), 1);
  ASSERT_EQ(preferred.container_responses(0).deviceids_size(), 1);
  // Without the refresh the lowest index, card 0, would be preferred.
  EXPECT_EQ(preferred.container_responses(0).deviceids(0), "uuid-1");

  // A kubelet that asks for the held card anyway (no free card left) is refused, not given it.
  // Allocate does not ask again: a List while the kubelet's Allocate is under way frees the
  // devices it is handing out (device_plugin_service.cpp).
  v1beta1::AllocateRequest allocate;
  allocate.add_container_requests()->add_devices_ids("uuid-0");
  grpc::ClientContext again;
  again.set_deadline(in(5000ms));
  v1beta1::AllocateResponse response;
  auto refused = stub->Allocate(&again, allocate, &response);
  EXPECT_EQ(refreshes.load(), 1);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(response.container_responses_size(), 0);
}

TEST(DevicePluginServiceRefresh, ACallUnderWayIsCountedUntilItAnswers) {
  // A stopping plugin waits for these before it ends the streams (the kubelet would cancel them).
  xpu::test::TempDir dir;
  auto feed = std::make_shared<ResourceFeed>(eight_cards());
  std::mutex mutex;
  std::condition_variable changed;
  bool entered = false;
  bool release = false;
  auto refresh = [&] {
    std::unique_lock lock(mutex);
    entered = true;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
  };
  const auto path = dir.path() / "kunlunxin-xpu.sock";
  auto server = PluginServer::start(path, feed, MemoryUnit::GiB, CdiMode::kOff,
                                    {.refresh = refresh, .allocations = nullptr});
  ASSERT_TRUE(server.ok()) << server.error();
  EXPECT_EQ((*server)->decisions_under_way(), 0U);
  auto stub = connect(path);
  grpc::Status status;
  std::thread call([&] {
    v1beta1::PreferredAllocationRequest request;
    auto* c = request.add_container_requests();
    c->add_available_deviceids("uuid-3");
    c->set_allocation_size(1);
    grpc::ClientContext context;
    context.set_deadline(in(30000ms));
    v1beta1::PreferredAllocationResponse response;
    status = stub->GetPreferredAllocation(&context, request, &response);
  });
  {
    std::unique_lock lock(mutex);
    // EXPECT, not ASSERT: the call's thread is released and joined either way.
    EXPECT_TRUE(changed.wait_for(lock, 20s, [&] { return entered; }));
  }
  EXPECT_EQ((*server)->decisions_under_way(), 1U);
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  changed.notify_all();
  call.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ((*server)->decisions_under_way(), 0U);
}

TEST_F(DevicePluginServiceTest, SharedResourceSpreadsAndAllocatesCards) {
  const ResourceState shared = xpu::test::shared_cards({0, 1}, 4);
  ASSERT_TRUE(feed_->publish(shared));

  v1beta1::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  for (const auto& d : shared.devices) c->add_available_deviceids(d.id);
  c->set_allocation_size(2);
  grpc::ClientContext context;
  context.set_deadline(in(5000ms));
  v1beta1::PreferredAllocationResponse response;
  auto status = stub_->GetPreferredAllocation(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const auto& ids = response.container_responses(0).deviceids();
  EXPECT_EQ(std::vector<std::string>(ids.begin(), ids.end()),
            (std::vector<std::string>{"uuid-0::0", "uuid-1::0"}));

  v1beta1::AllocateRequest allocate;
  auto* a = allocate.add_container_requests();
  a->add_devices_ids("uuid-1::2");
  a->add_devices_ids("uuid-1::0");
  grpc::ClientContext again;
  again.set_deadline(in(5000ms));
  v1beta1::AllocateResponse granted;
  auto ok = stub_->Allocate(&again, allocate, &granted);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  const auto& container = granted.container_responses(0);
  EXPECT_EQ(container.envs().at("XPU_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(container.envs().at("KUNLUNXIN_XPU_UUIDS"), "uuid-1");
  ASSERT_EQ(container.devices_size(), 2);
  EXPECT_EQ(container.devices(0).host_path(), "/dev/xpu1");
  EXPECT_EQ(container.devices(1).host_path(), "/dev/xpuctrl");
}

TEST_F(DevicePluginServiceTest, MemoryUnitsComeFromOneCardAndCarryTheirLimit) {
  // Card 0 has 8 units of 1 GiB, card 1 has 4: a request for 3 fits card 1 best.
  const ResourceState units = xpu::test::memory_unit_cards({0, 1}, {8, 4});
  ASSERT_TRUE(feed_->publish(units));

  v1beta1::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  for (const auto& d : units.devices) c->add_available_deviceids(d.id);
  c->set_allocation_size(3);
  grpc::ClientContext context;
  context.set_deadline(in(5000ms));
  v1beta1::PreferredAllocationResponse response;
  auto status = stub_->GetPreferredAllocation(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const auto& ids = response.container_responses(0).deviceids();
  EXPECT_EQ(std::vector<std::string>(ids.begin(), ids.end()),
            (std::vector<std::string>{"uuid-1::m0", "uuid-1::m1", "uuid-1::m2"}));

  v1beta1::AllocateRequest allocate;
  auto* a = allocate.add_container_requests();
  for (const auto* id : {"uuid-1::m0", "uuid-1::m1", "uuid-1::m2"}) a->add_devices_ids(id);
  grpc::ClientContext again;
  again.set_deadline(in(5000ms));
  v1beta1::AllocateResponse granted;
  auto ok = stub_->Allocate(&again, allocate, &granted);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  const auto& container = granted.container_responses(0);
  EXPECT_EQ(container.envs().at("XPU_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(container.envs().at("CXPU_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(container.envs().at("KUNLUNXIN_XPU_UUIDS"), "uuid-1");
  EXPECT_EQ(container.envs().at("CXPU_CONTAINER_MEMORY_LIMIT"), std::to_string(3ull << 30));
  ASSERT_EQ(container.devices_size(), 2);
  EXPECT_EQ(container.devices(0).host_path(), "/dev/xpu1");

  // An ID that is no unit of this node fails the call with its name.
  v1beta1::AllocateRequest bad;
  bad.add_container_requests()->add_devices_ids("uuid-1::m4");
  grpc::ClientContext third;
  third.set_deadline(in(5000ms));
  v1beta1::AllocateResponse refused;
  auto error = stub_->Allocate(&third, bad, &refused);
  EXPECT_EQ(error.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(error.error_message(),
            "container request 0: device 'uuid-1::m4' is not a kunlunxin.com/vxpu-memory device "
            "of this node");
}

TEST(PluginServer, ReplacesAStaleSocketButNothingElse) {
  xpu::test::TempDir dir;
  auto feed = std::make_shared<ResourceFeed>(eight_cards());
  const auto path = dir.path() / "kunlunxin-xpu.sock";
  {
    // A socket left behind by a crashed run: bound, then nobody listening.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ::close(fd);
  }
  auto server = PluginServer::start(path, feed, MemoryUnit::MiB);
  ASSERT_TRUE(server.ok()) << server.error();
  EXPECT_TRUE((*server)->socket_present());
  server->reset();

  const auto file = dir.path() / "not-a-socket.sock";
  std::ofstream(file) << "keep me";
  auto refused = PluginServer::start(file, feed, MemoryUnit::MiB);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), file.string() + " exists and is not a socket; refusing to replace it");
  EXPECT_TRUE(std::filesystem::exists(file));

  auto too_long = PluginServer::start(dir.path() / std::string(120, 'x'), feed, MemoryUnit::MiB);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().find("longer than a unix socket address allows"), std::string::npos);
}

}  // namespace
}  // namespace shim
