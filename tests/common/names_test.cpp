// common/names.h against dbus/*.xml, the source of truth: a name spelled differently on the
// client side would compile and fail only against a running xpud.
#include "common/names.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

std::string interface_xml(std::string_view interface) {
  const auto path = std::filesystem::path(XPU_SOURCE_DIR) / "dbus" / (std::string(interface) + ".xml");
  std::ifstream file(path);
  EXPECT_TRUE(file) << path;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

bool declares(const std::string& xml, std::string_view kind, std::string_view name) {
  return xml.find("<" + std::string(kind) + " name=\"" + std::string(name) + "\"") !=
         std::string::npos;
}

TEST(Names, ManagerPropertiesAndMethodsAreInTheManagerXml) {
  const std::string xml = interface_xml(xpu::names::kManagerInterface);
  EXPECT_TRUE(xml.find("<interface name=\"" + std::string(xpu::names::kManagerInterface) + "\"") !=
              std::string::npos);
  for (auto name : xpu::names::property::kManager) EXPECT_TRUE(declares(xml, "property", name)) << name;
  for (auto name : xpu::names::member::kManager) EXPECT_TRUE(declares(xml, "method", name)) << name;
}

TEST(Names, DevicePropertiesAreInTheDeviceXml) {
  const std::string xml = interface_xml(xpu::names::kDeviceInterface);
  EXPECT_TRUE(xml.find("<interface name=\"" + std::string(xpu::names::kDeviceInterface) + "\"") !=
              std::string::npos);
  for (auto name : xpu::names::property::kDevice) EXPECT_TRUE(declares(xml, "property", name)) << name;
}

TEST(Names, TheCheckCatchesAMisspelling) {
  EXPECT_FALSE(declares(interface_xml(xpu::names::kDeviceInterface), "property", "UUID"));
}

}  // namespace
