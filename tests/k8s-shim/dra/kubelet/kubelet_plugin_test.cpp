#include "k8s-shim/dra/kubelet/kubelet_plugin.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/dra/kubelet/kubelet_client.h"
#include "tests/support/card_builder.h"
#include "tests/support/child_process.h"

namespace shim::dra {
namespace {

using ::testing::ElementsAre;

struct Fixture {
  xpu::test::TempDir dir;
  KubeletPluginPaths paths;
  // The claim state each service() made: it outlives the plugins, which are the tests' locals.
  std::vector<std::unique_ptr<ClaimState>> states;
  Fixture() {
    paths.plugin_directory = dir.path() / "plugins" / "xpu.kunlunxin.com";
    paths.registry_directory = dir.path() / "plugins_registry";
    std::filesystem::create_directories(paths.registry_directory);
  }
  std::unique_ptr<DraService> service(const std::filesystem::path& directory) {
    states.push_back(std::make_unique<ClaimState>(
        [](std::string_view, std::string_view) -> xpu::Result<AllocatedClaim> {
          return xpu::Error{"not found"};
        },
        [] { return std::vector<xpu::DeviceInfo>{}; }, "node-a",
        PreparedClaims::load(directory / "checkpoint.json"), ClaimCdiSpecs(directory / "cdi")));
    return std::make_unique<DraService>(*states.back());
  }
  std::unique_ptr<KubeletPlugin> start() {
    auto plugin = KubeletPlugin::start(paths, service(paths.plugin_directory));
    if (!plugin) throw std::runtime_error(plugin.error());
    return std::move(*plugin);
  }
};

regpb::PluginInfo get_info(const std::filesystem::path& socket) {
  regpb::PluginInfo info;
  grpc::Status status =
      test::call(test::kubelet_channel(socket), test::kGetInfoPath, regpb::InfoRequest{}, &info);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return info;
}

bool prepare_answers(const std::filesystem::path& socket) {
  drapb::NodePrepareResourcesRequest request;
  drapb::NodePrepareResourcesResponse response;
  return test::call(test::kubelet_channel(socket), test::kPreparePath, request, &response).ok();
}

// A socket file nobody serves, as a crashed run leaves it.
void leave_stale_socket(const std::filesystem::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
}

TEST(dra_KubeletPlugin, GetInfoNamesTheDriverItsEndpointAndV1) {
  Fixture f;
  auto plugin = f.start();
  EXPECT_EQ(f.paths.registration_socket(),
            f.paths.registry_directory / "xpu.kunlunxin.com-reg.sock");
  regpb::PluginInfo info = get_info(f.paths.registration_socket());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "xpu.kunlunxin.com");
  EXPECT_EQ(info.endpoint(), f.paths.plugin_directory / "dra.sock");
  EXPECT_TRUE(std::filesystem::path(info.endpoint()).is_absolute());
  // DRAPlugin first: the 1.34 kubelet takes the first entry it knows (and skips the health one).
  EXPECT_THAT(info.supported_versions(), ElementsAre("v1.DRAPlugin", "v1.DRAResourceHealth"));
  EXPECT_TRUE(prepare_answers(info.endpoint()));

