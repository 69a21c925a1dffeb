// The kubelet's DRA health service (v1alpha1.DRAResourceHealth), served on dra.sock beside
// DRAPlugin: each open NodeWatchResources stream gets every card's health at once, again on every
// change, and again every resend interval so the kubelet never times a card out (it shows a
// device as Unknown once 30 s pass without a report of it).
//
// Threads: the role's thread calls update() and close_all(); each stream runs on a gRPC server
// thread. One mutex guards the state, and no stream holds it while writing, so a slow kubelet
// never blocks update(). A stream always sends the newest snapshot: updates that arrive while a
// write is in flight collapse into one (latest state wins).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/xpud_client.h"
#include "dra_health_v1alpha1.grpc.pb.h"

namespace shim::dra {

namespace healthpb = ::v1alpha1;

class HealthService final : public healthpb::DRAResourceHealth::Service {
 public:
  // The kubelet holds one stream; a few more cover a reconnect racing the old stream's end.
  static constexpr std::size_t kMaxStreams = 4;
  // A third of the kubelet's 30 s health timeout: two lost resends still keep a card fresh.
  static constexpr std::chrono::milliseconds kResendInterval{std::chrono::seconds(10)};

  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // pool_name: the node's pool (the node name). `now` stamps health changes (tests pass their own).
  explicit HealthService(std::string pool_name,
                         std::chrono::milliseconds resend_interval = kResendInterval,
                         Clock now = [] { return std::chrono::system_clock::now(); });

  // xpud's view now. Virtual functions are skipped (they are not published as devices); a card
  // whose health differs from the last view gets a new last_updated_time. Cards no longer listed
  // leave the messages (the kubelet shows them Unknown after its timeout). Never blocks on a stream.
  void update(const std::vector<xpu::DeviceInfo>& cards);
  // Ends the streams open now with OK (for shutdown, before the server stops, so the server's
  // grace period is not spent waiting on them). Later streams are served again.
  void close_all();

  // Streams being served now.
  std::size_t open_streams() const;

  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const healthpb::NodeWatchResourcesRequest* request,
      grpc::ServerWriter<healthpb::NodeWatchResourcesResponse>* writer) override;

 private:
  struct DeviceState {
    bool healthy = false;
    std::int64_t since = 0;  // unix seconds of the last health change
    bool operator==(const DeviceState&) const = default;
  };
  using Snapshot = std::shared_ptr<const healthpb::NodeWatchResourcesResponse>;

  Snapshot build_snapshot() const;  // from devices_; mutex_ held
  void release_stream();

  const std::string pool_name_;
  const std::chrono::milliseconds resend_interval_;
  const Clock now_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<unsigned, DeviceState> devices_;  // by card index; guarded by mutex_
  Snapshot snapshot_;                         // what a stream sends; guarded by mutex_
  std::uint64_t version_ = 0;                 // bumps when snapshot_ changes; guarded by mutex_
  std::uint64_t close_epoch_ = 0;             // bumps on close_all(); guarded by mutex_
  std::size_t streams_ = 0;                   // guarded by mutex_
};

}  // namespace shim::dra
