// The node-status writer on a thread of its own, so that a slow or unreachable API server
// never holds up the role's loop (the device plugin's registrations, the DRA driver's slice):
// the loop hands it the cards and whether the role serves (update(), no I/O), the thread writes.
// stop() ends the thread and then releases the ready label, the SIGTERM path's last API call.
//
// Threads: update() and stop() from the role's thread; the writer and its NodeApi on the
// reporter's thread until stop() joins it, then on the caller's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "k8s-shim/cards/card_state.h"
#include "k8s-shim/kube/http_transport.h"
#include "k8s-shim/node_status/node_api.h"
#include "k8s-shim/node_status/node_status_writer.h"
#include "k8s-shim/node_status/xpu_condition.h"

namespace shim::node_status {

class NodeStatusReporter {
 public:
  NodeStatusReporter(std::unique_ptr<kube::HttpTransport> transport, std::string node,
                     std::string field_manager, std::chrono::seconds grace_period,
                     NodeStatusWriter::Options options = {});
  ~NodeStatusReporter();
  NodeStatusReporter(const NodeStatusReporter&) = delete;
  NodeStatusReporter& operator=(const NodeStatusReporter&) = delete;

  // The cards as the role's CardState answers them, and whether the role serves now.
  void update(const CardState::Snapshot& cards, bool serving);
  // What stop() does with the ready label.
  enum class OnStop {
    kReleaseLabel,  // the role stops serving the node
    kLeaveLabel,    // another process of the role serves the node already (a rolling update's
                    // new pod that started beside this one): the label is that one's
  };
  // Ends the thread, then releases the label (at most the transport's timeout) unless told to
  // leave it. Once only: the destructor's call, after one, does nothing.
  void stop(OnStop on_stop = OnStop::kReleaseLabel);

 private:
  void run();

  const std::chrono::seconds grace_period_;
  std::unique_ptr<kube::HttpTransport> transport_;
  NodeApi api_;
  NodeStatusWriter writer_;

  std::mutex mutex_;  // guards what the role hands over, and the news flag
  std::condition_variable wake_;
  std::optional<XpuCondition> condition_;
  bool serving_ = false;
  bool updated_ = false;  // the role has called update() once
  bool news_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace shim::node_status
