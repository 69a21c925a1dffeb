#include "k8s-shim/exporter/basic_auth.h"

#include <crypt.h>

#include <memory>

namespace shim::exporter {
namespace {

// Runs crypt(3) with its own state, so several threads can check at once.
std::string bcrypt(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  // libxcrypt reports a failure as NULL or as a string starting with '*'.
  if (out == nullptr || out[0] == '*') return {};
  return out;
}

bool equal_in_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace

xpu::Status check_bcrypt_hash(const std::string& hash) {
  if (!(hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$")))
    return xpu::Error{"not a bcrypt hash (expected $2a$, $2b$ or $2y$, as htpasswd -B makes)"};
  if (bcrypt("", hash).size() != hash.size()) return xpu::Error{"not a well-formed bcrypt hash"};
  return xpu::ok_status();
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  const std::string computed = bcrypt(password, hash);
  return !computed.empty() && equal_in_constant_time(computed, hash);
}

}  // namespace shim::exporter
