#include "k8s-shim/exporter/web_config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "k8s-shim/exporter/basic_auth.h"

namespace shim::exporter {
namespace {

// Certificates, keys and the config itself are a few KiB; anything far larger is a wrong path
// (a log, a device) that must not be read whole into memory.
constexpr off_t kMaxFileBytes = 1 << 20;

FileStamp stamp_of(const std::string& path) {
  FileStamp stamp{path};
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    stamp.device = info.st_dev;
    stamp.inode = info.st_ino;
    stamp.size = info.st_size;
    stamp.mtime_ns =
        static_cast<long long>(info.st_mtim.tv_sec) * 1'000'000'000LL + info.st_mtim.tv_nsec;
  }
  return stamp;
}

xpu::Result<std::string> read_small_file(const std::string& path, std::vector<FileStamp>& stamps,
                                         const std::string& what) {
  stamps.push_back(stamp_of(path));
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return xpu::Error{what + " " + path + ": " + std::strerror(errno)};
  if (!S_ISREG(info.st_mode)) return xpu::Error{what + " " + path + ": not a regular file"};
  if (info.st_size > kMaxFileBytes)
    return xpu::Error{what + " " + path + ": larger than 1 MiB, not a " + what};
  std::ifstream in(path, std::ios::binary);
  if (!in) return xpu::Error{what + " " + path + ": " + std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string resolve(const std::string& directory, const std::string& path) {
  if (path.empty() || path.front() == '/' || directory.empty()) return path;
  return directory + "/" + path;
}

xpu::Error unknown_key(const std::string& where, const std::string& key,
                       const std::set<std::string>& known) {
  std::string list;
  for (const auto& name : known) {
    if (!list.empty()) list += ", ";
    list += name;
  }
  return xpu::Error{where + "unknown key '" + key + "' (known: " + list + ")"};
}

xpu::Status only_keys(const YAML::Node& node, const std::string& where,
                      const std::set<std::string>& known) {
  for (const auto& entry : node) {
    const auto key = entry.first.as<std::string>();
    if (!known.contains(key)) return unknown_key(where, key, known);
  }
  return xpu::ok_status();
}

std::string scalar(const YAML::Node& parent, const char* key) {
  const YAML::Node node = parent[key];
  if (!node || node.IsNull()) return {};
  if (!node.IsScalar()) throw YAML::Exception(node.Mark(), std::string(key) + " must be a string");
  return node.as<std::string>();
}

xpu::Result<std::string> tls_version(const std::string& name, const std::string& key) {
  static const std::map<std::string, std::string> versions = {{"TLS10", "VERS-TLS1.0"},
                                                              {"TLS11", "VERS-TLS1.1"},
                                                              {"TLS12", "VERS-TLS1.2"},
                                                              {"TLS13", "VERS-TLS1.3"}};
  auto found = versions.find(name);
  if (found == versions.end())
    return xpu::Error{"tls_server_config." + key + ": '" + name +
                      "' is not one of TLS10, TLS11, TLS12, TLS13"};
  return found->second;
}

// "NORMAL" with the versions outside [min, max] removed. An unset min_version is TLS 1.2, as in
// exporter-toolkit (its TLSConfig's MinVersion defaults to tls.VersionTLS12), whatever GnuTLS's
// NORMAL allows on its own (TLS 1.0 and 1.1 on Debian 12).
xpu::Result<std::string> priorities_for(const std::string& min, const std::string& max) {
  const std::vector<std::string> order = {"TLS10", "TLS11", "TLS12", "TLS13"};
  const std::string low = min.empty() ? "TLS12" : min;  // exporter-toolkit's default floor
  const std::string high = max.empty() ? "TLS13" : max;
  auto low_version = tls_version(low, "min_version");
  if (!low_version) return low_version;
  auto high_version = tls_version(high, "max_version");
  if (!high_version) return high_version;
  if (low > high)
    return xpu::Error{"tls_server_config: min_version " + low + " is above max_version " + high};
  std::string priorities = "NORMAL:-VERS-ALL";
  for (const auto& name : order)
    if (name >= low && name <= high) priorities += ":+" + *tls_version(name, "");
  return priorities;
}

xpu::Result<ClientAuth> client_auth_of(const std::string& text) {
  if (text.empty() || text == "NoClientCert") return ClientAuth::None;
  if (text == "VerifyClientCertIfGiven") return ClientAuth::VerifyIfGiven;
  if (text == "RequireAndVerifyClientCert") return ClientAuth::RequireAndVerify;
  if (text == "RequestClientCert" || text == "RequireAnyClientCert")
    return xpu::Error{"tls_server_config.client_auth_type: " + text +
                      " (a client certificate checked against no CA) is not supported; use "
                      "RequireAndVerifyClientCert or VerifyClientCertIfGiven with client_ca_file"};
  return xpu::Error{"tls_server_config.client_auth_type: '" + text +
                    "' is not one of NoClientCert, VerifyClientCertIfGiven, "
                    "RequireAndVerifyClientCert"};
}

xpu::Status parse_into(const YAML::Node& root, const std::string& directory,
                       LoadedWebConfig& loaded) {
  if (!root || root.IsNull()) return xpu::ok_status();  // an empty file: plain HTTP, no auth
  if (!root.IsMap()) return xpu::Error{"the top level must be a mapping"};
  if (auto known =
          only_keys(root, "", {"tls_server_config", "basic_auth_users", "http_server_config"});
      !known)
    return known;

  if (const YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
    if (!http.IsMap()) return xpu::Error{"http_server_config must be a mapping"};
    // http2 is Go's switch; this server speaks HTTP/1.1 only, so "true" changes nothing.
    if (auto known = only_keys(http, "http_server_config: ", {"http2"}); !known) return known;
  }

  if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
    if (!users.IsMap())
      return xpu::Error{"basic_auth_users must be a mapping of user: bcrypt hash"};
    for (const auto& entry : users) {
      const auto user = entry.first.as<std::string>();
      if (!entry.second.IsScalar())
        return xpu::Error{"basic_auth_users." + user + ": must be a bcrypt hash"};
      const auto hash = entry.second.as<std::string>();
      if (auto valid = check_bcrypt_hash(hash); !valid)
        return xpu::Error{"basic_auth_users." + user + ": " + valid.error()};
      if (user.empty() || user.find(':') != std::string::npos)
        return xpu::Error{"basic_auth_users: '" + user +
                          "' is not a user name (empty or with ':')"};
      loaded.config.basic_auth_users[user] = hash;
    }
  }

  const YAML::Node tls = root["tls_server_config"];
  if (!tls || tls.IsNull()) return xpu::ok_status();
  if (!tls.IsMap()) return xpu::Error{"tls_server_config must be a mapping"};
  if (auto known = only_keys(tls, "tls_server_config: ",
                             {"cert_file", "key_file", "client_auth_type", "client_ca_file",
                              "min_version", "max_version"});
      !known)
    return known;
  const std::string cert_file = scalar(tls, "cert_file");
  const std::string key_file = scalar(tls, "key_file");
  if (cert_file.empty() || key_file.empty())
    return xpu::Error{"tls_server_config: cert_file and key_file are both required"};
  WebConfig::Tls settings;
  auto auth = client_auth_of(scalar(tls, "client_auth_type"));
  if (!auth) return xpu::Error{auth.error()};
  settings.client_auth = *auth;
  const std::string ca_file = scalar(tls, "client_ca_file");
  if (settings.client_auth != ClientAuth::None && ca_file.empty())
    return xpu::Error{"tls_server_config: client_auth_type " + scalar(tls, "client_auth_type") +
                      " needs client_ca_file"};
  if (settings.client_auth == ClientAuth::None && !ca_file.empty())
    return xpu::Error{
        "tls_server_config: client_ca_file is set but client_auth_type is "
        "NoClientCert, so no client would be checked against it"};
  auto priorities = priorities_for(scalar(tls, "min_version"), scalar(tls, "max_version"));
  if (!priorities) return xpu::Error{priorities.error()};
  settings.priorities = *priorities;

  auto cert = read_small_file(resolve(directory, cert_file), loaded.files, "cert_file");
  if (!cert) return xpu::Error{cert.error()};
  auto key = read_small_file(resolve(directory, key_file), loaded.files, "key_file");
  if (!key) return xpu::Error{key.error()};
  settings.cert_pem = std::move(*cert);
  settings.key_pem = std::move(*key);
  if (!ca_file.empty()) {
    auto ca = read_small_file(resolve(directory, ca_file), loaded.files, "client_ca_file");
    if (!ca) return xpu::Error{ca.error()};
    settings.client_ca_pem = std::move(*ca);
  }
  loaded.config.tls = std::move(settings);
  return xpu::ok_status();
}

}  // namespace

xpu::Result<LoadedWebConfig> load_web_config(const std::string& path) {
  LoadedWebConfig loaded;
  auto text = read_small_file(path, loaded.files, "web config file");
  if (!text) return xpu::Error{text.error()};
  const auto slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : path.substr(0, slash);
  try {
    const YAML::Node root = YAML::Load(*text);
    if (auto parsed = parse_into(root, directory, loaded); !parsed)
      return xpu::Error{"web config file " + path + ": " + parsed.error()};
  } catch (const YAML::Exception& e) {
    return xpu::Error{"web config file " + path + ": line " + std::to_string(e.mark.line + 1) +
                      ": " + e.msg};
  }
  return loaded;
}

bool web_config_files_changed(const std::vector<FileStamp>& files) {
  for (const auto& file : files)
    if (!(stamp_of(file.path) == file)) return true;
  return false;
}

}  // namespace shim::exporter
