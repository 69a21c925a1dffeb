// The watch against a pod-resources server in this process (the generated v1 service on a unix
// socket, as the kubelet serves it), read through the real client.
#include "k8s-shim/pod_resources/held_cards_watch.h"

#include <poll.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <gtest/gtest.h>

#include "k8s-shim/grpc/unix_socket_server.h"
#include "k8s-shim/pod_resources/pod_resources_client.h"
#include "podresources_v1.grpc.pb.h"
#include "tests/k8s-shim/pod_resources/reply_builder.h"
#include "tests/support/wait.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using test::ReplyBuilder;
using xpu::test::wait_until;

class FakePodResources final : public v1::PodResourcesLister::Service {
 public:
  void set_reply(const v1::ListPodResourcesResponse& reply) {
    std::lock_guard lock(mutex_);
    reply_ = reply;
  }
  void set_failing(bool failing) {
    std::lock_guard lock(mutex_);
    failing_ = failing;
  }
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    std::lock_guard lock(mutex_);
    if (failing_) return {grpc::StatusCode::UNAVAILABLE, "the kubelet is restarting"};
    *response = reply_;
    return grpc::Status::OK;
  }

 private:
  std::mutex mutex_;
  v1::ListPodResourcesResponse reply_;
  bool failing_ = false;
};

ReplyBuilder claim_on(const std::string& device) {
  ReplyBuilder reply;
  reply.container("ml", "train", "main")
      .claim("ml", "train-xpu")
      .claim_device("xpu.kunlunxin.com", "node-1", device);
  return reply;
}

bool readable(int fd) {
  pollfd entry{fd, POLLIN, 0};
  return ::poll(&entry, 1, 0) == 1;
}

class HeldCardsWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("held-cards-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    socket_ = dir_ / "kubelet.sock";
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  void serve() {
    auto server = UnixSocketServer::start(socket_, kubelet_);
    ASSERT_TRUE(server) << server.error();
    server_ = std::move(*server);
  }
  std::unique_ptr<HeldCardsWatch> watch() {
    auto client = std::make_shared<PodResourcesClient>(socket_.string(), 500ms);
    return std::make_unique<HeldCardsWatch>(
        HeldCardsWatch::Options{
            .socket_path = socket_.string(), .refresh = 50ms, .other_path = "DRA claims"},
        [client] { return client->list(); }, cards_held_through_dra);
  }

  std::filesystem::path dir_;
  std::filesystem::path socket_;
  FakePodResources kubelet_;
  std::unique_ptr<UnixSocketServer> server_;
};

TEST_F(HeldCardsWatchTest, FollowsTheHeldCardsAndWakesTheRoleOnEachChange) {
  kubelet_.set_reply(claim_on("xpu-1"));
  serve();
  auto held = watch();
  ASSERT_TRUE(wait_until([&] { return held->snapshot().answered; }));
  // The first answer is the reply's, not an empty one before it.
  EXPECT_EQ(held->snapshot().held.indices, (std::set<unsigned>{1}));
  EXPECT_TRUE(readable(held->wake_fd()));
  held->clear_wake();
  const std::uint64_t first = held->snapshot().generation;

  // The same reply again and again moves nothing.
  ASSERT_FALSE(wait_until([&] { return readable(held->wake_fd()); }, 300ms));
  EXPECT_EQ(held->snapshot().generation, first);

  kubelet_.set_reply(claim_on("xpu-2-shared"));
  ASSERT_TRUE(wait_until([&] { return readable(held->wake_fd()); }));
  EXPECT_EQ(held->snapshot().held.indices, (std::set<unsigned>{2}));
  held->clear_wake();

  kubelet_.set_reply({});  // released
  ASSERT_TRUE(wait_until([&] { return held->snapshot().held.empty(); }));
  EXPECT_TRUE(readable(held->wake_fd()));
}

TEST_F(HeldCardsWatchTest, NoSocketHoldsNothingAtOnceAndASocketLaterIsRead) {
  auto held = watch();
  ASSERT_TRUE(wait_until([&] { return held->snapshot().answered; }, 2s));
  EXPECT_TRUE(held->snapshot().held.empty());

  kubelet_.set_reply(claim_on("xpu-3"));
  serve();
  ASSERT_TRUE(wait_until([&] { return !held->snapshot().held.empty(); }));
  EXPECT_EQ(held->snapshot().held.indices, (std::set<unsigned>{3}));
}