  struct stat st {};
  ASSERT_EQ(::stat(f.paths.plugin_directory.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0027, 0u);  // 0750 at most
}

TEST(dra_KubeletPlugin, RecordsWhatTheKubeletReports) {
  Fixture f;
  auto plugin = f.start();
  EXPECT_FALSE(plugin->registered());
  auto channel = test::kubelet_channel(f.paths.registration_socket());
  regpb::RegistrationStatus status;
  status.set_plugin_registered(true);
  regpb::RegistrationStatusResponse response;
  ASSERT_TRUE(test::call(channel, test::kNotifyPath, status, &response).ok());
  EXPECT_TRUE(plugin->registered());
  status.set_plugin_registered(false);
  status.set_error("version mismatch");
  ASSERT_TRUE(test::call(channel, test::kNotifyPath, status, &response).ok());
  EXPECT_FALSE(plugin->registered());
}

TEST(dra_KubeletPlugin, ARemovedSocketIsServedAgain) {
  Fixture f;
  auto plugin = f.start();
  EXPECT_TRUE(plugin->sockets_present());
  auto unchanged = plugin->restart_missing();
  ASSERT_TRUE(unchanged);
  EXPECT_FALSE(*unchanged);

  std::filesystem::remove(f.paths.registration_socket());
  EXPECT_FALSE(plugin->sockets_present());
  auto restarted = plugin->restart_missing();
  ASSERT_TRUE(restarted) << restarted.error();
  EXPECT_TRUE(*restarted);
  EXPECT_TRUE(plugin->sockets_present());
  EXPECT_EQ(get_info(f.paths.registration_socket()).name(), "xpu.kunlunxin.com");

  std::filesystem::remove(f.paths.dra_socket());
  EXPECT_FALSE(plugin->sockets_present());
  restarted = plugin->restart_missing();
  ASSERT_TRUE(restarted) << restarted.error();
  EXPECT_TRUE(*restarted);
  EXPECT_TRUE(prepare_answers(f.paths.dra_socket()));
}

TEST(dra_KubeletPlugin, StaleSocketsAreReplacedAndOwnSocketsRemovedAtTheEnd) {
  Fixture f;
  std::filesystem::create_directories(f.paths.plugin_directory);
  leave_stale_socket(f.paths.dra_socket());
  leave_stale_socket(f.paths.registration_socket());
  {
    auto plugin = f.start();
    EXPECT_TRUE(prepare_answers(f.paths.dra_socket()));
    EXPECT_EQ(get_info(f.paths.registration_socket()).type(), "DRAPlugin");
  }
  EXPECT_FALSE(std::filesystem::exists(f.paths.dra_socket()));
  EXPECT_FALSE(std::filesystem::exists(f.paths.registration_socket()));
}

TEST(dra_KubeletPlugin, AMissingRegistryIsAnError) {
  Fixture f;
  f.paths.registry_directory = f.dir.path() / "no-such-dir";
  auto plugin = KubeletPlugin::start(f.paths, f.service(f.paths.plugin_directory));
  EXPECT_FALSE(plugin);
}

TEST(dra_KubeletPlugin, TheDraSocketServesTheHealthStreamUntilThePluginGoes) {
  Fixture f;
  auto plugin = f.start();
  plugin->health().update({xpu::test::card(3)});
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = test::open_stream<healthpb::NodeWatchResourcesResponse>(
      test::kubelet_channel(f.paths.dra_socket()), test::kWatchHealthPath, &context,
      healthpb::NodeWatchResourcesRequest{});
  healthpb::NodeWatchResourcesResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_EQ(response.devices_size(), 1);
  EXPECT_EQ(response.devices(0).device().pool_name(), "node-a");
  EXPECT_EQ(response.devices(0).device().device_name(), "xpu-3");
  EXPECT_EQ(response.devices(0).health(), healthpb::HEALTHY);
  // The same state in v1 on the same socket, as GetInfo advertises it.
  grpc::ClientContext v1_context;
  v1_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto v1_stream = test::open_stream<healthv1pb::NodeWatchResourcesResponse>(
      test::kubelet_channel(f.paths.dra_socket()), test::kWatchHealthV1Path, &v1_context,
      healthv1pb::NodeWatchResourcesRequest{});
  healthv1pb::NodeWatchResourcesResponse v1_response;
  ASSERT_TRUE(v1_stream->Read(&v1_response));
  ASSERT_EQ(v1_response.devices_size(), 1);
  EXPECT_EQ(v1_response.devices(0).device().device_name(), "xpu-3");
  EXPECT_EQ(v1_response.devices(0).health(), healthv1pb::HEALTHY);
  EXPECT_THAT(get_info(f.paths.registration_socket()).supported_versions(),
              ElementsAre("v1.DRAPlugin", "v1.DRAResourceHealth"));

  const auto before = std::chrono::steady_clock::now();
  plugin.reset();
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_FALSE(v1_stream->Read(&v1_response));
  EXPECT_TRUE(v1_stream->Finish().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
}

TEST(dra_KubeletPlugin, TheServiceNameIsTheKubelets) {
  EXPECT_STREQ(regpb::Registration::service_full_name(), "pluginregistration.Registration");
}

}  // namespace
}  // namespace shim::dra
