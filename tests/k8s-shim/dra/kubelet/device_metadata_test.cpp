// The device metadata file against the format k8s.io/dynamic-resource-allocation v0.37.2 defines.
// The expected texts are written by hand from the Go types (api/metadata/v1beta1/types.go and
// v1alpha1/types.go: DeviceMetadata{TypeMeta, ObjectMeta "metadata", podClaimName, requests},
// DeviceMetadataRequest{name, devices}, Device{driver, pool, name, attributes, networkData};
// k8s.io/api resource/v1 DeviceAttribute{int, bool, string, version}; metav1.ObjectMeta's
// name, namespace, uid, generation, with creationTimestamp omitzero) as the library writes them
// (kubeletplugin/metadata.go: the PrettySerializer, i.e. json.MarshalIndent with two spaces, one
// object per version newest first, each followed by "\n"), not made by the code under test.
#include "k8s-shim/dra/kubelet/device_metadata.h"

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s-shim/dra/kubelet/claim_cdi_spec.h"
#include "tests/support/child_process.h"

namespace shim::dra {
namespace {

constexpr const char* kUid = "3f1c2a9e-1111-4222-8333-444455556666";

PreparedClaim claim() {
  PreparedClaim c{kUid, "team", "train-xpus", {}};
  c.devices.push_back({{"xpus"}, "node-a", "xpu-1", 1, "KL-UUID-1", {}});
  c.devices.back().attributes = {
      {"driverVersion", Version{"5.0.21"}},
      {"index", std::int64_t{1}},
      {"model", std::string("P800")},
      {"resource.kubernetes.io/pciBusID", std::string("0000:3b:00.0")},
  };
  c.devices.push_back({{"xpus"}, "node-a", "xpu-0", 0, "KL-UUID-0", {}});
  c.devices.back().attributes = {{"index", std::int64_t{0}}, {"linked", true}};
  return c;
}

using ::testing::HasSubstr;

// One version's object for claim(), by hand.
std::string expected_object(const std::string& api_version) {
  return R"({
  "kind": "DeviceMetadata",
  "apiVersion": ")" +
         api_version + R"(",
  "metadata": {
    "name": "train-xpus",
    "namespace": "team",
    "uid": "3f1c2a9e-1111-4222-8333-444455556666",
    "generation": 1
  },
  "requests": [
    {
      "name": "xpus",
      "devices": [
        {
          "driver": "xpu.kunlunxin.com",
          "pool": "node-a",
          "name": "xpu-1",
          "attributes": {
            "driverVersion": {
              "version": "5.0.21"
            },
            "index": {
              "int": 1
            },
            "model": {
              "string": "P800"
            },
            "resource.kubernetes.io/pciBusID": {
              "string": "0000:3b:00.0"
            }
          }
        },
        {
          "driver": "xpu.kunlunxin.com",
          "pool": "node-a",
          "name": "xpu-0",
          "attributes": {
            "index": {
              "int": 0
            },
            "linked": {
              "bool": true
            }
          }
        }
      ]
    }
  ]
})";
}

TEST(dra_DeviceMetadata, TheStreamIsTheLibrarysTextNewestVersionFirst) {
  EXPECT_EQ(device_metadata_stream(claim(), "xpus"),
            expected_object("metadata.resource.k8s.io/v1beta1") + "\n" +
                expected_object("metadata.resource.k8s.io/v1alpha1") + "\n");
}

TEST(dra_DeviceMetadata, AClaimFromATemplateCarriesThePodsNameForItAndLivesUnderIt) {
  PreparedClaim c{kUid, "team", "trainer-xpus-7x2kq", {}};
  c.pod_claim_name = "xpus";
  c.devices.push_back({{"xpus/big"}, "node-a", "xpu-0", 0, "KL-UUID-0", {}});
  // No attributes (a record from before them): the member is left out, as omitempty does.
  const std::string object = R"({
  "kind": "DeviceMetadata",
  "apiVersion": "metadata.resource.k8s.io/v1beta1",
  "metadata": {
    "name": "trainer-xpus-7x2kq",
    "namespace": "team",
    "uid": "3f1c2a9e-1111-4222-8333-444455556666",
    "generation": 1
  },
  "podClaimName": "xpus",
  "requests": [
    {
      "name": "xpus/big",
      "devices": [
        {
          "driver": "xpu.kunlunxin.com",
          "pool": "node-a",
          "name": "xpu-0"
        }
      ]
    }
  ]
})";
  const std::string stream = device_metadata_stream(c, "xpus");
  EXPECT_EQ(stream.substr(0, object.size() + 1), object + "\n");
  // A subrequest's file is its request's (resourceclaim.BaseRequestRef), the pod's name for the
  // claim in the path (metadata.ResourceClaimTemplateFilePath).
  EXPECT_EQ(base_request("xpus/big"), "xpus");
  EXPECT_EQ(metadata_container_path(c, "xpus"),
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/xpus/xpus/"
            "xpu.kunlunxin.com-metadata.json");
  EXPECT_EQ(metadata_container_path(claim(), "xpus"),
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/train-xpus/xpus/"
            "xpu.kunlunxin.com-metadata.json");
  EXPECT_EQ(DeviceMetadataFiles("/var/lib/kubelet/plugins/xpu.kunlunxin.com/dra-device-metadata")
                .file(c, "xpus"),
            "/var/lib/kubelet/plugins/xpu.kunlunxin.com/dra-device-metadata/"
            "team_trainer-xpus-7x2kq/xpus/metadata.json");
}

