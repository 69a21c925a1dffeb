// Calls as the kubelet makes them: a channel on a unix socket with authority "localhost", and
// methods named by their full gRPC paths as the kubelet's Go clients spell them, so a wrong
// package in our .proto files fails here rather than against a real kubelet.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/support/sync_stream.h>

namespace shim::dra::test {

inline constexpr const char* kPreparePath =
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources";
inline constexpr const char* kUnpreparePath =
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources";
inline constexpr const char* kGetInfoPath = "/pluginregistration.Registration/GetInfo";
inline constexpr const char* kNotifyPath =
    "/pluginregistration.Registration/NotifyRegistrationStatus";
inline constexpr const char* kWatchHealthPath = "/v1alpha1.DRAResourceHealth/NodeWatchResources";
inline constexpr const char* kWatchHealthV1Path = "/v1.DRAResourceHealth/NodeWatchResources";

inline std::shared_ptr<grpc::Channel> kubelet_channel(const std::filesystem::path& socket) {
  grpc::ChannelArguments arguments;
  arguments.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  return grpc::CreateCustomChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials(),
                                   arguments);
}

template <typename Request, typename Response>
grpc::Status call(const std::shared_ptr<grpc::Channel>& channel, const char* path,
                  const Request& request, Response* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::internal::RpcMethod method(path, grpc::internal::RpcMethod::NORMAL_RPC);
  return grpc::internal::BlockingUnaryCall(channel.get(), method, &context, request, response);
}

// A server stream, opened as the kubelet opens it; the context (and its deadline) is the caller's.
template <typename Response, typename Request>
std::unique_ptr<grpc::ClientReader<Response>> open_stream(
    const std::shared_ptr<grpc::Channel>& channel, const char* path, grpc::ClientContext* context,
    const Request& request) {
  const grpc::internal::RpcMethod method(path, grpc::internal::RpcMethod::SERVER_STREAMING);
  return std::unique_ptr<grpc::ClientReader<Response>>(
      grpc::internal::ClientReaderFactory<Response>::Create(channel.get(), method, context,
                                                            request));
}

}  // namespace shim::dra::test
