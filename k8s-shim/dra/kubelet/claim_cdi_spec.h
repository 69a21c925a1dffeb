// Each prepared claim's own CDI spec, kind kunlunxin.com/claim: one device per request, named
// "<uid>-<request>", whose only edit is the environment naming all the request's cards (index,
// the same indices in CXPU_VISIBLE_DEVICES for the vendor's runtime, and UUID, as the device
// plugin sets them). It brings no device nodes: the cards' entries in xpud's
// spec (kunlunxin.com/xpu=...) bring those, and the kubelet hands the runtime both. A request of
// functions on vfio-pci gets PCI_RESOURCE_KUNLUNXIN_COM_XPU_VFIO = all their addresses instead
// (their nodes come from xpud's VFIO spec, kunlunxin.com/xpu_vfio=...). With device
// metadata on, each request's device also bind-mounts the request's metadata file read-only
// (device_metadata.h) where KEP-5304 puts it in the container.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"
#include "k8s-shim/dra/kubelet/device_metadata.h"

namespace shim::dra {

// "kunlunxin-claim-<uid>.json".
std::string claim_cdi_spec_file_name(std::string_view uid);

// The spec's JSON text (cdiVersion 0.5.0: our names may start with a digit). `metadata`, when
// given, is where the claim's metadata files are: each request's device mounts its file.
std::string claim_cdi_spec_json(const PreparedClaim& claim,
                                const DeviceMetadataFiles* metadata = nullptr);

// Writes and removes the specs in one CDI directory (default /var/run/cdi). Stateless apart from
// the directory, so any thread may use it; callers serialise per claim.
class ClaimCdiSpecs {
 public:
  explicit ClaimCdiSpecs(std::filesystem::path directory);

  // Atomically makes the claim's file hold its spec (a runtime reading it sees all or nothing),
  // mounting the claim's metadata files from `metadata` when given.
  xpu::Status write(const PreparedClaim& claim,
                    const DeviceMetadataFiles* metadata = nullptr) const;
  // Removes the claim's file; a missing file is success.
  xpu::Status remove(std::string_view uid) const;

  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path directory_;
};

}  // namespace shim::dra
