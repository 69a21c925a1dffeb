// The kubelet's Registration service on kubelet.sock, as far as the device plugin's process tests
// need it: it counts the Register calls and answers OK, or, while held, keeps the answer back
// until released or the caller cancels (a kubelet that is slow to answer).
//
// With keyed_by_endpoint() it also keeps the books a 1.37 kubelet keeps (read in
// pkg/kubelet/cm/devicemanager of k8s.io/kubernetes v1.37.2: plugin/v1beta1/handler.go
// connectClient, runClient, deregisterClient; manager.go PluginConnected, PluginDisconnected):
// on Register it dials the plugin's endpoint, asks GetDevicePluginOptions and opens ListAndWatch,
// and holds the endpoint as connected until that stream ends. A Register for an endpoint it holds
// is refused with "device plugin already connected: <path>", and, as the kubelet's error path
// drops its client for that path, the held endpoint is then never let go, even after its stream
// ends.
#pragma once

#include <deviceplugin_v1beta1.grpc.pb.h>

#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/server.h>

namespace xpu::test {

class KubeletRegistrationStandin final : public v1beta1::Registration::Service {
 public:
  explicit KubeletRegistrationStandin(const std::filesystem::path& plugin_dir);
  ~KubeletRegistrationStandin() override;
  KubeletRegistrationStandin(const KubeletRegistrationStandin&) = delete;
  KubeletRegistrationStandin& operator=(const KubeletRegistrationStandin&) = delete;

  void hold(bool on);
  void keyed_by_endpoint();
  // Holds `endpoint` (a socket name) as connected for good, as a kubelet left so by a plugin
  // that stopped after a refused second registration.
  void never_let_go(const std::string& endpoint);
  // The kubelet restarts right after taking the next Register: once it has connected the endpoint
  // and before answering, kubelet.sock is replaced by another socket file of this server, which
  // from then on keeps new books (no endpoint connected), as a new kubelet would.
  void restart_after_the_next_register();
  // The next Register is answered only once its caller gave up, and the endpoint is connected
  // (and its stream opened) after that: a kubelet whose answer came too late, and whose
  // ListAndWatch goroutine ran later still (handler.go: `go s.runClient(...)`).
  void connect_after_the_next_caller_gave_up();

  std::size_t registrations() const;                      // Register calls received
  std::size_t registrations_since_restart() const;        // ... after restart_after_...()
  std::size_t held_then_cancelled() const;                // held calls their caller cancelled
  std::vector<std::string> endpoints_registered() const;  // in order, refused ones too
  std::size_t refused() const;                            // "already connected" answers
  // Streams opened on `endpoint` (a socket name).
  std::size_t streams_opened(const std::string& endpoint) const;

  grpc::Status Register(grpc::ServerContext* context, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty* response) override;

 private:
  grpc::Status connect(const std::string& endpoint);
  void watch(std::string endpoint, unsigned epoch);

  const std::filesystem::path plugin_dir_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  bool hold_ = false;
  bool keyed_ = false;
  bool restart_next_ = false;
  unsigned epoch_ = 0;  // restarts so far
  bool connect_late_ = false;
  std::size_t registrations_ = 0;
  std::size_t registrations_since_restart_ = 0;
  std::size_t cancelled_ = 0;
  std::size_t refused_ = 0;
  std::vector<std::string> endpoints_;
  std::set<std::string> connected_;  // endpoints held as connected
  std::set<std::string> forgotten_;  // held ones whose stream's end will not be noticed
  std::map<std::string, std::size_t> streams_;
  std::vector<std::jthread> watchers_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace xpu::test
