#include "k8s-shim/dra/kubelet/prepared_claims.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fnv1a.h"
#include "tests/support/child_process.h"

namespace shim::dra {
namespace {

using ::testing::HasSubstr;

PreparedClaim claim(std::string uid, unsigned index) {
  PreparedClaim c{std::move(uid), "team", "claim-" + std::to_string(index), {}};
  c.devices.push_back(
      {{"r"},
       "node-a",
       "xpu-" + std::to_string(index),
       index,
       "UUID-" + std::to_string(index),
       {"kunlunxin.com/xpu=UUID-" + std::to_string(index), "kunlunxin.com/claim=" + c.uid + "-r"}});
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

// Found by fuzz/dra_checkpoint_fuzzer: a version or index that is a float or out of range was
// cast by nlohmann's get<int>() (undefined behaviour past int's range) or wrapped into an
// unsigned. The checksums are those of each "claims" object, so that only the number is wrong.
TEST(dra_PreparedClaims, AVersionOrIndexThatIsNoWholeNumberInRangeIsRefused) {
  EXPECT_THAT(PreparedClaims::parse(R"({"version":2222222222222222222222222222222222222221,)"
                                    R"("checksum":"x","claims":{}})")
                  .error(),
              HasSubstr("not a whole number"));
  EXPECT_THAT(PreparedClaims::parse(R"({"version":1.0,"checksum":"x","claims":{}})").error(),
              HasSubstr("not a whole number"));

  const std::pair<const char*, const char*> indexes[] = {
      {"-1", "77e156d0d87bf1fc"},
      {"1.5", "e76543ac558521c0"},
      {"1e+40", "7e2ff88719548a8d"},
      {"4294967296", "4b1f6b6eaa634f64"},
  };
  for (const auto& [index, checksum] : indexes) {
    const std::string text =
        std::string(R"({"version":1,"checksum":"fnv1a64:)") + checksum +
        R"(","claims":{"uid-a":{"devices":[{"cdiIds":[],"device":"xpu-0","index":)" + index +
        R"(,"pool":"node-a","requests":["r"],"uuid":"U"}],"name":"c","namespace":"team"}}})";
    auto parsed = PreparedClaims::parse(text);
    ASSERT_FALSE(parsed) << index;
    EXPECT_THAT(parsed.error(), HasSubstr("\"index\" is " + std::string(index))) << index;
  }
}

TEST(dra_PreparedClaims, AShareKeepsItsShareIdAndGrantAcrossARestart) {
  xpu::test::TempDir dir;
  const auto file = dir.path() / "checkpoint.json";
  PreparedClaim shared = claim("uid-s", 2);
  shared.devices[0].device = "xpu-2-shared";
  shared.devices[0].share_id = "0b5c2a4e-7d1f-4c55-9a1e-2f3b4c5d6e7f";
  shared.devices[0].memory_limit = std::int64_t{8} << 30;
  shared.instance_hook = {"/usr/bin/xpuctl"};
  shared.instance_hook_names_share = true;
  {
    PreparedClaims store = PreparedClaims::load(file);
    ASSERT_TRUE(store.add(shared));
    ASSERT_TRUE(store.add(claim("uid-w", 1)));
  }
  EXPECT_THAT(read(file), HasSubstr("\"memoryLimit\": 8589934592"));
  EXPECT_THAT(read(file), HasSubstr("\"instanceHookNamesShare\": true"));
  PreparedClaims reloaded = PreparedClaims::load(file);
  ASSERT_NE(reloaded.find("uid-s"), nullptr);
  EXPECT_EQ(*reloaded.find("uid-s"), shared);
  EXPECT_EQ(*reloaded.find("uid-w"), claim("uid-w", 1));
}

TEST(dra_PreparedClaims, AFunctionOnVfioKeepsItsAddressAcrossARestart) {
  xpu::test::TempDir dir;
  const auto file = dir.path() / "checkpoint.json";
  PreparedClaim vm{"uid-v", "team", "vm-claim", {}};
  PreparedDevice function;
  function.requests = {"vm"};
  function.pool = "node-a";
  function.device = "vfio-0000-5e-00-0";
  function.cdi_ids = {"kunlunxin.com/xpu_vfio=0000:5e:00.0", "kunlunxin.com/claim=uid-v-vm"};
  function.vfio_pci_bus_id = "0000:5e:00.0";
  vm.devices.push_back(function);
  {
    PreparedClaims store = PreparedClaims::load(file);
    ASSERT_TRUE(store.add(vm));
    ASSERT_TRUE(store.add(claim("uid-w", 1)));
  }
  EXPECT_THAT(read(file), HasSubstr("\"vfioPciBusId\": \"0000:5e:00.0\""));
  PreparedClaims reloaded = PreparedClaims::load(file);
  ASSERT_NE(reloaded.find("uid-v"), nullptr);
  EXPECT_EQ(*reloaded.find("uid-v"), vm);
  // A card's record has no such field, as before it existed.
  EXPECT_EQ(*reloaded.find("uid-w"), claim("uid-w", 1));
}

TEST(dra_PreparedClaims, DeviceMetadataSurvivesARestart) {
  xpu::test::TempDir dir;
  const auto file = dir.path() / "checkpoint.json";
  PreparedClaim templated = claim("uid-t", 3);
  templated.pod_claim_name = "xpus";
  templated.devices[0].attributes = {
      {"driverVersion", Version{"5.0.21"}},
      {"index", std::int64_t{3}},
      {"memory", std::int64_t{103079215104}},
      {"model", std::string("P800")},
      {"resource.kubernetes.io/pciBusID", std::string("0000:3b:00.0")},
      {"x", false}};
  {
    PreparedClaims store = PreparedClaims::load(file);
    ASSERT_TRUE(store.add(templated));
  }
  // Spelled as a slice spells them.
  EXPECT_THAT(read(file), HasSubstr(R"("driverVersion": {
              "version": "5.0.21"
            })"));
  EXPECT_THAT(read(file), HasSubstr("\"podClaimName\": \"xpus\""));
  PreparedClaims reloaded = PreparedClaims::load(file);
  ASSERT_NE(reloaded.find("uid-t"), nullptr);
  EXPECT_EQ(*reloaded.find("uid-t"), templated);
}

TEST(dra_PreparedClaims, AttributesOfTheWrongShapeAreRefused) {
  for (const char* bad :
       {R"([1])", R"({"a": 1})", R"({"a": {}})", R"({"a": {"int": 1, "bool": true}})",
        R"({"a": {"int": "1"}})", R"({"a": {"int": 1e40}})", R"({"a": {"string": 5}})",
        R"({"a": {"version": null, "x": 1}})"}) {
    PreparedClaim c = claim("uid-a", 1);
    std::map<std::string, PreparedClaim, std::less<>> claims{{"uid-a", c}};
    auto body = nlohmann::json::parse(PreparedClaims::serialize(claims))["claims"];
    body["uid-a"]["devices"][0]["attributes"] = nlohmann::json::parse(bad);
    // The checksum of the edited claims (FNV-1a 64 of their compact text), so that only the shape
    // is wrong.
    char sum[17];
    std::snprintf(sum, sizeof sum, "%016llx",
                  static_cast<unsigned long long>(xpu::fnv1a_64(body.dump())));
    nlohmann::json file = {
        {"version", 1}, {"checksum", std::string("fnv1a64:") + sum}, {"claims", body}};
    auto parsed = PreparedClaims::parse(file.dump());
    ASSERT_FALSE(parsed) << bad;
    EXPECT_THAT(parsed.error(), HasSubstr("unexpected content")) << bad;
  }
}

}  // namespace
}  // namespace shim::dra
