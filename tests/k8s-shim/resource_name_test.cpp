#include "k8s-shim/resource_name.h"

#include <gtest/gtest.h>

namespace shim {
namespace {

TEST(ResourceName, AcceptsNamesSeenInTheField) {
  for (const char* name :
       {"kunlunxin.com/xpu", "baidu.com/xpu", "kunlunxin.com/R200", "kunlunxin.com/vxpu-memory",
        "kunlunxin.com/RG800-PRO", "a.b-c.io/x_y.z9"}) {
    auto status = validate_extended_resource_name(name);
    EXPECT_TRUE(status.ok()) << name << ": " << (status.ok() ? "" : status.error());
  }
}

TEST(ResourceName, RejectsWhatTheKubeletRejectsAndSaysWhy) {
  struct Case {
    std::string name;
    std::string reason;
  };
  const std::string long_name(64, 'x');
  const std::string long_domain =
      std::string(245, 'a') + ".com";  // fine alone, too long with "requests."
  const std::vector<Case> cases = {
      {"xpu", "it needs a domain, like kunlunxin.com/xpu"},
      {"kubernetes.io/xpu", "the kubernetes.io domain is reserved for native resources"},
      {"node.kubernetes.io/xpu", "the kubernetes.io domain is reserved for native resources"},
      {"requests.kunlunxin.com/xpu", "it must not start with 'requests.'"},
      {"kunlunxin.com/xpu/0", "it has more than one '/'"},
      {"/xpu", "the domain before '/' is empty"},
      {"kunlunxin.com/", "the name after '/' is empty"},
      {"Kunlunxin.com/xpu",
       "domain 'Kunlunxin.com' is not a DNS subdomain (lower-case labels of a-z, "
       "0-9 and '-', starting and ending with a letter or digit)"},
      {"kunlunxin..com/xpu",
       "domain 'kunlunxin..com' is not a DNS subdomain (lower-case labels of a-z, "
       "0-9 and '-', starting and ending with a letter or digit)"},
      {"kunlun_xin.com/xpu",
       "domain 'kunlun_xin.com' contains '_' (only a-z, 0-9, '-' and '.' are allowed)"},
      {"kunlunxin.com/-xpu", "the name after '/' must start and end with a letter or digit"},
      {"kunlunxin.com/x pu",
       "the name after '/' contains ' ' (only letters, digits, '-', '_' and '.' are allowed)"},
      {"kunlunxin.com/" + long_name, "the name after '/' is longer than 63 characters"},
      {long_domain + "/xpu", "the domain is too long once prefixed with 'requests.'"},
  };
  for (const auto& c : cases) {
    auto status = validate_extended_resource_name(c.name);
    ASSERT_FALSE(status.ok()) << c.name;
    EXPECT_EQ(status.error(),
              "'" + c.name + "' is not a valid extended resource name: " + c.reason);
  }
}

TEST(ResourceName, DomainIsThePartBeforeTheSlash) {
  EXPECT_EQ(resource_domain("baidu.com/xpu"), "baidu.com");
}

TEST(ResourceName, SharedDeviceIdNamesItsCard) {
  const std::string uuid = "5a1c0d3e-7f55-5b9e-8d1a-0c2f4e6b8a90";
  struct Case {
    std::string id;
    std::string card;
  };
  const std::vector<Case> cases = {
      {uuid + "::0", uuid},
      {uuid + "::63", uuid},
      {uuid, uuid},
      {uuid + "::m0", uuid},  // a memory unit (--xpu-share-memory-unit-mib)
      {uuid + "::m95", uuid},
      // Only a replica or unit number after the last "::" is a suffix; anything else stays whole.
      {uuid + "::m", uuid + "::m"},
      {uuid + "::mm1", uuid + "::mm1"},
      {uuid + "::1m", uuid + "::1m"},
      {uuid + "::", uuid + "::"},
      {uuid + "::x", uuid + "::x"},
      {uuid + "::1a", uuid + "::1a"},
      {"::3", "::3"},
      {"a::b::2", "a::b"},
  };
  for (const auto& c : cases) EXPECT_EQ(card_uuid_of_device_id(c.id), c.card) << c.id;
}

}  // namespace
}  // namespace shim
