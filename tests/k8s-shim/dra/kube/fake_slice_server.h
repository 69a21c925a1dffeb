// An in-memory stand-in for the ResourceSlice part of the API server, enough for the publisher:
// list (all slices; the tests keep one node and one driver), create with generateName, update
// with the resourceVersion check (409 on a stale one, 404 on a missing name), delete. Answers are
// shaped like the recorded ones. Failures can be injected for the next requests. Device taints
// are treated as kube-apiserver does on a create or update: a taint without timeAdded gets one
// (pkg/apis/resource/v1/defaults.go, SetDefaults_DeviceTaint), and with DRADeviceTaints off
// (keep_taints(false)) every device's taints are dropped (pkg/registry/resource/resourceslice/
// strategy.go, dropDisabledDRADeviceTaintsFields), as the recorded answers of 1.37.2 and 1.35.4
// show (recorded/resourceslice_update_tainted*.json). With DRAPartitionableDevices off
// (keep_counters(false), Kubernetes 1.35's default) sharedCounters and every device's
// consumesCounters are dropped unless the slice updated already uses them
// (dropDisabledDRAPartitionableDevicesFields in the same file of v1.35.4).
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s-shim/kube/http_transport.h"

namespace shim::dra::testing {

class FakeSliceServer : public kube::HttpTransport {
 public:
  static constexpr std::string_view kSlices = "/apis/resource.k8s.io/v1/resourceslices";

  // Puts an object in the store as another writer would; returns its name.
  std::string add(nlohmann::json object) {
    std::string name = object["metadata"].value("name", "");
    if (name.empty())
      name = object["metadata"].value("generateName", "slice-") + std::to_string(++names_);
    object["metadata"]["name"] = name;
    object["metadata"]["uid"] = "uid-" + name;
    object["metadata"]["resourceVersion"] = std::to_string(++version_);
    store_[name] = std::move(object);
    return name;
  }
  // The next requests fail: with an HTTP status (a Status body), or (status 0) without an answer.
  void fail_next(long status, std::string reason = "InternalError") {
    failures_.push_back({"", status, std::move(reason)});
  }
  // The next request of `method` fails; others pass.
  void fail_next_of(std::string method, long status, std::string reason = "InternalError") {
    failures_.push_back({std::move(method), status, std::move(reason)});
  }
  // The request of `method` after the next `passing` ones fails.
  void fail_later_of(std::string method, unsigned passing, long status) {
    failures_.push_back({std::move(method), status, "InternalError", passing});
  }
  void remove(const std::string& name) { store_.erase(name); }
  // Whether writes keep the devices' taints (Kubernetes 1.36+, where DRADeviceTaints is on).
  void keep_taints(bool keep) { keep_taints_ = keep; }
  // Whether writes keep counters (Kubernetes 1.36+, where DRAPartitionableDevices is on).
  void keep_counters(bool keep) { keep_counters_ = keep; }
  // Bumps a stored slice's resourceVersion, as another writer's change would.
  void touch(const std::string& name) {
    store_.at(name)["metadata"]["resourceVersion"] = std::to_string(++version_);
  }

  xpu::Result<kube::HttpResponse> send(const kube::HttpRequest& request) override {
    requests.push_back(request);
    for (auto it = failures_.begin(); it != failures_.end(); ++it) {
      if (!it->method.empty() && it->method != request.method) continue;
      if (it->passing > 0) {
        --it->passing;
        break;
      }
      Failure failure = *it;
      failures_.erase(it);
      if (failure.status == 0) return xpu::Error{"connection refused (injected)"};
      return status_answer(failure.status, failure.reason, "injected failure");
    }
    std::string_view target = request.target;
    if (request.method == "GET" && target.starts_with(std::string(kSlices) + "?")) {
      nlohmann::json list = {{"kind", "ResourceSliceList"},
                             {"apiVersion", "resource.k8s.io/v1"},
                             {"metadata", {{"resourceVersion", std::to_string(version_)}}},
                             {"items", nlohmann::json::array()}};
      for (const auto& [name, object] : store_) list["items"].push_back(object);
      return kube::HttpResponse{200, list.dump()};
    }
    if (request.method == "POST" && target == kSlices) {
      std::string name = add(admitted(nlohmann::json::parse(request.body), nullptr));
      return kube::HttpResponse{201, store_[name].dump()};
    }
    std::string name(target.substr(std::min(target.size(), kSlices.size() + 1)));
    auto it = store_.find(name);
    if (!target.starts_with(std::string(kSlices) + "/") || it == store_.end())
      return status_answer(404, "NotFound", "resourceslices \"" + name + "\" not found");
    if (request.method == "PUT") {
      auto object = admitted(nlohmann::json::parse(request.body), &it->second);
      if (object["metadata"].value("resourceVersion", "") !=
          it->second["metadata"]["resourceVersion"])
        return status_answer(409, "Conflict", "the object has been modified");
      object["metadata"]["resourceVersion"] = std::to_string(++version_);
      it->second = object;
      return kube::HttpResponse{200, object.dump()};
    }
    if (request.method == "DELETE") {
      auto object = it->second;
      store_.erase(it);
      return kube::HttpResponse{200, object.dump()};
    }
    return status_answer(405, "MethodNotAllowed", "not here");
  }

  const std::map<std::string, nlohmann::json>& store() const { return store_; }
  std::size_t count(std::string_view method) const {
    std::size_t n = 0;
    for (const auto& request : requests) n += request.method == method;
    return n;
  }

  std::vector<kube::HttpRequest> requests;

 private:
  static kube::HttpResponse status_answer(long code, const std::string& reason,
                                          const std::string& message) {
    nlohmann::json status = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                             {"message", message}, {"reason", reason},   {"code", code}};
    return kube::HttpResponse{code, status.dump()};
  }

  static bool uses_counters(const nlohmann::json& slice) {
    const auto& spec = slice.value("spec", nlohmann::json::object());
    if (spec.contains("sharedCounters")) return true;
    for (const auto& device : spec.value("devices", nlohmann::json::array()))
      if (device.contains("consumesCounters")) return true;
    return false;
  }

  nlohmann::json admitted(nlohmann::json object, const nlohmann::json* old) {
    if (!object.contains("spec")) return object;
    if (!keep_counters_ && !(old && uses_counters(*old))) {
      object["spec"].erase("sharedCounters");
      if (object["spec"].contains("devices"))
        for (auto& device : object["spec"]["devices"]) device.erase("consumesCounters");
    }
    if (!object["spec"].contains("devices")) return object;
    for (auto& device : object["spec"]["devices"]) {
      if (!device.contains("taints")) continue;
      if (!keep_taints_) {
        device.erase("taints");
        continue;
      }
      for (auto& taint : device["taints"])
        if (!taint.contains("timeAdded"))
          taint["timeAdded"] = "2026-12-04T10:00:" + std::to_string(10 + (++stamps_ % 50)) + "Z";
    }
    return object;
  }

  std::map<std::string, nlohmann::json> store_;
  bool keep_taints_ = true;
  bool keep_counters_ = true;
  int stamps_ = 0;
  struct Failure {
    std::string method;  // empty: any
    long status = 0;
    std::string reason;
    unsigned passing = 0;  // requests of `method` let through first
  };
  std::deque<Failure> failures_;
  int names_ = 0;
  int version_ = 100;
};

}  // namespace shim::dra::testing
