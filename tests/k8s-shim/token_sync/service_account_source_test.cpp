#include "k8s-shim/token_sync/service_account_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/token_sync/projected_volume.h"
#include "tests/support/child_process.h"

namespace shim::token_sync {
namespace {

using ::testing::HasSubstr;
using testing::ProjectedVolume;
using testing::valid_ca_cert;
using xpu::test::TempDir;
using xpu::test::write_file;

class ServiceAccountSourceTest : public ::testing::Test {
 protected:
  std::map<std::string, std::string> good_files() {
    return {{"token", "eyJhbGciOiJSUzI1NiJ9.payload.signature"},
            {"ca.crt", valid_ca_cert()},
            {"namespace", "kube-system"}};
  }
  TempDir temp_;
  ProjectedVolume volume_{temp_.path() / "serviceaccount"};
};

TEST_F(ServiceAccountSourceTest, ReadsAProjectedVolume) {
  volume_.publish(good_files());
  auto files = read_service_account(volume_.dir());
  ASSERT_TRUE(files.ok()) << files.error();
  EXPECT_EQ(files->token, "eyJhbGciOiJSUzI1NiJ9.payload.signature");
  EXPECT_EQ(files->ca_cert, valid_ca_cert());
  EXPECT_EQ(files->namespace_name, "kube-system");
}

TEST_F(ServiceAccountSourceTest, ReadsAPlainDirectory) {
  const auto dir = temp_.path() / "plain";
  std::filesystem::create_directory(dir);
  write_file(dir / "token", "abc.def\n");
  write_file(dir / "ca.crt", valid_ca_cert());
  write_file(dir / "namespace", "default\n");
  auto files = read_service_account(dir);
  ASSERT_TRUE(files.ok()) << files.error();
  EXPECT_EQ(files->token, "abc.def\n");  // copied as is
  EXPECT_EQ(files->namespace_file, "default\n");
  EXPECT_EQ(files->namespace_name, "default");
}

TEST_F(ServiceAccountSourceTest, MissingFileIsAnErrorNamingIt) {
  auto files = good_files();
  files.erase("ca.crt");
  volume_.publish(files);
  auto result = read_service_account(volume_.dir());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr((volume_.dir() / "ca.crt").string() + ": cannot open"));
}

TEST_F(ServiceAccountSourceTest, MissingDirectoryIsAnError) {
  auto result = read_service_account(temp_.path() / "nowhere");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("nowhere/token: cannot open: No such file or directory"));
}

TEST_F(ServiceAccountSourceTest, EmptyTokenIsAnError) {
  auto files = good_files();
  files["token"] = "\n";
  volume_.publish(files);
  auto result = read_service_account(volume_.dir());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("token: is empty"));
}

TEST_F(ServiceAccountSourceTest, OversizedFileIsAnError) {
  auto files = good_files();
  files["ca.crt"] = valid_ca_cert(std::string(kMaxSourceFileBytes, 'A'));
  volume_.publish(files);
  auto result = read_service_account(volume_.dir());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("ca.crt: is " + std::to_string(files["ca.crt"].size()) +
                                        " bytes, over the limit of 1048576"));
}

TEST_F(ServiceAccountSourceTest, FileAtTheLimitIsAccepted) {
  auto files = good_files();
  files["token"] = std::string(kMaxSourceFileBytes, 'x');
  volume_.publish(files);
  auto result = read_service_account(volume_.dir());
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->token.size(), kMaxSourceFileBytes);
}

TEST_F(ServiceAccountSourceTest, DirectoryInPlaceOfAFileIsAnError) {
  const auto dir = temp_.path() / "plain";
  std::filesystem::create_directories(dir / "token");
  write_file(dir / "ca.crt", valid_ca_cert());
  write_file(dir / "namespace", "default");
  auto result = read_service_account(dir);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("token: is not a regular file"));
}

TEST_F(ServiceAccountSourceTest, FifoInPlaceOfAFileIsAnErrorNotAHang) {
  const auto dir = temp_.path() / "plain";
  std::filesystem::create_directory(dir);
  ASSERT_EQ(::mkfifo((dir / "token").c_str(), 0600), 0);
  write_file(dir / "ca.crt", valid_ca_cert());
  write_file(dir / "namespace", "default");
  auto result = read_service_account(dir);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("token: is not a regular file"));
}

TEST_F(ServiceAccountSourceTest, UnreadableFileIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  const auto dir = temp_.path() / "plain";
  std::filesystem::create_directory(dir);
  write_file(dir / "token", "abc");
  ::chmod((dir / "token").c_str(), 0);
  write_file(dir / "ca.crt", valid_ca_cert());
  write_file(dir / "namespace", "default");
  auto result = read_service_account(dir);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("token: cannot open: Permission denied"));
}

TEST(ServiceAccountValidation, Token) {
  EXPECT_TRUE(validate_token("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2ln").ok());
  EXPECT_TRUE(validate_token("abc\n").ok());
  EXPECT_THAT(validate_token("").error(), HasSubstr("is empty"));
  EXPECT_THAT(validate_token(" \n\t").error(), HasSubstr("is empty"));
  EXPECT_THAT(validate_token("abc\r\nInjected: header").error(), HasSubstr("at offset 3"));
  EXPECT_THAT(validate_token("ab cd").error(), HasSubstr("at offset 2"));
  EXPECT_THAT(validate_token(std::string("ab\0cd", 5)).error(), HasSubstr("at offset 2"));
  EXPECT_THAT(validate_token("t\xc3\xa9").error(), HasSubstr("non-ASCII"));
}

TEST(ServiceAccountValidation, CaCert) {
  EXPECT_TRUE(validate_ca_cert(valid_ca_cert()).ok());
  EXPECT_TRUE(validate_ca_cert(valid_ca_cert("a") + valid_ca_cert("b")).ok());
  EXPECT_THAT(validate_ca_cert("").error(), HasSubstr("is empty"));
  EXPECT_THAT(validate_ca_cert("not a certificate").error(), HasSubstr("no BEGIN CERTIFICATE"));
  EXPECT_THAT(validate_ca_cert("-----BEGIN CERTIFICATE-----\nMIIB").error(),
              HasSubstr("truncated"));
}

TEST(ServiceAccountValidation, Namespace) {
  EXPECT_TRUE(validate_namespace("kube-system").ok());
  EXPECT_TRUE(validate_namespace("a").ok());
  EXPECT_TRUE(validate_namespace(std::string(63, 'a')).ok());
  EXPECT_FALSE(validate_namespace("").ok());
  EXPECT_FALSE(validate_namespace(std::string(64, 'a')).ok());
  EXPECT_FALSE(validate_namespace("Kube-System").ok());
  EXPECT_FALSE(validate_namespace("-lead").ok());
  EXPECT_FALSE(validate_namespace("trail-").ok());
  EXPECT_FALSE(validate_namespace("a.b").ok());
  EXPECT_FALSE(validate_namespace("a\nkind: Secret").ok());
}

TEST_F(ServiceAccountSourceTest, BadNamespaceIsAnErrorQuotingItSafely) {
  auto files = good_files();
  files["namespace"] = "evil\"\nkind: x";
  volume_.publish(files);
  auto result = read_service_account(volume_.dir());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(),
              HasSubstr("namespace: 'evil\\x22\\x0akind: x' is not a DNS-1123 label"));
}

}  // namespace
}  // namespace shim::token_sync
