#include "k8s-shim/token_sync/token_syncer.h"

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/token_sync/file_status.h"
#include "tests/k8s-shim/token_sync/projected_volume.h"
#include "tests/support/child_process.h"

namespace shim::token_sync {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::lstat_or_throw;
using testing::mode_bits;
using testing::ProjectedVolume;
using testing::read_file;
using ::testing::UnorderedElementsAre;
using testing::valid_ca_cert;
using xpu::test::TempDir;
using xpu::test::write_file;

class TokenSyncerTest : public ::testing::Test {
 protected:
  TokenSyncerTest() {
    config_.source_dir = volume_.dir();
    config_.dest_dir = temp_.path() / "xpu-runtime" / "auth";
    config_.api_server = {"10.96.0.1", "443"};
  }

  std::map<std::string, std::string> files(const std::string& token = "header.claims.signature") {
    return {{"token", token}, {"ca.crt", valid_ca_cert()}, {"namespace", "kube-system"}};
  }
  fs::path dest(const char* name) const { return config_.dest_dir / name; }
  std::string expected_kubeconfig(const std::string& server = "https://10.96.0.1:443") const {
    return "# Written by xpu-k8s-shim token-sync; rewritten on every change, do not edit.\n"
           "apiVersion: v1\nkind: Config\nclusters:\n- name: kubernetes\n  cluster:\n"
           "    server: \"" +
           server +
           "\"\n"
           "    certificate-authority: \"" +
           dest("ca.crt").string() +
           "\"\n"
           "users:\n- name: xpu-runtime\n  user:\n"
           "    tokenFile: \"" +
           dest("token").string() +
           "\"\n"
           "contexts:\n- name: xpu-runtime\n  context:\n    cluster: kubernetes\n    user: "
           "xpu-runtime\n"
           "    namespace: \"kube-system\"\n"
           "current-context: xpu-runtime\n";
  }

