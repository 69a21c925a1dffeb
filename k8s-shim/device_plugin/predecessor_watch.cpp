#include "k8s-shim/device_plugin/predecessor_watch.h"

#include <unistd.h>

#include <cerrno>

#include "k8s-shim/socket_file.h"

namespace shim {

std::optional<PredecessorWatch> PredecessorWatch::connect(const std::filesystem::path& path) {
  auto connection = connect_to_socket(path);
  if (!connection) return std::nullopt;
  return PredecessorWatch(std::move(*connection));
}

bool PredecessorWatch::closed() {
  if (!fd_.valid()) return true;
  // The socket is non-blocking (connect_to_socket): this ends at EAGAIN while the server keeps
  // the connection, at 0 (end of file) or an error such as ECONNRESET once it is gone.
  // Bounded, so that a server that keeps sending cannot hold the caller's thread.
  constexpr int kReadsPerCall = 16;
  char buffer[4096];
  for (int reads = 0; reads < kReadsPerCall; ++reads) {
    const ssize_t n = ::read(fd_.get(), buffer, sizeof buffer);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    fd_.reset();
    return true;
  }
  return false;
}

}  // namespace shim
