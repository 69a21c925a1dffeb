// common/names.h against dbus/*.xml, the source of truth: a name spelled differently on the
// client side would compile and fail only against a running xpud.
#include "common/names.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

namespace {

std::string interface_xml(std::string_view interface) {
  const auto path =
      std::filesystem::path(XPU_SOURCE_DIR) / "dbus" / (std::string(interface) + ".xml");
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
  for (auto name : xpu::names::property::kManager)
    EXPECT_TRUE(declares(xml, "property", name)) << name;
  for (auto name : xpu::names::member::kManager) EXPECT_TRUE(declares(xml, "method", name)) << name;
}

TEST(Names, DevicePropertiesAreInTheDeviceXml) {
  const std::string xml = interface_xml(xpu::names::kDeviceInterface);
  EXPECT_TRUE(xml.find("<interface name=\"" + std::string(xpu::names::kDeviceInterface) + "\"") !=
              std::string::npos);
  for (auto name : xpu::names::property::kDevice)
    EXPECT_TRUE(declares(xml, "property", name)) << name;
}

// The other way round: a property the XML adds must get its constant, or xpud would announce
// its changes with a literal again.
std::vector<std::string> declared_properties(const std::string& xml) {
  std::vector<std::string> found;
  const std::regex property("<property name=\"([A-Za-z]+)\"");
  for (std::sregex_iterator it(xml.begin(), xml.end(), property), end; it != end; ++it)
    found.push_back((*it)[1].str());
  return found;
}

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(Names, EveryManagerPropertyOfTheXmlHasAConstant) {
  const auto declared = declared_properties(interface_xml(xpu::names::kManagerInterface));
  EXPECT_EQ(declared.size(), xpu::names::property::kManager.size());
  for (const auto& name : declared)
    EXPECT_TRUE(listed(xpu::names::property::kManager, name)) << name;
}

TEST(Names, EveryDevicePropertyOfTheXmlHasAConstant) {
  const auto declared = declared_properties(interface_xml(xpu::names::kDeviceInterface));
  EXPECT_EQ(declared.size(), xpu::names::property::kDevice.size());
  for (const auto& name : declared)
    EXPECT_TRUE(listed(xpu::names::property::kDevice, name)) << name;
}

// Clients tell xpud's own refusals from the bus's by this prefix (xpud_connection.cpp).
TEST(Names, EveryXpudErrorHasTheErrorPrefix) {
  for (auto name : {xpu::names::kErrorNoSuchDevice, xpu::names::kErrorNotSupported,
                    xpu::names::kErrorBackend, xpu::names::kErrorInvalidArgument,
                    xpu::names::kErrorNoSuchInstance, xpu::names::kErrorInUse})
    EXPECT_TRUE(name.starts_with(xpu::names::kErrorPrefix)) << name;
}

TEST(Names, TheCheckCatchesAMisspelling) {
  EXPECT_FALSE(declares(interface_xml(xpu::names::kDeviceInterface), "property", "UUID"));
}

}  // namespace
