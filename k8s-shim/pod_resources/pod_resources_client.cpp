#include "k8s-shim/pod_resources/pod_resources_client.h"

#include <grpcpp/grpcpp.h>

namespace shim {

PodResourcesClient::PodResourcesClient(std::string socket_path, std::chrono::milliseconds deadline)
    : socket_path_(std::move(socket_path)), deadline_(deadline) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReplyBytes);
  // gRPC's default back-off grows to two minutes; a restarted kubelet should be seen within a
  // scrape or two.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // gRPC spells absolute socket paths unix:///path and relative ones unix:path.
  const std::string target =
      socket_path_.starts_with('/') ? "unix://" + socket_path_ : "unix:" + socket_path_;
  auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  stub_ = v1::PodResourcesLister::NewStub(channel);
}

xpu::Result<v1::ListPodResourcesResponse> PodResourcesClient::list() {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline_);
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  grpc::Status status = stub_->List(&context, request, &response);
  if (!status.ok())
    return xpu::Error{"pod-resources List on " + socket_path_ +
                      " failed: " + status.error_message() + " (gRPC code " +
                      std::to_string(static_cast<int>(status.error_code())) + ")"};
  return response;
}

}  // namespace shim
