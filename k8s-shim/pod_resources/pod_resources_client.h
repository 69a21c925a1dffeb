// The kubelet's pod-resources List over its unix socket, bounded by a deadline.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/result.h"
#include "podresources_v1.grpc.pb.h"

namespace shim {

inline constexpr std::string_view kDefaultPodResourcesSocket =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

class PodResourcesClient {
 public:
  // Replies on big nodes pass gRPC's default 4 MiB; 16 MiB leaves room for thousands of pods.
  static constexpr int kMaxReplyBytes = 16 * 1024 * 1024;

  PodResourcesClient(std::string socket_path, std::chrono::milliseconds deadline);

  // Thread-safe. Fails when the kubelet is not listening, errs or misses the deadline.
  xpu::Result<v1::ListPodResourcesResponse> list();

  const std::string& socket_path() const { return socket_path_; }

 private:
  std::string socket_path_;
  std::chrono::milliseconds deadline_;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub_;
};

}  // namespace shim
