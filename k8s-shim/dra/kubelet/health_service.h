// The kubelet's DRA health service, served on dra.sock beside DRAPlugin in both versions the
// kubelet speaks: v1alpha1.DRAResourceHealth (1.34's alpha gate) and v1.DRAResourceHealth (GA).
// Each open NodeWatchResources stream gets every card's health at once, again on every change,
// and again every resend interval so the kubelet never times a card out (it shows a device as
// Unknown once 30 s pass without a report of it).
//
// One HealthService holds the one health state both versions report (the cards, their last change
// times, the stream limit, close_all, the resend); grpc_services() are two thin gRPC classes that
// hand their streams to the same loop, so a kubelet of either version sees the same changes.
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

#include "common/xpud_types.h"
#include "dra_health_v1.grpc.pb.h"
#include "dra_health_v1alpha1.grpc.pb.h"

namespace shim::dra {

namespace healthpb = ::v1alpha1;
namespace healthv1pb = ::v1;

class HealthService {
 public:
  // The kubelet holds one stream; a few more cover a reconnect racing the old stream's end. The
  // limit counts the streams of both versions (each holds a server thread).
  static constexpr std::size_t kMaxStreams = 4;
  // A third of the kubelet's 30 s health timeout: two lost resends still keep a card fresh.
  static constexpr std::chrono::milliseconds kResendInterval{std::chrono::seconds(10)};
  // v1's DeviceHealth.message: the kubelet keeps at most this many characters.
  static constexpr std::size_t kMaxMessageBytes = 1024;

  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // pool_name: the node's pool (the node name). `now` stamps health changes (tests pass their own).
  explicit HealthService(
      std::string pool_name, std::chrono::milliseconds resend_interval = kResendInterval,
      Clock now = [] { return std::chrono::system_clock::now(); });
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  // The gRPC services to register on dra.sock (v1alpha1, then v1). They call back into this
  // object, which must outlive the server.
  std::vector<grpc::Service*> grpc_services() { return {&v1alpha1_, &v1_}; }

  // xpud's view now. A physical function with SR-IOV on is skipped (never published: its
  // virtual functions are); a card or VF whose health differs from the last view gets a new
  // last_updated_time. Cards no longer listed leave the messages (the kubelet shows them Unknown
  // after its timeout). Never blocks on a stream.
  void update(const std::vector<xpu::DeviceInfo>& cards);
  // Ends the streams open now, of both versions, with OK (for shutdown, before the server stops,
  // so the server's grace period is not spent waiting on them). Later streams are served again.
  void close_all();

  // Streams being served now, of both versions.
  std::size_t open_streams() const;

 private:
  struct DeviceState {
    bool healthy = false;
    std::int64_t since = 0;  // unix seconds of the last health change
    std::string reason;      // xpud's reason while unhealthy, cut to kMaxMessageBytes; else empty
    bool operator==(const DeviceState&) const = default;
  };

  class V1alpha1Api final : public healthpb::DRAResourceHealth::Service {
   public:
    explicit V1alpha1Api(HealthService& health) : health_(health) {}
    grpc::Status NodeWatchResources(
        grpc::ServerContext* context, const healthpb::NodeWatchResourcesRequest* request,
        grpc::ServerWriter<healthpb::NodeWatchResourcesResponse>* writer) override;

   private:
    HealthService& health_;
  };
  class V1Api final : public healthv1pb::DRAResourceHealth::Service {
   public:
    explicit V1Api(HealthService& health) : health_(health) {}
    grpc::Status NodeWatchResources(
        grpc::ServerContext* context, const healthv1pb::NodeWatchResourcesRequest* request,
        grpc::ServerWriter<healthv1pb::NodeWatchResourcesResponse>* writer) override;

   private:
    HealthService& health_;
  };

  // One stream's life, whichever version: Response picks the snapshot it sends.
  template <typename Response>
  grpc::Status watch(grpc::ServerContext* context, grpc::ServerWriter<Response>* writer);
  void rebuild_snapshots();  // from devices_; mutex_ held
  void release_stream();

  const std::string pool_name_;
  const std::chrono::milliseconds resend_interval_;
  const Clock now_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<unsigned, DeviceState> devices_;  // by card index; guarded by mutex_
  // What a stream of each version sends; guarded by mutex_.
  std::shared_ptr<const healthpb::NodeWatchResourcesResponse> v1alpha1_snapshot_;
  std::shared_ptr<const healthv1pb::NodeWatchResourcesResponse> v1_snapshot_;
  std::uint64_t version_ = 0;      // bumps when the snapshots change; guarded by mutex_
  std::uint64_t close_epoch_ = 0;  // bumps on close_all(); guarded by mutex_
  std::size_t streams_ = 0;        // both versions; guarded by mutex_

  V1alpha1Api v1alpha1_{*this};
  V1Api v1_{*this};
};

}  // namespace shim::dra
