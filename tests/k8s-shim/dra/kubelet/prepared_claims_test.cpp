#include "k8s-shim/dra/kubelet/prepared_claims.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/child_process.h"

namespace shim::dra {
namespace {

using ::testing::HasSubstr;

PreparedClaim claim(std::string uid, unsigned index) {
  PreparedClaim c{std::move(uid), "team", "claim-" + std::to_string(index), {}};
  c.devices.push_back({{"r"}, "node-a", "xpu-" + std::to_string(index), index,
                       "UUID-" + std::to_string(index),
                       {"kunlunxin.com/xpu=UUID-" + std::to_string(index),
                        "kunlunxin.com/claim=" + c.uid + "-r"}});
  return c;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(dra_PreparedClaims, RoundTripThroughTheFile) {
  xpu::test::TempDir dir;
  const auto file = dir.path() / "plugin" / "checkpoint.json";
  {
    PreparedClaims store = PreparedClaims::load(file);
    EXPECT_TRUE(store.claims().empty());
    ASSERT_TRUE(store.add(claim("uid-a", 0)));
    ASSERT_TRUE(store.add(claim("uid-b", 1)));
  }
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  PreparedClaims reloaded = PreparedClaims::load(file);
  ASSERT_EQ(reloaded.claims().size(), 2u);
  ASSERT_NE(reloaded.find("uid-a"), nullptr);
  EXPECT_EQ(*reloaded.find("uid-a"), claim("uid-a", 0));
  EXPECT_EQ(*reloaded.find("uid-b"), claim("uid-b", 1));
  EXPECT_EQ(reloaded.find("uid-c"), nullptr);
}

TEST(dra_PreparedClaims, AddingTheSameClaimAgainKeepsOneRecord) {
  xpu::test::TempDir dir;
  PreparedClaims store = PreparedClaims::load(dir.path() / "checkpoint.json");
  ASSERT_TRUE(store.add(claim("uid-a", 0)));
  ASSERT_TRUE(store.add(claim("uid-a", 0)));
  EXPECT_EQ(store.claims().size(), 1u);
  EXPECT_EQ(PreparedClaims::load(store.file()).claims().size(), 1u);
}

TEST(dra_PreparedClaims, RemovingAnUnknownClaimSucceeds) {
  xpu::test::TempDir dir;
  PreparedClaims store = PreparedClaims::load(dir.path() / "checkpoint.json");
  EXPECT_TRUE(store.remove("never-prepared"));
  ASSERT_TRUE(store.add(claim("uid-a", 0)));
  ASSERT_TRUE(store.remove("uid-a"));
  EXPECT_TRUE(PreparedClaims::load(store.file()).claims().empty());
}

TEST(dra_PreparedClaims, ATornFileIsSetAsideAndTheStoreStartsEmpty) {
  xpu::test::TempDir dir;
  const auto file = dir.path() / "checkpoint.json";
  {
    PreparedClaims store = PreparedClaims::load(file);
    ASSERT_TRUE(store.add(claim("uid-a", 0)));
  }
  const std::string whole = read(file);
  xpu::test::write_file(file, whole.substr(0, whole.size() / 2));
  PreparedClaims reloaded = PreparedClaims::load(file);
  EXPECT_TRUE(reloaded.claims().empty());
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(read(dir.path() / "checkpoint.json.corrupt"), whole.substr(0, whole.size() / 2));
  // And it works from there.
  ASSERT_TRUE(reloaded.add(claim("uid-b", 1)));
  EXPECT_EQ(PreparedClaims::load(file).claims().size(), 1u);
}

TEST(dra_PreparedClaims, AnEditedFileFailsItsChecksum) {
  std::map<std::string, PreparedClaim, std::less<>> claims{{"uid-a", claim("uid-a", 0)}};
  std::string text = PreparedClaims::serialize(claims);
  ASSERT_TRUE(PreparedClaims::parse(text));
  const auto at = text.find("xpu-0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "xpu-1");
  auto edited = PreparedClaims::parse(text);
  ASSERT_FALSE(edited);
  EXPECT_THAT(edited.error(), HasSubstr("checksum mismatch"));

  xpu::test::TempDir dir;
  xpu::test::write_file(dir.path() / "checkpoint.json", text);
  EXPECT_TRUE(PreparedClaims::load(dir.path() / "checkpoint.json").claims().empty());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "checkpoint.json.corrupt"));
}

TEST(dra_PreparedClaims, AnUnknownVersionOrShapeIsRefused) {
  EXPECT_THAT(PreparedClaims::parse("not json").error(), HasSubstr("not a JSON object"));
  EXPECT_THAT(PreparedClaims::parse(R"({"version":2,"checksum":"x","claims":{}})").error(),
              HasSubstr("unknown format version 2"));
  EXPECT_FALSE(PreparedClaims::parse(R"({"version":1,"claims":{}})"));
}

}  // namespace
}  // namespace shim::dra
