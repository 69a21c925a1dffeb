#include "k8s-shim/dra/kubelet/health_service.h"

#include <optional>

#include "k8s-shim/dra/dra_names.h"

namespace shim::dra {
namespace {

// The sync API tells a handler of the client's cancel only when asked: a waiting stream looks
// this often. A stream blocked in Write learns of it from Write itself.
constexpr std::chrono::milliseconds kCancelCheck{50};

std::int64_t unix_seconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count();
}

}  // namespace

HealthService::HealthService(std::string pool_name, std::chrono::milliseconds resend_interval,
                             Clock now)
    : pool_name_(std::move(pool_name)),
      resend_interval_(resend_interval),
      now_(std::move(now)),
      snapshot_(std::make_shared<const healthpb::NodeWatchResourcesResponse>()) {}

void HealthService::update(const std::vector<xpu::DeviceInfo>& cards) {
  const std::int64_t now = unix_seconds(now_());
  std::lock_guard lock(mutex_);
  std::map<unsigned, DeviceState> next;
  for (const auto& card : cards) {
    if (card.is_virtual_function) continue;
    auto known = devices_.find(card.index);
    const bool unchanged = known != devices_.end() && known->second.healthy == card.healthy;
    next[card.index] = DeviceState{card.healthy, unchanged ? known->second.since : now};
  }
  // xpud's view changes in ways the kubelet does not see (reasons, counters): no message then.
  if (next == devices_) return;
  devices_ = std::move(next);
  snapshot_ = build_snapshot();
  ++version_;
  changed_.notify_all();
}

HealthService::Snapshot HealthService::build_snapshot() const {
  auto response = std::make_shared<healthpb::NodeWatchResourcesResponse>();
  for (const auto& [index, state] : devices_) {
    healthpb::DeviceHealth* device = response->add_devices();
    device->mutable_device()->set_pool_name(pool_name_);
    device->mutable_device()->set_device_name(device_name(index));
    device->set_health(state.healthy ? healthpb::HEALTHY : healthpb::UNHEALTHY);
    device->set_last_updated_time(state.since);
  }
  return response;
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

grpc::Status HealthService::NodeWatchResources(
    grpc::ServerContext* context, const healthpb::NodeWatchResourcesRequest* /*request*/,
    grpc::ServerWriter<healthpb::NodeWatchResourcesResponse>* writer) {
  {
    std::lock_guard lock(mutex_);
    // Each stream holds a server thread for its whole life: a client that opens many must not
    // take them all from the DRAPlugin calls.
    if (streams_ >= kMaxStreams)
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "too many health streams open (at most " + std::to_string(kMaxStreams) +
                              ")");
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

    Snapshot snapshot = snapshot_;
    sent = version_;
    lock.unlock();
    const bool written = writer->Write(*snapshot);
    lock.lock();
    if (!written) return grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading");
    next_resend = std::chrono::steady_clock::now() + resend_interval_;
  }
}

}  // namespace shim::dra
