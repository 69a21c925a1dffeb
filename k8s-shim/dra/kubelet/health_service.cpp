#include "k8s-shim/dra/kubelet/health_service.h"

#include <optional>
#include <type_traits>

#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/offered_cards.h"
#include "k8s-shim/printable.h"

namespace shim::dra {
namespace {

// The sync API tells a handler of the client's cancel only when asked: a waiting stream looks
// this often. A stream blocked in Write learns of it from Write itself.
constexpr std::chrono::milliseconds kCancelCheck{50};

std::int64_t unix_seconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count();
}

// The two versions' messages share field names and numbers; only the enum's namespace differs.
template <typename Response, typename Pb, typename Devices>
std::shared_ptr<const Response> build(const std::string& pool_name, const Devices& devices) {
  auto response = std::make_shared<Response>();
  for (const auto& [index, state] : devices) {
    auto* device = response->add_devices();
    device->mutable_device()->set_pool_name(pool_name);
    device->mutable_device()->set_device_name(device_name(index));
    device->set_health(state.healthy ? Pb::HEALTHY : Pb::UNHEALTHY);
    device->set_last_updated_time(state.since);
    // health_check_timeout_seconds stays 0 (the kubelet's default, 30 s): we resend every 10 s,
    // so the default already covers two lost resends, and a longer one would only delay the
    // kubelet noticing that we stopped reporting a card.
    // Only v1 has a message field.
    if constexpr (std::is_same_v<Response, healthv1pb::NodeWatchResourcesResponse>)
      if (!state.reason.empty()) device->set_message(state.reason);
  }
  return response;
}

}  // namespace

HealthService::HealthService(std::string pool_name, std::chrono::milliseconds resend_interval,
                             Clock now)
    : pool_name_(std::move(pool_name)), resend_interval_(resend_interval), now_(std::move(now)) {
  rebuild_snapshots();
}

void HealthService::update(const std::vector<xpu::DeviceInfo>& cards) {
  const std::int64_t now = unix_seconds(now_());
  std::lock_guard lock(mutex_);
  std::map<unsigned, DeviceState> next;
  for (const auto& card : cards) {
    if (!is_preparable(card)) continue;
    auto known = devices_.find(card.index);
    const bool unchanged = known != devices_.end() && known->second.healthy == card.healthy;
    next[card.index] = DeviceState{
        card.healthy, unchanged ? known->second.since : now,
        card.healthy ? std::string() : truncate_utf8(card.health_reason, kMaxMessageBytes)};
  }
  // xpud's view changes in ways the kubelet does not see (counters, a healthy card's reason): no
  // message then. A new reason of an unhealthy card is news to v1 only; v1alpha1 streams then
  // resend what they sent, which the kubelet merges as no change.
  if (next == devices_) return;
  devices_ = std::move(next);
  rebuild_snapshots();
  ++version_;
  changed_.notify_all();
}

void HealthService::rebuild_snapshots() {
  v1alpha1_snapshot_ =
      build<healthpb::NodeWatchResourcesResponse, healthpb::HealthStatus>(pool_name_, devices_);
  v1_snapshot_ =
      build<healthv1pb::NodeWatchResourcesResponse, healthv1pb::HealthStatus>(pool_name_, devices_);
}

void HealthService::close_all() {
  std::lock_guard lock(mutex_);
  ++close_epoch_;
  changed_.notify_all();
}

std::size_t HealthService::open_streams() const {
  std::lock_guard lock(mutex_);
  return streams_;
}

void HealthService::release_stream() {
  std::lock_guard lock(mutex_);
  --streams_;
}

grpc::Status HealthService::V1alpha1Api::NodeWatchResources(
    grpc::ServerContext* context, const healthpb::NodeWatchResourcesRequest* /*request*/,
    grpc::ServerWriter<healthpb::NodeWatchResourcesResponse>* writer) {
  return health_.watch(context, writer);
}

grpc::Status HealthService::V1Api::NodeWatchResources(
    grpc::ServerContext* context, const healthv1pb::NodeWatchResourcesRequest* /*request*/,
    grpc::ServerWriter<healthv1pb::NodeWatchResourcesResponse>* writer) {
  return health_.watch(context, writer);
}

template <typename Response>
grpc::Status HealthService::watch(grpc::ServerContext* context,
                                  grpc::ServerWriter<Response>* writer) {
  {
    std::lock_guard lock(mutex_);
    // Each stream holds a server thread for its whole life: a client that opens many must not
    // take them all from the DRAPlugin calls.
    if (streams_ >= kMaxStreams)
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          "too many health streams open (at most " + std::to_string(kMaxStreams) + ")");
    ++streams_;
  }
  struct Slot {
    HealthService& service;
    ~Slot() { service.release_stream(); }
  } slot{*this};

  std::unique_lock lock(mutex_);
  const std::uint64_t epoch = close_epoch_;
  std::optional<std::uint64_t> sent;  // the version last written; none yet: send at once
  auto next_resend = std::chrono::steady_clock::now();
  while (true) {
    const auto wake = std::min(next_resend, std::chrono::steady_clock::now() + kCancelCheck);
    changed_.wait_until(lock, wake, [&] { return close_epoch_ != epoch || sent != version_; });
    if (close_epoch_ != epoch) return grpc::Status::OK;
    if (context->IsCancelled()) return grpc::Status::CANCELLED;
    if (sent == version_ && std::chrono::steady_clock::now() < next_resend) continue;

    std::shared_ptr<const Response> message;
    if constexpr (std::is_same_v<Response, healthpb::NodeWatchResourcesResponse>)
      message = v1alpha1_snapshot_;
    else
      message = v1_snapshot_;
    sent = version_;
    lock.unlock();
    const bool written = writer->Write(*message);
    lock.lock();
    if (!written) return grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading");
    next_resend = std::chrono::steady_clock::now() + resend_interval_;
  }
}

}  // namespace shim::dra
