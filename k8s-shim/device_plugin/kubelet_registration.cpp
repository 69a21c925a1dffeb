#include "k8s-shim/device_plugin/kubelet_registration.h"

#include <poll.h>

#include <cerrno>
#include <string_view>
#include <thread>

#include <deviceplugin_v1beta1.grpc.pb.h>
#include <grpcpp/create_channel_posix.h>

#include "k8s-shim/device_plugin/kubelet_messages.h"
#include "k8s-shim/wake_event.h"

namespace shim {

namespace {

// The kubelet's words for a refused duplicate endpoint (manager.go, PluginConnected, 1.37.2); the
// refusal reaches us as gRPC code UNKNOWN with this text, there is no code of its own.
constexpr std::string_view kEndpointTakenMessage = "device plugin already connected";

}  // namespace

RegisterResult register_with_kubelet(xpu::UniqueFd connection,
                                     const std::filesystem::path& kubelet_socket,
                                     const std::string& resource_name, const std::string& endpoint,
                                     std::chrono::milliseconds timeout, int cancel_fd) {
  // The channel owns the socket from here on; it never dials again, so a call cannot reach a
  // kubelet.sock other than the one connected to. The authority a unix: target would have had
  // (gRPC's own default for a channel on a socket is "test.authority").
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  auto channel = grpc::CreateCustomInsecureChannelFromFd("unix:" + kubelet_socket.string(),
                                                         connection.release(), args);
  auto stub = v1beta1::Registration::NewStub(channel);

  v1beta1::RegisterRequest request;
  request.set_version(std::string(kDevicePluginApiVersion));
  request.set_endpoint(endpoint);
  request.set_resource_name(resource_name);
  *request.mutable_options() = plugin_options();
  v1beta1::Empty response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  // The blocking call on a thread of its own, so that this one can cancel it when the stop
  // signal comes instead of holding the stop for the call's timeout. Joined before anything it
  // uses goes away; the deadline bounds the wait for it either way.
  grpc::Status status;
  bool cancelled = false;
  {
    WakeEvent done;
    std::jthread call([&] {
      status = stub->Register(&context, request, &response);
      done.signal();
    });
    pollfd fds[] = {{done.fd(), POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    int ready = 0;
    do {
      ready = ::poll(fds, std::size(fds), -1);
    } while (ready < 0 && errno == EINTR);
    if ((fds[0].revents & POLLIN) == 0) {
      context.TryCancel();
      cancelled = true;
    }
  }
  if (status.ok()) return {RegisterOutcome::kAccepted, {}};
  if (cancelled)
    return {RegisterOutcome::kCancelled,
            "Register with " + kubelet_socket.string() + " cancelled: stopping"};
  const bool taken = status.error_code() == grpc::StatusCode::UNKNOWN &&
                     status.error_message().find(kEndpointTakenMessage) != std::string::npos;
  return {taken ? RegisterOutcome::kEndpointTaken : RegisterOutcome::kFailed,
          "Register with " + kubelet_socket.string() + " failed (gRPC code " +
              std::to_string(static_cast<int>(status.error_code())) +
              "): " + status.error_message()};
}

}  // namespace shim
