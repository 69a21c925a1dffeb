// The kubeconfig handed to the XPU runtime: one cluster, one user, one context, pointing at the
// synced ca.crt and token files (by path, so token rotation needs no kubeconfig rewrite).
#pragma once

#include <string>
#include <string_view>

namespace shim::token_sync {

struct KubeconfigInputs {
  std::string server_url;             // https://host:port
  std::string certificate_authority;  // absolute path of the synced ca.crt
  std::string token_file;             // absolute path of the synced token
  std::string namespace_name;         // already validated as a DNS label
};

std::string render_kubeconfig(const KubeconfigInputs& inputs);

// A YAML double-quoted scalar holding exactly `text` (quotes, backslashes and control
// characters escaped), so no value can change the document's structure.
std::string yaml_quote(std::string_view text);

}  // namespace shim::token_sync