  TempDir temp_;
  ProjectedVolume volume_{temp_.path() / "serviceaccount"};
  TokenSyncConfig config_;
};

TEST_F(TokenSyncerTest, CopiesTheFilesAndWritesAKubeconfig) {
  volume_.publish(files());
  auto report = sync_once(config_);
  ASSERT_TRUE(report.ok()) << report.errors.front();
  EXPECT_THAT(report.changed_files, ElementsAre("token", "ca.crt", "namespace", "kubeconfig"));
  EXPECT_EQ(read_file(dest("token")), "header.claims.signature");
  EXPECT_EQ(read_file(dest("ca.crt")), valid_ca_cert());
  EXPECT_EQ(read_file(dest("namespace")), "kube-system");
  EXPECT_EQ(read_file(dest("kubeconfig")), expected_kubeconfig());
}

TEST_F(TokenSyncerTest, FilesAre0600AndTheDirectory0700) {
  volume_.publish(files());
  ASSERT_TRUE(sync_once(config_).ok());
  EXPECT_EQ(mode_bits(config_.dest_dir), 0700u);
  for (const char* name : {"token", "ca.crt", "namespace", "kubeconfig"}) {
    EXPECT_TRUE(S_ISREG(lstat_or_throw(dest(name)).st_mode)) << name;
    EXPECT_EQ(mode_bits(dest(name)), 0600u) << name;
  }
}

TEST_F(TokenSyncerTest, FixesAnExistingDirectoryAndFilesWithLooseModes) {
  fs::create_directories(config_.dest_dir);
  ::chmod(config_.dest_dir.c_str(), 0755);
  write_file(dest("token"), "header.claims.signature");
  ::chmod(dest("token").c_str(), 0644);
  volume_.publish(files());
  auto report = sync_once(config_);
  ASSERT_TRUE(report.ok()) << report.errors.front();
  EXPECT_EQ(mode_bits(config_.dest_dir), 0700u);
  EXPECT_EQ(mode_bits(dest("token")), 0600u);
}

TEST_F(TokenSyncerTest, NothingIsRewrittenWhenUnchanged) {
  volume_.publish(files());
  ASSERT_TRUE(sync_once(config_).ok());
  std::map<std::string, struct stat> before;
  for (const char* name : {"token", "ca.crt", "namespace", "kubeconfig"})
    before[name] = lstat_or_throw(dest(name));

  // Even a rotation to identical content is no change for the reader.
  volume_.publish(files());
  auto report = sync_once(config_);
  ASSERT_TRUE(report.ok()) << report.errors.front();
  EXPECT_THAT(report.changed_files, IsEmpty());
  for (const auto& [name, st] : before) {
    auto now = lstat_or_throw(dest(name.c_str()));
    EXPECT_EQ(now.st_ino, st.st_ino) << name;
    EXPECT_EQ(now.st_mtim.tv_sec, st.st_mtim.tv_sec) << name;
    EXPECT_EQ(now.st_mtim.tv_nsec, st.st_mtim.tv_nsec) << name;
  }
}

TEST_F(TokenSyncerTest, ARotatedTokenRewritesOnlyTheToken) {
  volume_.publish(files("first.token.v1"));
  ASSERT_TRUE(sync_once(config_).ok());
  const auto kubeconfig_inode = lstat_or_throw(dest("kubeconfig")).st_ino;
  volume_.publish(files("second.token.v2"));
  auto report = sync_once(config_);
  ASSERT_TRUE(report.ok()) << report.errors.front();
  EXPECT_THAT(report.changed_files, ElementsAre("token"));
  EXPECT_EQ(read_file(dest("token")), "second.token.v2");
  EXPECT_EQ(lstat_or_throw(dest("kubeconfig")).st_ino, kubeconfig_inode);
}

TEST_F(TokenSyncerTest, SymlinksPlantedInTheDestinationAreReplacedNotFollowed) {
  fs::create_directories(config_.dest_dir);
  const auto victim = temp_.path() / "etc-shadow";
  write_file(victim, "root:x:0:0");
  for (const char* name : {"token", "kubeconfig"}) fs::create_symlink(victim, dest(name));
  volume_.publish(files());
  auto report = sync_once(config_);
  ASSERT_TRUE(report.ok()) << report.errors.front();
  EXPECT_EQ(read_file(victim), "root:x:0:0");
  for (const char* name : {"token", "kubeconfig"}) {
    EXPECT_TRUE(S_ISREG(lstat_or_throw(dest(name)).st_mode)) << name;
    EXPECT_EQ(mode_bits(dest(name)), 0600u) << name;
  }
  EXPECT_EQ(read_file(dest("token")), "header.claims.signature");
  EXPECT_EQ(read_file(dest("kubeconfig")), expected_kubeconfig());
}

TEST_F(TokenSyncerTest, ASymlinkAsTheDestinationDirectoryIsRefused) {
  const auto elsewhere = temp_.path() / "elsewhere";
  fs::create_directories(elsewhere);
  fs::create_directories(config_.dest_dir.parent_path());
  fs::create_directory_symlink(elsewhere, config_.dest_dir);
  volume_.publish(files());
  auto report = sync_once(config_);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.errors.front(), HasSubstr("is a symlink; refusing"));
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

class BadSourceTest : public TokenSyncerTest {
 protected:
  // Syncs a good version, then `bad`; the good copy must survive untouched.
  void expect_rejected(const std::map<std::string, std::string>& bad, const std::string& error) {
    volume_.publish(files("good.token.v1"));
    ASSERT_TRUE(sync_once(config_).ok());
    const auto token_inode = lstat_or_throw(dest("token")).st_ino;
    volume_.publish(bad);
    auto report = sync_once(config_);
    ASSERT_FALSE(report.ok());
    EXPECT_THAT(report.errors.front(), HasSubstr(error));
    EXPECT_THAT(report.errors.front(),
                HasSubstr("the previous copy in " + config_.dest_dir.string() + " stays"));
    EXPECT_THAT(report.changed_files, IsEmpty());
    EXPECT_EQ(read_file(dest("token")), "good.token.v1");
    EXPECT_EQ(lstat_or_throw(dest("token")).st_ino, token_inode);
    EXPECT_EQ(read_file(dest("kubeconfig")), expected_kubeconfig());
  }
};

TEST_F(BadSourceTest, MissingToken) {
  auto bad = files();
  bad.erase("token");
  expect_rejected(bad,
                  (volume_.dir() / "token").string() + ": cannot open: No such file or directory");
}

TEST_F(BadSourceTest, MissingNamespace) {
  auto bad = files();
  bad.erase("namespace");
  expect_rejected(bad, (volume_.dir() / "namespace").string() + ": cannot open");
}

TEST_F(BadSourceTest, EmptyToken) {
  expect_rejected(files(""), (volume_.dir() / "token").string() + ": is empty");
}

TEST_F(BadSourceTest, OversizedToken) {
  expect_rejected(files(std::string(kMaxSourceFileBytes + 1, 'x')), "over the limit of 1048576");
}

TEST_F(BadSourceTest, CaWithoutACertificate) {
  auto bad = files("new.token");
  bad["ca.crt"] = "garbage";
  expect_rejected(bad, "ca.crt: has no PEM certificate");
}

TEST_F(BadSourceTest, InvalidNamespace) {
  auto bad = files("new.token");
  bad["namespace"] = "Not_A_Label";
  expect_rejected(bad, "namespace: 'Not_A_Label' is not a DNS-1123 label");
}

TEST_F(TokenSyncerTest, MissingSourceDirectoryIsAnErrorAndWritesNothing) {
  config_.source_dir = temp_.path() / "nowhere";
  auto report = sync_once(config_);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.errors.front(), HasSubstr("nowhere/token: cannot open"));
  EXPECT_FALSE(fs::exists(config_.dest_dir));
}

