#include "k8s-shim/exporter/web_config.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s-shim/exporter/basic_auth.h"

namespace shim::exporter {
namespace {

using ::testing::HasSubstr;

// bcrypt (cost 10) of "secret", made with crypt_gensalt("$2b$") and crypt(3).
constexpr const char* kSecretHash = "$2b$10$R9cPBbP7KZQeA7MRXBSPUOvKWFiv4EtlLUPSwNW9tVV38.sCE/6oi";

class WebConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("web-config-test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(WebConfigTest, EmptyFileMeansPlainHttpWithoutAuth) {
  auto loaded = load_web_config(write("web.yml", ""));
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_TRUE(loaded->config.empty());
  EXPECT_EQ(loaded->files.size(), 1u);
}

TEST_F(WebConfigTest, TlsFilesAreReadRelativeToTheConfigFile) {
  write("server.crt", "CERT");
  write("server.key", "KEY");
  write("ca.crt", "CA");
  auto loaded = load_web_config(write("web.yml", R"(
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS12
basic_auth_users:
  prometheus: )" + std::string(kSecretHash) + "\n"));
  ASSERT_TRUE(loaded) << loaded.error();
  ASSERT_TRUE(loaded->config.tls);
  EXPECT_EQ(loaded->config.tls->cert_pem, "CERT");
  EXPECT_EQ(loaded->config.tls->key_pem, "KEY");
  EXPECT_EQ(loaded->config.tls->client_ca_pem, "CA");
  EXPECT_EQ(loaded->config.tls->client_auth, ClientAuth::RequireAndVerify);
  EXPECT_EQ(loaded->config.tls->priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3");
  EXPECT_EQ(loaded->config.basic_auth_users.at("prometheus"), kSecretHash);
  EXPECT_EQ(loaded->files.size(), 4u);
}

// Without min_version the floor is TLS 1.2 (exporter-toolkit's default), not GnuTLS's NORMAL,
// which on Debian 12 also accepts TLS 1.0 and 1.1.
TEST_F(WebConfigTest, TlsVersionsDefaultToTls12AndUp) {
  write("server.crt", "CERT");
  write("server.key", "KEY");
  auto loaded = load_web_config(
      write("web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"));
  ASSERT_TRUE(loaded) << loaded.error();
  ASSERT_TRUE(loaded->config.tls);
  EXPECT_EQ(loaded->config.tls->priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3");

  loaded = load_web_config(
      write("web.yml",
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  max_version: "
            "TLS12\n"));
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(loaded->config.tls->priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.2");
}

TEST_F(WebConfigTest, MistakesAreErrorsNamingTheFileAndTheKey) {
  write("server.crt", "CERT");
  write("server.key", "KEY");
  const std::pair<std::string, std::string> cases[] = {
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  clent_ca_file: x\n",
       "unknown key 'clent_ca_file'"},
      {"tls_server_config:\n  cert_file: server.crt\n", "cert_file and key_file are both required"},
      {"tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n",
       "cert_file " + (dir_ / "missing.crt").string() + ": No such file or directory"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
       "  client_auth_type: RequireAndVerifyClientCert\n",
       "needs client_ca_file"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
       "  client_auth_type: RequireAnyClientCert\n  client_ca_file: server.crt\n",
       "is not supported"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
       "  client_auth_type: Sometimes\n",
       "'Sometimes' is not one of"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: "
       "TLS99\n",
       "min_version: 'TLS99'"},
      {"basic_auth_users:\n  alice: plaintext\n", "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $2b$10$short\n", "basic_auth_users.alice: not a well-formed"},
      {"basic_auth_users: [a, b]\n", "basic_auth_users must be a mapping"},
      {"tls_server_config: {cert_file: [\n", "line "},
      {"- a\n- b\n", "the top level must be a mapping"},
      {"listen: :9507\n", "unknown key 'listen'"},
  };
  for (const auto& [text, expected] : cases) {
    const auto path = write("web.yml", text);
    auto loaded = load_web_config(path);
    ASSERT_FALSE(loaded) << text;
    EXPECT_THAT(loaded.error(), HasSubstr("web config file " + path)) << text;
    EXPECT_THAT(loaded.error(), HasSubstr(expected)) << text;
  }
  auto missing = load_web_config((dir_ / "nope.yml").string());
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error(), HasSubstr("nope.yml: No such file or directory"));
  auto directory = load_web_config(dir_.string());
  ASSERT_FALSE(directory);
  EXPECT_THAT(directory.error(), HasSubstr("not a regular file"));
}

TEST_F(WebConfigTest, ChangesToAnyNamedFileAreSeen) {
  write("server.crt", "CERT");
  write("server.key", "KEY");
  const auto path =
      write("web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  auto loaded = load_web_config(path);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_FALSE(web_config_files_changed(loaded->files));
  // A rewrite by rename, as Kubernetes and cert-manager do it, changes the inode.
  write("server.key.new", "KEY2");
  std::filesystem::rename(dir_ / "server.key.new", dir_ / "server.key");
  EXPECT_TRUE(web_config_files_changed(loaded->files));
  loaded = load_web_config(path);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->config.tls->key_pem, "KEY2");
  std::filesystem::remove(dir_ / "server.crt");
  EXPECT_TRUE(web_config_files_changed(loaded->files));
}

// The exporter README's example, as a reader copies it: the ```yaml block under
// "### Example web config", beside the files a cert-manager Secret holds.
std::string readme_web_config_example() {
  std::ifstream file(std::filesystem::path(XPU_SOURCE_DIR) / "k8s-shim/exporter/README.md");
  std::stringstream text;
  text << file.rdbuf();
  const std::string readme = text.str();
  const std::size_t section = readme.find("\n### Example web config\n");
  if (section == std::string::npos) return {};
  const std::string fence = "\n```yaml\n";
  const std::size_t start = readme.find(fence, section);
  if (start == std::string::npos) return {};
  const std::size_t end = readme.find("\n```", start + fence.size());
  if (end == std::string::npos) return {};
  return readme.substr(start + fence.size(), end + 1 - start - fence.size());
}

TEST_F(WebConfigTest, ReadmeExampleLoadsAsWritten) {
  const std::string example = readme_web_config_example();
  ASSERT_THAT(example, HasSubstr("tls_server_config:"))
      << "no ```yaml block under ### Example web config";
  write("tls.crt", "CERT");
  write("tls.key", "KEY");
  write("ca.crt", "CA");
  auto loaded = load_web_config(write("web-config.yml", example));
  ASSERT_TRUE(loaded) << loaded.error() << "\n" << example;
  ASSERT_TRUE(loaded->config.tls);
  EXPECT_EQ(loaded->config.tls->client_auth, ClientAuth::RequireAndVerify);
  EXPECT_EQ(loaded->config.tls->client_ca_pem, "CA");
  // The README says the user is prometheus with the password changeme.
  EXPECT_TRUE(bcrypt_matches("changeme", loaded->config.basic_auth_users.at("prometheus")));
}

TEST(BasicAuth, BcryptHashesOfEveryPrefixAreChecked) {
  EXPECT_TRUE(bcrypt_matches("secret", kSecretHash));
  EXPECT_FALSE(bcrypt_matches("Secret", kSecretHash));
  EXPECT_FALSE(bcrypt_matches("", kSecretHash));
  // htpasswd -B writes $2y$; the same hash under that prefix is the same password.
  std::string y = kSecretHash;
  y[2] = 'y';
  EXPECT_TRUE(check_bcrypt_hash(y));
  EXPECT_TRUE(bcrypt_matches("secret", y));
  EXPECT_FALSE(check_bcrypt_hash("$6$salt$notbcrypt"));
  EXPECT_FALSE(check_bcrypt_hash("$2b$10$tooshort"));
  EXPECT_FALSE(bcrypt_matches("secret", "$2b$10$tooshort"));
}

}  // namespace
}  // namespace shim::exporter
