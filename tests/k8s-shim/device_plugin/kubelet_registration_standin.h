// The kubelet's Registration service on kubelet.sock, as far as the device plugin's process tests
// need it: it counts the Register calls and answers OK, or, while held, keeps the answer back
// until released or the caller cancels (a kubelet that is slow to answer).
#pragma once

#include <deviceplugin_v1beta1.grpc.pb.h>

#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>

#include <grpcpp/server.h>

namespace xpu::test {

class KubeletRegistrationStandin final : public v1beta1::Registration::Service {
 public:
  explicit KubeletRegistrationStandin(const std::filesystem::path& plugin_dir);
  ~KubeletRegistrationStandin() override;
  KubeletRegistrationStandin(const KubeletRegistrationStandin&) = delete;
  KubeletRegistrationStandin& operator=(const KubeletRegistrationStandin&) = delete;

  void hold(bool on);
  std::size_t registrations() const;        // Register calls received
  std::size_t held_then_cancelled() const;  // held calls their caller cancelled

  grpc::Status Register(grpc::ServerContext* context, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty* response) override;

 private:
  mutable std::mutex mutex_;
  std::condition_variable released_;
  bool hold_ = false;
  std::size_t registrations_ = 0;
  std::size_t cancelled_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace xpu::test
