// What token-sync takes from the pod (k8s-shim/token_sync): the service-account files of the
// projected volume (token, ca.crt, namespace) read from disk as the syncer reads them, the
// in-cluster API server variables (KUBERNETES_SERVICE_HOST and _PORT), and the kubeconfig built
// from them. The input is token, ca.crt, namespace, host and port, cut at NUL bytes. Whatever is
// accepted must be what the validators promise, and the kubeconfig must read back, with
// yaml-cpp, exactly the values that went in.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "fuzz/fuzz_support.h"
#include "k8s-shim/printable.h"
#include "k8s-shim/token_sync/api_server.h"
#include "k8s-shim/token_sync/kubeconfig.h"
#include "k8s-shim/token_sync/service_account_source.h"

namespace {

using xpu::fuzz::check;
namespace token_sync = shim::token_sync;

bool is_printable_line(const std::string& text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) return false;
  return true;
}

void check_accepted(const token_sync::ServiceAccountFiles& files) {
  std::string_view token = files.token;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t'))
    token.remove_suffix(1);
  check(!token.empty(), "empty token accepted");
  for (char c : token) check(c > 0x20 && c < 0x7f, "token byte that breaks a header", files.token);
  check(files.ca_cert.find("-----BEGIN CERTIFICATE-----") != std::string::npos,
        "ca.crt without a certificate accepted");
  const std::string& name = files.namespace_name;
  check(!name.empty() && name.size() <= 63 &&
            name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos &&
            name.front() != '-' && name.back() != '-',
        "namespace that is not a DNS-1123 label", name);
}

// The kubeconfig the runtime reads: each quoted value must come back as it went in.
void check_kubeconfig(const std::string& server_url, const std::string& namespace_name) {
  const token_sync::KubeconfigInputs inputs{server_url, "/xpu-runtime/auth/ca.crt",
                                            "/xpu-runtime/auth/token", namespace_name};
  const std::string text = token_sync::render_kubeconfig(inputs);
  YAML::Node document;
  try {
    document = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    xpu::fuzz::property_broken("kubeconfig is not YAML", e.what() + std::string("\n") + text);
  }
  check(document["clusters"][0]["cluster"]["server"].as<std::string>() == server_url,
        "server URL changed in the kubeconfig", text);
  check(document["contexts"][0]["context"]["namespace"].as<std::string>() == namespace_name,
        "namespace changed in the kubeconfig", text);
  check(document["current-context"].as<std::string>() == "xpu-runtime",
        "a value changed the kubeconfig's structure", text);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One projected-volume stand-in for the whole run, its three files rewritten for every input.
  static const xpu::fuzz::ScratchDirectory volume("service-account");
  const auto parts =
      xpu::fuzz::split_at_nul(std::string_view(reinterpret_cast<const char*>(data), size), 5);
  auto part = [&](std::size_t i) { return i < parts.size() ? parts[i] : std::string_view{}; };
  volume.write(token_sync::kTokenFile, part(0));
  volume.write(token_sync::kCaCertFile, part(1));
  volume.write(token_sync::kNamespaceFile, part(2));

  auto files = token_sync::read_service_account(volume.path());
  if (files) {
    check_accepted(*files);
  } else {
    check(files.error().starts_with(volume.path().string() + "/"), "error names no file",
          files.error());
    check(is_printable_line(files.error()), "error quotes a non-printable byte", files.error());
  }

  token_sync::ApiServerEnvironment environment;
  if (parts.size() > 3) environment.host = std::string(part(3));
  if (parts.size() > 4) environment.port = std::string(part(4));
  auto url = token_sync::api_server_url(environment);
  if (!url) {
    check(is_printable_line(url.error()), "error quotes a non-printable byte", url.error());
  } else {
    check(url->starts_with("https://") && is_printable_line(*url), "server URL", *url);
  }
  if (files && url) check_kubeconfig(*url, files->namespace_name);
  // The quoting alone, on any text: the runtime must read back exactly these bytes.
  if (parts.size() > 3) check_kubeconfig(std::string(part(3)), std::string(part(2)));
  const std::string excerpt =
      shim::printable_excerpt(std::string_view(reinterpret_cast<const char*>(data), size));
  check(is_printable_line(excerpt), "printable_excerpt kept a control byte", excerpt);
  return 0;
}