TEST(dra_DeviceMetadata, EachRequestHasAFileWithOnlyItsDevices) {
  PreparedClaim c = claim();
  c.devices[0].requests = {"infer"};
  const auto infer =
      nlohmann::json::parse(device_metadata_stream(c, "infer")
                                .substr(0, device_metadata_stream(c, "infer").find("\n}\n") + 2));
  ASSERT_EQ(infer["requests"].size(), 1u);
  EXPECT_EQ(infer["requests"][0]["name"], "infer");
  ASSERT_EQ(infer["requests"][0]["devices"].size(), 1u);
  EXPECT_EQ(infer["requests"][0]["devices"][0]["name"], "xpu-1");
}

TEST(dra_DeviceMetadata, StringsAreEscapedAsGoEscapesThem) {
  PreparedClaim c = claim();
  // What a driver might report; Go's encoder escapes <, >, & and U+2028/U+2029, and makes
  // invalid UTF-8 U+FFFD rather than failing.
  c.devices[0].attributes = {{"model", std::string("P<8>&0\xe2\x80\xa8") + "\xff"}};
  const std::string stream = device_metadata_stream(c, "xpus");
  EXPECT_THAT(stream, HasSubstr(R"("string": "P\u003c8\u003e\u00260\u2028)"
                                "\xef\xbf\xbd\""));
  EXPECT_TRUE(nlohmann::json::accept(stream.substr(0, stream.find("\n}\n") + 2)));
}

TEST(dra_DeviceMetadata, NamesThatWouldReshapeAPathAreRefused) {
  auto refused = [](auto change) {
    PreparedClaim c = claim();
    change(c);
    return check_metadata_names(c);
  };
  EXPECT_TRUE(check_metadata_names(claim()));
  const auto ns = refused([](PreparedClaim& c) { c.namespace_name = "../etc"; });
  ASSERT_FALSE(ns);
  EXPECT_THAT(ns.error(), HasSubstr("namespace \"../etc\""));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.name = "a/b"; }));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.name = ".."; }));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.name = "Upper"; }));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.name = std::string(254, 'a'); }));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.devices[0].requests = {".."}; }));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.devices[0].requests = {"xpus/../x"}; }));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.devices[0].requests = {"xpus/"}; }));
  EXPECT_TRUE(refused([](PreparedClaim& c) { c.devices[0].requests = {"xpus/big"}; }));
  const auto annotation = refused([](PreparedClaim& c) { c.pod_claim_name = "../../etc"; });
  ASSERT_FALSE(annotation);
  EXPECT_THAT(annotation.error(), HasSubstr("resource.kubernetes.io/pod-claim-name"));
  EXPECT_FALSE(refused([](PreparedClaim& c) { c.pod_claim_name = "a.b"; }));  // a label, no dots
}

TEST(dra_DeviceMetadata, FilesAreWrittenReadableAndRemovedWithTheirDirectory) {
  xpu::test::TempDir dir;
  DeviceMetadataFiles files(dir.path() / "dra-device-metadata");
  PreparedClaim c = claim();
  c.devices[0].requests = {"infer"};
  ASSERT_TRUE(files.write(c));
  const auto train =
      dir.path() / "dra-device-metadata" / "team_train-xpus" / "xpus" / "metadata.json";
  EXPECT_EQ(xpu::test::read_file(train), device_metadata_stream(c, "xpus"));
  EXPECT_EQ(xpu::test::read_file(files.file(c, "infer")), device_metadata_stream(c, "infer"));
  // Readable by any user in the container: the runtime bind-mounts the file itself.
  struct stat st {};
  ASSERT_EQ(::stat(train.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);

  // Names that are no claim's remove nothing, not even a sibling through "..".
  ASSERT_TRUE(files.remove("team", ".."));
  ASSERT_TRUE(files.remove("..", "x"));
  // Names the API server takes, too long together for a directory: never written, so nothing to
  // remove (and asking the file system would fail the unprepare).
  ASSERT_TRUE(files.remove(std::string(63, 'n'), std::string(63, 'c') + "." + std::string(63, 'c') +
                                                     "." + std::string(63, 'c') + "." +
                                                     std::string(61, 'c')));
  EXPECT_TRUE(std::filesystem::exists(train));
  ASSERT_TRUE(files.remove("team", "train-xpus"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "dra-device-metadata" / "team_train-xpus"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "dra-device-metadata"));
  EXPECT_TRUE(files.remove("team", "train-xpus"));  // gone already: success

  // A hostile annotation writes nothing at all.
  c.pod_claim_name = "../../../../etc";
  const auto refused = files.write(c);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error(), HasSubstr("pod-claim-name"));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "dra-device-metadata"));
}

TEST(dra_DeviceMetadata, TheClaimsCdiSpecMountsEachRequestsFileReadOnly) {
  PreparedClaim c = claim();
  c.pod_claim_name = "xpus";
  c.devices[0].requests = {"infer/small"};
  DeviceMetadataFiles files("/var/lib/kubelet/plugins/xpu.kunlunxin.com/dra-device-metadata");
  auto spec = nlohmann::json::parse(claim_cdi_spec_json(c, &files));
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], std::string(kUid) + "-infer.small");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["mounts"], nlohmann::json::parse(R"([{
              "hostPath": "/var/lib/kubelet/plugins/xpu.kunlunxin.com/dra-device-metadata/team_train-xpus/infer/metadata.json",
              "containerPath": "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/xpus/infer/xpu.kunlunxin.com-metadata.json",
              "options": ["ro", "bind"]}])"));
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["mounts"][0]["containerPath"],
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/xpus/xpus/"
            "xpu.kunlunxin.com-metadata.json");
  // Off: no mounts.
  auto without = nlohmann::json::parse(claim_cdi_spec_json(c));
  EXPECT_FALSE(without["devices"][0]["containerEdits"].contains("mounts"));
}

}  // namespace
}  // namespace shim::dra
