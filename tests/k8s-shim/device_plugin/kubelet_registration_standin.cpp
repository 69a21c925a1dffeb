#include "tests/k8s-shim/device_plugin/kubelet_registration_standin.h"

#include <chrono>
#include <stdexcept>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

namespace xpu::test {

KubeletRegistrationStandin::KubeletRegistrationStandin(const std::filesystem::path& plugin_dir) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + (plugin_dir / "kubelet.sock").string(),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (!server_) throw std::runtime_error("cannot serve the kubelet stand-in");
}

KubeletRegistrationStandin::~KubeletRegistrationStandin() {
  hold(false);
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
}

void KubeletRegistrationStandin::hold(bool on) {
  std::lock_guard lock(mutex_);
  hold_ = on;
  released_.notify_all();
}

std::size_t KubeletRegistrationStandin::registrations() const {
  std::lock_guard lock(mutex_);
  return registrations_;
}

std::size_t KubeletRegistrationStandin::held_then_cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

grpc::Status KubeletRegistrationStandin::Register(grpc::ServerContext* context,
                                                  const v1beta1::RegisterRequest* /*request*/,
                                                  v1beta1::Empty* /*response*/) {
  std::unique_lock lock(mutex_);
  ++registrations_;
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

}  // namespace xpu::test
