// An in-memory Node for the node-status writer: GET, and server-side apply of status.conditions
// and metadata.labels as kube-apiserver does it for those fields (the real server's behaviour is
// proven by the real-node suite's node-status scenario):
//  - status.conditions is a map list keyed by type (k8s.io/api core/v1 NodeStatus.Conditions,
//    +listType=map +listMapKey=type): an apply replaces the entries of the types it names and
//    leaves the others (the kubelet's) as they are;
//  - metadata.labels is a granular map: a label an apply sets is owned by its field manager (with
//    force, whatever its value was), and one a manager applied before and now leaves out is
//    removed only when no other manager owns it too (sigs.k8s.io/structured-merge-diff: a field
//    is removed when it leaves the applier's set and no other manager has it).
// Failures can be injected for the next requests. Thread-safe: the reporter's thread sends while
// the test reads.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s-shim/kube/http_transport.h"

namespace shim::node_status::testing {

class FakeNodeServer : public kube::HttpTransport {
 public:
  explicit FakeNodeServer(std::string name = "node-a") : name_(std::move(name)) {
    node_ = {{"apiVersion", "v1"},
             {"kind", "Node"},
             {"metadata", {{"name", name_}, {"labels", {{"kubernetes.io/hostname", name_}}}}},
             {"spec", nlohmann::json::object()},
             {"status",
              {{"conditions",
                nlohmann::json::array({{{"type", "Ready"},
                                        {"status", "True"},
                                        {"reason", "KubeletReady"},
                                        {"lastHeartbeatTime", "2026-12-06T10:00:00Z"},
                                        {"lastTransitionTime", "2026-12-06T09:00:00Z"}}})}}}};
  }

  // The label as another field manager (a person's `kubectl label`, the other role) set it.
  void label_as(const std::string& manager, const std::string& key, const std::string& value) {
    std::lock_guard lock(mutex_);
    node_["metadata"]["labels"][key] = value;
    owners_[key].insert(manager);
  }
  void put_condition(nlohmann::json condition) {
    std::lock_guard lock(mutex_);
    upsert(std::move(condition));
  }
  // The next requests fail: with an HTTP status (a Status body), or (status 0) without an answer.
  void fail_next(long status, std::string reason = "InternalError") {
    std::lock_guard lock(mutex_);
    failures_.push_back({status, std::move(reason)});
  }

  nlohmann::json node() const {
    std::lock_guard lock(mutex_);
    return node_;
  }
  std::optional<nlohmann::json> condition(const std::string& type) const {
    std::lock_guard lock(mutex_);
    for (const auto& entry : node_["status"]["conditions"])
      if (entry["type"] == type) return entry;
    return std::nullopt;
  }
  std::optional<std::string> label(const std::string& key) const {
    std::lock_guard lock(mutex_);
    const auto& labels = node_["metadata"]["labels"];
    if (!labels.contains(key)) return std::nullopt;
    return labels[key].get<std::string>();
  }
  std::vector<kube::HttpRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

  xpu::Result<kube::HttpResponse> send(const kube::HttpRequest& request) override {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (!failures_.empty()) {
      auto failure = failures_.front();
      failures_.pop_front();
      if (failure.status == 0) return xpu::Error{"connection refused (injected)"};
      return status_answer(failure.status, failure.reason, "injected failure");
    }
    const std::string path = "/api/v1/nodes/" + name_;
    const std::string target = request.target.substr(0, request.target.find('?'));
    if (target != path && target != path + "/status")
      return status_answer(404, "NotFound", "nodes \"" + target + "\" not found");
    if (request.method == "GET" && target == path) return kube::HttpResponse{200, node_.dump()};
    if (request.method != "PATCH" || request.content_type != "application/apply-patch+yaml")
      return status_answer(405, "MethodNotAllowed", "not here");
    const std::string query = request.target.substr(request.target.find('?') + 1);
    const std::string manager = query.substr(query.find("fieldManager=") + 13,
                                             query.find('&') - query.find("fieldManager=") - 13);
    const auto body = nlohmann::json::parse(request.body);
    if (target == path + "/status") {
      // The status subresource takes status (and metadata; nothing here sends any).
      for (const auto& entry : body["status"]["conditions"]) upsert(entry);
    } else {
      const auto applied = body["metadata"].value("labels", nlohmann::json::object());
      for (auto& [key, managers] : owners_) {
        if (!managers.contains(manager) || applied.contains(key)) continue;
        managers.erase(manager);
        if (managers.empty()) node_["metadata"]["labels"].erase(key);
      }
      for (const auto& [key, value] : applied.items()) {
        node_["metadata"]["labels"][key] = value;
        owners_[key].insert(manager);
      }
    }
    return kube::HttpResponse{200, node_.dump()};
  }

 private:
  struct Failure {
    long status;
    std::string reason;
  };

  void upsert(nlohmann::json condition) {
    for (auto& entry : node_["status"]["conditions"])
      if (entry["type"] == condition["type"]) {
        entry = std::move(condition);
        return;
      }
    node_["status"]["conditions"].push_back(std::move(condition));
  }
  static kube::HttpResponse status_answer(long code, const std::string& reason,
                                          const std::string& message) {
    nlohmann::json status = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                             {"message", message}, {"reason", reason},   {"code", code}};
    return kube::HttpResponse{code, status.dump()};
  }

  const std::string name_;
  mutable std::mutex mutex_;
  nlohmann::json node_;
  std::map<std::string, std::set<std::string>> owners_;
  std::deque<Failure> failures_;
  std::vector<kube::HttpRequest> requests_;
};

// Hands every request to a server the test keeps (the reporter owns its transport).
class ForwardingTransport : public kube::HttpTransport {
 public:
  explicit ForwardingTransport(kube::HttpTransport& to) : to_(to) {}
  xpu::Result<kube::HttpResponse> send(const kube::HttpRequest& request) override {
    return to_.send(request);
  }

 private:
  kube::HttpTransport& to_;
};

}  // namespace shim::node_status::testing