TEST_F(TokenSyncerTest, BadServiceHostStillSyncsTheFilesButNoKubeconfig) {
  config_.api_server = {"bad host!", "443"};
  volume_.publish(files());
  for (int attempt = 0; attempt < 2; ++attempt) {  // an error on every attempt, not once
    auto report = sync_once(config_);
    ASSERT_FALSE(report.ok());
    EXPECT_THAT(report.errors.front(), HasSubstr("KUBERNETES_SERVICE_HOST='bad host!'"));
    EXPECT_THAT(report.errors.front(), HasSubstr(dest("kubeconfig").string()));
  }
  EXPECT_EQ(read_file(dest("token")), "header.claims.signature");
  EXPECT_EQ(read_file(dest("ca.crt")), valid_ca_cert());
  EXPECT_FALSE(fs::exists(dest("kubeconfig")));
}

TEST_F(TokenSyncerTest, BadServiceHostLaterKeepsThePreviousKubeconfig) {
  volume_.publish(files());
  ASSERT_TRUE(sync_once(config_).ok());
  config_.api_server = {std::nullopt, "443"};
  auto report = sync_once(config_);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.errors.front(), HasSubstr("KUBERNETES_SERVICE_HOST is not set"));
  EXPECT_EQ(read_file(dest("kubeconfig")), expected_kubeconfig());
}

TEST_F(TokenSyncerTest, Ipv6ServiceHost) {
  config_.api_server = {"fd00:10:96::1", "443"};
  volume_.publish(files());
  auto report = sync_once(config_);
  ASSERT_TRUE(report.ok()) << report.errors.front();
  EXPECT_EQ(read_file(dest("kubeconfig")), expected_kubeconfig("https://[fd00:10:96::1]:443"));
}

TEST_F(TokenSyncerTest, ServiceHostChangeRewritesOnlyTheKubeconfig) {
  volume_.publish(files());
  ASSERT_TRUE(sync_once(config_).ok());
  config_.api_server = {"10.96.0.2", "6443"};
  auto report = sync_once(config_);
  ASSERT_TRUE(report.ok()) << report.errors.front();
  EXPECT_THAT(report.changed_files, ElementsAre("kubeconfig"));
  EXPECT_EQ(read_file(dest("kubeconfig")), expected_kubeconfig("https://10.96.0.2:6443"));
}

TEST_F(TokenSyncerTest, StaleTempFilesFromACrashAreRemoved) {
  fs::create_directories(config_.dest_dir);
  const auto stale = dest(".xpu-token-sync.token.4242.0");
  write_file(stale, "half a tok");
  remove_stale_temp_files(config_);
  EXPECT_FALSE(fs::exists(stale));
}

}  // namespace
}  // namespace shim::token_sync
