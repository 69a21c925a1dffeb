// The device metadata of a prepared claim (KEP-5304): for each request of the claim, a file that
// says which devices it got and their attributes, bind-mounted read-only into the containers that
// use the request through the request's entry in the claim's CDI spec (claim_cdi_spec.h).
//
// As k8s.io/dynamic-resource-allocation v0.37.2 defines it (api/metadata: doc.go, types.go,
// helpers.go, v1alpha1/ and v1beta1/types.go; kubeletplugin/metadata.go writes it for Go drivers):
// - on the host: <plugin-dir>/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json;
// - in the container: /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/
//   <request>/xpu.kunlunxin.com-metadata.json, or for a claim made from a template
//   .../resourceclaimtemplates/<pod claim name>/<request>/xpu.kunlunxin.com-metadata.json (the
//   pod's name for the claim: the generated claim's name is not in the pod spec);
// - <request> is the request's name without a subrequest ("xpus" for "xpus/big");
// - the content: a stream of the same DeviceMetadata object once per API version, newest first
//   (metadata.resource.k8s.io/v1beta1, then v1alpha1 for consumers built before 1.37), each as
//   the library's pretty JSON serializer prints it, followed by a newline.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"

namespace shim::dra {

// api/metadata types.go: ContainerDir, ResourceClaimsSubDir, ResourceClaimTemplatesSubDir,
// MetadataFileSuffix; kubeletplugin/metadata.go: metadataSubDir and the host file's name.
inline constexpr std::string_view kMetadataContainerDirectory =
    "/var/run/kubernetes.io/dra-device-attributes";
inline constexpr std::string_view kMetadataClaimsSubdirectory = "resourceclaims";
inline constexpr std::string_view kMetadataTemplatesSubdirectory = "resourceclaimtemplates";
inline constexpr std::string_view kMetadataFileSuffix = "-metadata.json";
inline constexpr std::string_view kMetadataHostSubdirectory = "dra-device-metadata";
inline constexpr std::string_view kMetadataHostFileName = "metadata.json";

// The request a result names without its subrequest ("xpus/big" -> "xpus"), as the file is named
// (resourceclaim.BaseRequestRef).
std::string_view base_request(std::string_view request);

// The names that go into the files' paths, checked as the API server checks them, so that no
// value from outside can reshape a path: the namespace and every request and subrequest a DNS
// label, the claim's name a DNS subdomain, the pod's name for the claim (an annotation, which the
// API server does not check) empty or a DNS label. The error names the offending value.
xpu::Status check_metadata_names(const PreparedClaim& claim);

// Where the request's file appears in the container (the claim's names checked first).
std::string metadata_container_path(const PreparedClaim& claim, std::string_view base);

// The file's content for one request of the claim (by its base name): every device of the claim
// that serves it, with its recorded attributes.
std::string device_metadata_stream(const PreparedClaim& claim, std::string_view base);

// Writes and removes the files under one directory (<plugin-dir>/dra-device-metadata), which must
// be at the same path on the host, where the container runtime reads it. Stateless apart from the
// directory; callers serialise per claim.
class DeviceMetadataFiles {
 public:
  explicit DeviceMetadataFiles(std::filesystem::path directory);

  // The host path of the request's file, which the claim's CDI spec mounts.
  std::filesystem::path file(const PreparedClaim& claim, std::string_view base) const;
  // Atomically makes each request's file hold its content (a runtime that mounts it sees all or
  // nothing); refuses a claim whose names fail check_metadata_names.
  xpu::Status write(const PreparedClaim& claim) const;
  // Removes the claim's directory and all in it; missing is success, and so are names that are no
  // claim's (nothing of ours can be there).
  xpu::Status remove(std::string_view namespace_name, std::string_view name) const;

  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path directory_;
};

}  // namespace shim::dra