TEST_F(HeldCardsWatchTest, AFailingOrRestartingKubeletKeepsTheLastAnswer) {
  kubelet_.set_reply(claim_on("xpu-1"));
  serve();
  auto held = watch();
  ASSERT_TRUE(wait_until([&] { return !held->snapshot().held.empty(); }));
  const std::uint64_t generation = held->snapshot().generation;

  kubelet_.set_failing(true);
  // Several refreshes (50 ms each) fail: the card stays held.
  EXPECT_FALSE(wait_until([&] { return held->snapshot().generation != generation; }, 400ms));
  // The kubelet restarting removes its socket for a moment.
  server_.reset();
  ASSERT_FALSE(std::filesystem::exists(socket_));
  EXPECT_FALSE(wait_until([&] { return held->snapshot().generation != generation; }, 400ms));
  EXPECT_EQ(held->snapshot().held.indices, (std::set<unsigned>{1}));

  kubelet_.set_failing(false);
  kubelet_.set_reply({});
  serve();
  ASSERT_TRUE(wait_until([&] { return held->snapshot().held.empty(); }));
}

TEST_F(HeldCardsWatchTest, AFreshAnswerComesAtOnceNotAtTheNextRefresh) {
  kubelet_.set_reply(claim_on("xpu-1"));
  serve();
  auto client = std::make_shared<PodResourcesClient>(socket_.string(), 500ms);
  HeldCardsWatch held(
      {.socket_path = socket_.string(), .refresh = std::chrono::hours(1), .other_path = "x"},
      [client] { return client->list(); }, cards_held_through_dra);
  ASSERT_TRUE(wait_until([&] { return held.snapshot().answered; }));
  const std::uint64_t first = held.snapshot().generation;

  // A pod took card 2 through a claim: the next refresh is an hour away.
  kubelet_.set_reply(claim_on("xpu-2"));
  EXPECT_EQ(held.snapshot().held.indices, (std::set<unsigned>{1}));
  const HeldCardsWatch::Snapshot fresh = held.fresh(std::chrono::steady_clock::now() + 30s);
  EXPECT_EQ(fresh.held.indices, (std::set<unsigned>{2}));
  EXPECT_GT(fresh.generation, first);
  // Asked again with nothing changed: the same answer, and the generation stays.
  EXPECT_EQ(held.fresh(std::chrono::steady_clock::now() + 30s).generation, fresh.generation);
}

TEST_F(HeldCardsWatchTest, AFreshAnswerThatDoesNotComeInTimeLeavesTheLastKnown) {
  // A List that hangs until the test lets it go, as a kubelet that does not answer.
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  int lists = 0;
  auto list = [&]() -> xpu::Result<v1::ListPodResourcesResponse> {
    std::unique_lock lock(mutex);
    if (lists++ == 0) return claim_on("xpu-1").reply();
    released.wait(lock, [&] { return release; });
    return claim_on("xpu-3").reply();
  };
  { std::ofstream(socket_.string()) << ""; }
  HeldCardsWatch held({.socket_path = socket_.string(), .refresh = 10ms, .other_path = "x"}, list,
                      cards_held_through_dra);
  ASSERT_TRUE(wait_until([&] { return held.snapshot().answered; }));
  const auto asked = std::chrono::steady_clock::now();
  const HeldCardsWatch::Snapshot stale = held.fresh(asked + 200ms);
  EXPECT_GE(std::chrono::steady_clock::now() - asked, 200ms);
  EXPECT_EQ(stale.held.indices, (std::set<unsigned>{1}));
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  released.notify_all();
  EXPECT_EQ(held.fresh(std::chrono::steady_clock::now() + 30s).held.indices,
            (std::set<unsigned>{3}));
}

TEST_F(HeldCardsWatchTest, AFirstListThatFailsLetsTheRoleOfferWithoutWaitingMore) {
  // A socket there whose List fails (a hung kubelet past the deadline).
  auto list = [] { return xpu::Result<v1::ListPodResourcesResponse>(xpu::Error{"deadline"}); };
  std::filesystem::create_directories(dir_);
  { std::ofstream(socket_.string()) << ""; }
  HeldCardsWatch held({.socket_path = socket_.string(), .refresh = 50ms, .other_path = "x"}, list,
                      cards_held_through_dra);
  ASSERT_TRUE(wait_until([&] { return held.snapshot().answered; }, 2s));
  EXPECT_TRUE(held.snapshot().held.empty());
}

}  // namespace
}  // namespace shim
