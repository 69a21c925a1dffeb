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

// The signals the API proxy relays and the watcher acts on (names::signals::kXpud) are exactly
// the XML's, beside the standard interfaces' that xpud's objects emit.
TEST(Names, XpudsSignalsAreTheXmlsAndNoOthers) {
  for (auto interface : {xpu::names::kManagerInterface, xpu::names::kDeviceInterface,
                         xpu::names::kSimulatorInterface}) {
    const std::string xml = interface_xml(interface);
    const std::regex signal("<signal name=\"([A-Za-z]+)\"");
    for (std::sregex_iterator it(xml.begin(), xml.end(), signal), end; it != end; ++it) {
      const std::string member = (*it)[1].str();
      EXPECT_TRUE(std::any_of(
          xpu::names::signals::kXpud.begin(), xpu::names::signals::kXpud.end(),
          [&](const auto& s) { return s.interface == interface && s.member == member; }))
          << interface << "." << member;
    }
  }
  for (const auto& [interface, member] : xpu::names::signals::kXpud) {
    if (!interface.starts_with(xpu::names::kBusName)) continue;  // a standard interface's
    EXPECT_TRUE(declares(interface_xml(interface), "signal", member)) << interface << "." << member;
  }
}

TEST(Names, TheCheckCatchesAMisspelling) {
  EXPECT_FALSE(declares(interface_xml(xpu::names::kDeviceInterface), "property", "UUID"));
}

}  // namespace
