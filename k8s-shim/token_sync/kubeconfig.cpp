#include "k8s-shim/token_sync/kubeconfig.h"

namespace shim::token_sync {

std::string yaml_quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string render_kubeconfig(const KubeconfigInputs& inputs) {
  std::string out;
  out += "# Written by xpu-k8s-shim token-sync; rewritten on every change, do not edit.\n";
  out += "apiVersion: v1\n";
  out += "kind: Config\n";
  out += "clusters:\n";
  out += "- name: kubernetes\n";
  out += "  cluster:\n";
  out += "    server: " + yaml_quote(inputs.server_url) + "\n";
  out += "    certificate-authority: " + yaml_quote(inputs.certificate_authority) + "\n";
  out += "users:\n";
  out += "- name: xpu-runtime\n";
  out += "  user:\n";
  out += "    tokenFile: " + yaml_quote(inputs.token_file) + "\n";
  out += "contexts:\n";
  out += "- name: xpu-runtime\n";
  out += "  context:\n";
  out += "    cluster: kubernetes\n";
  out += "    user: xpu-runtime\n";
  out += "    namespace: " + yaml_quote(inputs.namespace_name) + "\n";
  out += "current-context: xpu-runtime\n";
  return out;
}

}  // namespace shim::token_sync
