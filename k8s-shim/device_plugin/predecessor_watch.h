// The server this plugin replaced at its socket path, watched until it has stopped serving, so
// that the kubelet has let go of it before this plugin registers the same path.
//
// Why (kubelet v1.37.2, pkg/kubelet/cm/devicemanager): the kubelet keeps its clients by socket
// path. plugin/v1beta1/handler.go `registerClient` appends a Register's client beside any other
// with that path, and when the old plugin's ListAndWatch ends, `runClient` calls
// `deregisterClient`, which drops every client with the path, the new one too. If the new
// plugin's Register lands between the two (a rolling update: the new pod renames its socket over
// the old one's, which notices and stops a few milliseconds later), manager.go `PluginConnected`
// still records the new endpoint, but when its stream ends `getClient` finds no client, so
// `PluginDisconnected` never runs, and every later Register on the path is refused ("device
// plugin already connected") until the kubelet restarts. Registering only after the old server
// closed its connections, and a moment more for the kubelet's goroutine to act on the end of its
// stream, keeps the two apart.
//
// The watch is a connection made to the path just before the rename: it reaches the old server,
// and ends when that server shuts down (gRPC closes every connection it accepted) or its process
// exits.
#pragma once

#include <filesystem>
#include <optional>

#include "common/unique_fd.h"

namespace shim {

class PredecessorWatch {
 public:
  // A watch on the server that accepts at `path` now; nullopt when nobody does (no socket, or a
  // stale one of a process that died), so there is nothing to wait for.
  static std::optional<PredecessorWatch> connect(const std::filesystem::path& path);

  // Whether that server has closed the connection (it stopped serving, or its process ended).
  // Reads without waiting, and discards what the server sent (its HTTP/2 settings); a server that
  // keeps sending is read a bounded amount per call and counts as open.
  bool closed();

 private:
  explicit PredecessorWatch(xpu::UniqueFd fd) : fd_(std::move(fd)) {}
  xpu::UniqueFd fd_;
};

}  // namespace shim
