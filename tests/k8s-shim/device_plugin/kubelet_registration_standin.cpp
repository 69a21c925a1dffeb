#include "tests/k8s-shim/device_plugin/kubelet_registration_standin.h"

#include <chrono>
#include <stdexcept>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

namespace xpu::test {
namespace {

constexpr const char* kSpareSocketName = "kubelet.sock.next";

}  // namespace

KubeletRegistrationStandin::KubeletRegistrationStandin(const std::filesystem::path& plugin_dir)
    : plugin_dir_(plugin_dir) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + (plugin_dir / "kubelet.sock").string(),
                           grpc::InsecureServerCredentials());
  builder.AddListeningPort("unix:" + (plugin_dir / kSpareSocketName).string(),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (!server_) throw std::runtime_error("cannot serve the kubelet stand-in");
}

KubeletRegistrationStandin::~KubeletRegistrationStandin() {
  hold(false);
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  // The watchers' streams end as the plugins they watch stop; a plugin still running when the
  // test ends is stopped by the test's own teardown before this, so joining does not hang.
  watchers_.clear();
}

void KubeletRegistrationStandin::hold(bool on) {
  std::lock_guard lock(mutex_);
  hold_ = on;
  released_.notify_all();
}

void KubeletRegistrationStandin::keyed_by_endpoint() {
  std::lock_guard lock(mutex_);
  keyed_ = true;
}

void KubeletRegistrationStandin::never_let_go(const std::string& endpoint) {
  std::lock_guard lock(mutex_);
  connected_.insert(endpoint);
  forgotten_.insert(endpoint);
}

void KubeletRegistrationStandin::restart_after_the_next_register() {
  std::lock_guard lock(mutex_);
  restart_next_ = true;
}

void KubeletRegistrationStandin::connect_after_the_next_caller_gave_up() {
  std::lock_guard lock(mutex_);
  connect_late_ = true;
}

std::size_t KubeletRegistrationStandin::registrations() const {
  std::lock_guard lock(mutex_);
  return registrations_;
}

std::size_t KubeletRegistrationStandin::registrations_since_restart() const {
  std::lock_guard lock(mutex_);
  return registrations_since_restart_;
}

std::size_t KubeletRegistrationStandin::held_then_cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

std::vector<std::string> KubeletRegistrationStandin::endpoints_registered() const {
  std::lock_guard lock(mutex_);
  return endpoints_;
}

std::size_t KubeletRegistrationStandin::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

std::size_t KubeletRegistrationStandin::streams_opened(const std::string& endpoint) const {
  std::lock_guard lock(mutex_);
  auto it = streams_.find(endpoint);
  return it == streams_.end() ? 0 : it->second;
}

grpc::Status KubeletRegistrationStandin::Register(grpc::ServerContext* context,
                                                  const v1beta1::RegisterRequest* request,
                                                  v1beta1::Empty* /*response*/) {
  std::unique_lock lock(mutex_);
  ++registrations_;
  if (epoch_ > 0) ++registrations_since_restart_;
  endpoints_.push_back(request->endpoint());
  if (keyed_ && connect_late_ && !connected_.contains(request->endpoint())) {
    connect_late_ = false;
    while (!context->IsCancelled()) released_.wait_for(lock, std::chrono::milliseconds(5));
    ++cancelled_;
    lock.unlock();
    (void)connect(request->endpoint());
    return grpc::Status::CANCELLED;
  }
  if (keyed_) {
    if (connected_.contains(request->endpoint())) {
      ++refused_;
      forgotten_.insert(request->endpoint());
      return {grpc::StatusCode::UNKNOWN,
              "device plugin already connected: " + (plugin_dir_ / request->endpoint()).string()};
    }
    lock.unlock();
    grpc::Status connected = connect(request->endpoint());
    lock.lock();
    if (!connected.ok()) return connected;
  }
  if (restart_next_) {
    restart_next_ = false;
    ++epoch_;
    connected_.clear();
    forgotten_.clear();
    std::filesystem::rename(plugin_dir_ / kSpareSocketName, plugin_dir_ / "kubelet.sock");
  }
  // A sync handler learns of a cancellation only by asking, so it asks every few milliseconds.
  while (hold_) {
    if (context->IsCancelled()) {
      ++cancelled_;
      return grpc::Status::CANCELLED;
    }
    released_.wait_for(lock, std::chrono::milliseconds(5));
  }
  return grpc::Status::OK;
}

grpc::Status KubeletRegistrationStandin::connect(const std::string& endpoint) {
  auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix:" + (plugin_dir_ / endpoint).string(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1beta1::DevicePluginOptions options;
  grpc::Status status = stub->GetDevicePluginOptions(&context, v1beta1::Empty{}, &options);
  if (!status.ok()) return status;
  std::lock_guard lock(mutex_);
  connected_.insert(endpoint);
  watchers_.emplace_back([this, endpoint, epoch = epoch_] { watch(endpoint, epoch); });
  return grpc::Status::OK;
}

void KubeletRegistrationStandin::watch(std::string endpoint, unsigned epoch) {
  auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix:" + (plugin_dir_ / endpoint).string(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto reader = stub->ListAndWatch(&context, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse message;
  bool first = true;
  while (reader->Read(&message)) {
    if (!first) continue;
    first = false;
    std::lock_guard lock(mutex_);
    ++streams_[endpoint];
  }
  reader->Finish();
  std::lock_guard lock(mutex_);
  // A stream of the kubelet before a restart is not in the books the kubelet keeps now.
  if (epoch == epoch_ && !forgotten_.contains(endpoint)) connected_.erase(endpoint);
}

}  // namespace xpu::test
