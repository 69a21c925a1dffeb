#include "k8s-shim/dra/kubelet/device_metadata.h"

#include <algorithm>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/file_replacement.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kube/device_attribute_json.h"
#include "k8s-shim/kube/api_names.h"

namespace shim::dra {
namespace {

using kube::is_dns_label;
using kube::is_dns_subdomain;

// Members in the order the Go types declare them, which is the order their serializer prints.
using ordered_json = nlohmann::ordered_json;

// api/metadata/v1beta1 and v1alpha1 register.go (group metadata.resource.k8s.io), newest first.
constexpr std::string_view kApiVersions[] = {"metadata.resource.k8s.io/v1beta1",
                                             "metadata.resource.k8s.io/v1alpha1"};
constexpr std::string_view kKind = "DeviceMetadata";
// Linux's NAME_MAX: the longest "<namespace>_<claim>" directory there can be.
constexpr std::size_t kMaxFileName = 255;

// The requests of the claim named `base` without their subrequest, in the order of the devices.
std::vector<std::string> requests_of(const PreparedClaim& claim, std::string_view base) {
  std::vector<std::string> requests;
  for (const PreparedDevice& device : claim.devices)
    for (const std::string& request : device.requests)
      if (base_request(request) == base &&
          std::find(requests.begin(), requests.end(), request) == requests.end())
        requests.push_back(request);
  return requests;
}

std::vector<std::string> base_requests(const PreparedClaim& claim) {
  std::vector<std::string> bases;
  for (const PreparedDevice& device : claim.devices)
    for (const std::string& request : device.requests) {
      const std::string base(base_request(request));
      if (std::find(bases.begin(), bases.end(), base) == bases.end()) bases.push_back(base);
    }
  return bases;
}

ordered_json object_for(const PreparedClaim& claim, std::string_view base,
                        std::string_view api_version) {
  ordered_json requests = ordered_json::array();
  for (const std::string& request : requests_of(claim, base)) {
    ordered_json devices = ordered_json::array();
    for (const PreparedDevice& device : claim.devices) {
      if (std::find(device.requests.begin(), device.requests.end(), request) ==
          device.requests.end())
        continue;
      ordered_json entry = {
          {"driver", kDriverName}, {"pool", device.pool}, {"name", device.device}};
      // A Go map is printed in the order of its keys, which std::map keeps.
      if (!device.attributes.empty()) {
        ordered_json attributes = ordered_json::object();
        for (const auto& [name, value] : device.attributes)
          attributes[name] = ordered_json(device_attribute_json(value));
        entry["attributes"] = std::move(attributes);
      }
      devices.push_back(std::move(entry));
    }
    requests.push_back({{"name", request}, {"devices", std::move(devices)}});
  }
  // ObjectMeta: only what the library sets (name, namespace, uid, generation); the rest is empty
  // and left out. The generation is 1: the library counts rewrites of a file made by
  // UpdateRequestMetadata, which this driver never does.
  ordered_json object = {
      {"kind", kKind},
      {"apiVersion", api_version},
      {"metadata",
       {{"name", claim.name},
        {"namespace", claim.namespace_name},
        {"uid", claim.uid},
        {"generation", 1}}},
  };
  if (!claim.pod_claim_name.empty()) object["podClaimName"] = claim.pod_claim_name;
  object["requests"] = std::move(requests);
  return object;
}

// Go's encoding/json escapes these in strings (HTML safety, and the JavaScript line separators);
// they can only occur inside strings, so replacing them throughout keeps the text the library's
// own, byte for byte.
std::string go_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

xpu::Error name_error(std::string_view what, std::string_view value, std::string_view rule) {
  return xpu::Error{std::string(what) + " \"" + std::string(value.substr(0, 80)) +
                    (value.size() > 80 ? "..." : "") + "\" is not a " + std::string(rule)};
}

}  // namespace

std::string_view base_request(std::string_view request) {
  return request.substr(0, request.find('/'));
}

xpu::Status check_metadata_names(const PreparedClaim& claim) {
  if (!is_dns_label(claim.namespace_name))
    return name_error("namespace", claim.namespace_name, "DNS label");
  if (!is_dns_subdomain(claim.name)) return name_error("claim name", claim.name, "DNS subdomain");
  if (!claim.pod_claim_name.empty() && !is_dns_label(claim.pod_claim_name))
    return name_error("the annotation resource.kubernetes.io/pod-claim-name", claim.pod_claim_name,
                      "DNS label");
  for (const PreparedDevice& device : claim.devices)
    for (const std::string& request : device.requests) {
      const std::string_view base = base_request(request);
      const std::string_view sub = base.size() == request.size()
                                       ? std::string_view()
                                       : std::string_view(request).substr(base.size() + 1);
      if (!is_dns_label(base) || (base.size() != request.size() && !is_dns_label(sub)))
        return name_error("request", request, "DNS label (or two, as request/subrequest)");
    }
  return xpu::ok_status();
}

std::string metadata_container_path(const PreparedClaim& claim, std::string_view base) {
  const bool from_template = !claim.pod_claim_name.empty();
  std::string path(kMetadataContainerDirectory);
  path += '/';
  path += from_template ? kMetadataTemplatesSubdirectory : kMetadataClaimsSubdirectory;
  path += '/';
  path += from_template ? claim.pod_claim_name : claim.name;
  path += '/';
  path += base;
  path += '/';
  path += kDriverName;
  path += kMetadataFileSuffix;
  return path;
}

std::string device_metadata_stream(const PreparedClaim& claim, std::string_view base) {
  std::string stream;
  for (std::string_view version : kApiVersions) {
    // Invalid UTF-8 (a model string from the driver) becomes U+FFFD, as Go's encoder makes it.
    stream += go_escaped(object_for(claim, base, version)
                             .dump(2, ' ', false, ordered_json::error_handler_t::replace));
    stream += '\n';
  }
  return stream;
}

DeviceMetadataFiles::DeviceMetadataFiles(std::filesystem::path directory)
    : directory_(std::move(directory)) {}

std::filesystem::path DeviceMetadataFiles::file(const PreparedClaim& claim,
                                                std::string_view base) const {
  return directory_ / (claim.namespace_name + "_" + claim.name) / std::string(base) /
         std::string(kMetadataHostFileName);
}

xpu::Status DeviceMetadataFiles::write(const PreparedClaim& claim) const {
  if (auto names = check_metadata_names(claim); !names) return names;
  for (const std::string& base : base_requests(claim)) {
    const std::filesystem::path path = file(claim, base);
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    if (error)
      return xpu::Error{"cannot create " + path.parent_path().string() + ": " + error.message()};
    // Not durable: it is under /var/lib, but the kubelet prepares the claim again after a reboot,
    // which rewrites it with its CDI spec.
    auto written = xpu::replace_file_if_changed(
        path.parent_path(), std::string(kMetadataHostFileName), device_metadata_stream(claim, base),
        xpu::FileReplacement{.mode = 0644, .durable = false});
    if (!written) return xpu::Error{written.error()};
  }
  return xpu::ok_status();
}

xpu::Status DeviceMetadataFiles::remove(std::string_view namespace_name,
                                        std::string_view name) const {
  // Whatever the kubelet sends must not become a path outside the directory; a name that is no
  // claim's was never written, nor one too long for a file name (a namespace and a claim name
  // together may be 317 bytes: asking for it would fail, and the pod's deletion with it).
  if (!is_dns_label(namespace_name) || !is_dns_subdomain(name) ||
      namespace_name.size() + 1 + name.size() > kMaxFileName)
    return xpu::ok_status();
  const std::filesystem::path claim_directory =
      directory_ / (std::string(namespace_name) + "_" + std::string(name));
  std::error_code error;
  std::filesystem::remove_all(claim_directory, error);
  if (error)
    return xpu::Error{"cannot remove " + claim_directory.string() + ": " + error.message()};
  return xpu::ok_status();
}

}  // namespace shim::dra
