// The device plugin's socket over the life of the process: the real shim against the real xpud
// (xpuml backend over the fake libxpuml) on a private bus and a kubelet stand-in's
// Registration service. SIGTERM (or SIGINT) in each phase of the start and of the stop must end
// in exit 0 with no socket of ours left in the plugin directory; and of two plugins on one
// directory (a rolling update's old and new pod), the new one's socket must outlive the old one
// and be the one that serves.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <deviceplugin_v1beta1.grpc.pb.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <optional>

#include "common/unique_fd.h"
#include "common/xpud_client.h"
#include "tests/k8s-shim/device_plugin/kubelet_registration_standin.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::KubeletRegistrationStandin;
using xpu::test::wait_until;
using xpu::test::write_file;
namespace fs = std::filesystem;

// From SIGTERM to exit, with nothing in flight but what the test set up: the gRPC server's
// shutdown grace (500 ms) at most, plus a loaded machine's slack.
constexpr auto kStopDeadline = 3s;
constexpr auto kStartDeadline = 20s;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The process that listens on the unix socket at `path` (the peer credentials a connection
// gets are the listener's), or nullopt when nobody accepts there.
std::optional<pid_t> listener_pid(const fs::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof address.sun_path) return std::nullopt;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  xpu::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() ||
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    return std::nullopt;
  ucred peer{};
  socklen_t length = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) return std::nullopt;
  return peer.pid;
}

class PluginSocketProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(plugin_dir_);
    write_file(dir_.path() / "scenario", "devices 2\n");
    write_file(
        dir_.path() / "xpud.conf",
        "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n[xpuml]\nlibrary = " FAKE_XPUML
        "\n[sysfs]\nroot = " +
            dir_.path().string() + "\n");
  }

  void start_xpud() {
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{
            {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()}});
    // Serving its cards before a plugin starts, as on a node (xpud.service comes up with the
    // machine). A plugin that asks first is told that there is no xpud, and rightly registers
    // with no devices: under load, that made the first ListAndWatch of these tests say 0.
    xpu::XpudClient direct(xpu::ClientOptions{bus_.address(), 2s});
    ASSERT_TRUE(wait_until(
        [&] {
          auto devices = direct.list_devices();
          return devices.ok() && devices->size() == 2;
        },
        kStartDeadline))
        << xpud_->output();
  }

  std::unique_ptr<ChildProcess> start_shim(const std::string& log) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("k8s-shim/xpu-k8s-shim").string(), "--bus-address",
                                 bus_.address(), "device-plugin", "--plugin-dir",
                                 plugin_dir_.string(), "--log-level", "debug"},
        dir_.path() / log);
  }

  // Every socket in the plugin directory but the kubelet's (the stand-in's are kubelet.sock*): the
  // plugin's, and any private name one was bound at before being renamed into place.
  std::vector<std::string> sockets_left() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(plugin_dir_))
      if (entry.is_socket() && !entry.path().filename().string().starts_with("kubelet.sock"))
        names.push_back(entry.path().filename().string());
    return names;
  }

  // The shim serves the socket path (its own process accepts there).
  bool serving(const ChildProcess& shim) const { return listener_pid(socket_) == shim.pid(); }

  void wait_serving(const ChildProcess& shim) {
    ASSERT_TRUE(wait_until([&] { return serving(shim); }, kStartDeadline))
        << "shim:\n"
        << shim.output() << "\nxpud:\n"
        << (xpud_ ? xpud_->output() : std::string());
  }

  void wait_registered(const ChildProcess& shim) {
    ASSERT_TRUE(wait_until(
        [&] { return shim.output().find("registered with the kubelet") != std::string::npos; },
        kStartDeadline))
        << shim.output();
  }

  // A plugin started while `old_plugin` serves: returned once it serves, and the old one has
  // stood aside.
  std::unique_ptr<ChildProcess> take_over_from(const ChildProcess& old_plugin,
                                               const std::string& log) {
    auto new_plugin = start_shim(log);
    wait_serving(*new_plugin);
    EXPECT_TRUE(wait_until(
        [&] { return old_plugin.output().find("another process serves") != std::string::npos; },
        kStartDeadline))
        << old_plugin.output();
    return new_plugin;
  }

  // Past blocking its stop signals (it logs this line after): a signal sent before would meet
  // its default action, which is not what these tests are about.
  static void wait_started(const ChildProcess& shim) {
    ASSERT_TRUE(wait_until([&] { return shim.output().find("starting:") != std::string::npos; },
                           kStartDeadline))
        << shim.output();
  }

  // SIGTERM (or `signo`): exit 0 within the deadline.
  static void stop(ChildProcess& shim, int signo = SIGTERM) {
    wait_started(shim);
    shim.signal(signo);
    EXPECT_EQ(shim.wait(kStopDeadline), 0) << shim.output();
  }

  // The same, and nothing of ours left behind.
  void stop_cleanly(ChildProcess& shim, int signo = SIGTERM) {
    stop(shim, signo);
    EXPECT_EQ(sockets_left(), std::vector<std::string>{}) << shim.output();
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  fs::path plugin_dir_ = dir_.path() / "device-plugins";
  fs::path socket_ = plugin_dir_ / "kunlunxin-xpu.sock";
  std::unique_ptr<ChildProcess> xpud_;
};

TEST_F(PluginSocketProcessTest, StopBeforeAnythingIsBound) {
  // The kubelet has not made its directory yet: the plugin waits for it, binding nothing.
  fs::remove(plugin_dir_);
  start_xpud();
  auto shim = start_shim("shim.log");
  ASSERT_TRUE(wait_until(
      [&] { return shim->output().find("cannot watch plugin directory") != std::string::npos; },
      kStartDeadline))
      << shim->output();
  stop(*shim);
  EXPECT_FALSE(fs::exists(plugin_dir_));
  EXPECT_EQ(shim->output().find("serving on"), std::string::npos) << shim->output();
}

TEST_F(PluginSocketProcessTest, StopAfterBindingBeforeAnyKubelet) {
  start_xpud();
  auto shim = start_shim("shim.log");  // no kubelet.sock: served, never registered
  wait_serving(*shim);
  stop_cleanly(*shim);
}

TEST_F(PluginSocketProcessTest, StopWhileTheKubeletHoldsRegister) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  kubelet.hold(true);
  start_xpud();
  auto shim = start_shim("shim.log");
  ASSERT_TRUE(wait_until([&] { return kubelet.registrations() == 1; }, kStartDeadline))
      << shim->output();
  EXPECT_TRUE(serving(*shim)) << "served before Register";
  // Cancelled at once, not after the 5 s the call may take.
  stop_cleanly(*shim);
  EXPECT_TRUE(wait_until([&] { return kubelet.held_then_cancelled() == 1; }, kStopDeadline));
}

TEST_F(PluginSocketProcessTest, StopWhileServingAStream) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  auto shim = start_shim("shim.log");
  wait_registered(*shim);
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + socket_.string(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 30s);
  auto reader = stub->ListAndWatch(&context, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  EXPECT_EQ(message.devices_size(), 2);

  stop_cleanly(*shim);
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_TRUE(reader->Finish().ok()) << "the stream ends with OK, not broken";
}

TEST_F(PluginSocketProcessTest, StopWhileRegisteringAgainAfterTheSocketWasRemoved) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  auto shim = start_shim("shim.log");
  wait_registered(*shim);
  kubelet.hold(true);
  fs::remove(socket_);  // as a restarting kubelet does
  ASSERT_TRUE(wait_until([&] { return kubelet.registrations() == 2; }, kStartDeadline))
      << shim->output();
  EXPECT_TRUE(serving(*shim)) << "served again before Register";
  stop_cleanly(*shim);
}

TEST_F(PluginSocketProcessTest, StopAsTheSocketIsRemoved) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  auto shim = start_shim("shim.log");
  wait_registered(*shim);
  // Whichever the shim sees first, the removal (and binds again) or the signal, it ends clean.
  fs::remove(socket_);
  stop_cleanly(*shim);
}

TEST_F(PluginSocketProcessTest, SigintAndSigtermTogetherStillExitZero) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  auto shim = start_shim("shim.log");
  wait_registered(*shim);
  // Both pending at once: the loop takes one and stops; the other must not kill the process on
  // its way out.
  wait_started(*shim);
  shim->signal(SIGINT);
  stop_cleanly(*shim, SIGTERM);
}

TEST_F(PluginSocketProcessTest, ANewPluginTakesTheSocketOverAndTheOldOneLeavesIt) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  auto old_plugin = start_shim("old.log");
  wait_registered(*old_plugin);
  auto new_plugin = take_over_from(*old_plugin, "new.log");
  wait_registered(*new_plugin);

  stop(*old_plugin);
  EXPECT_TRUE(serving(*new_plugin)) << "the new plugin's socket survived the old one's stop";
  EXPECT_EQ(sockets_left(), std::vector<std::string>{"kunlunxin-xpu.sock"});
  // Bound once each: the old one never took the path back, the new one never had to.
  EXPECT_EQ(count(new_plugin->output(), "serving on"), 1u) << new_plugin->output();
  EXPECT_EQ(count(old_plugin->output(), "serving on"), 1u) << old_plugin->output();
  EXPECT_EQ(kubelet.registrations(), 2u);

  stop_cleanly(*new_plugin);
}

// A rolling update against a kubelet that keys plugins by endpoint (1.37): the new plugin
// registers only once the old one's server has stopped, so the kubelet never has a Register for
// the path while the old stream is open. (Registering at once, the new plugin was refused here;
// the real kubelet 1.37.2, whose Register and stream end interleave differently, could even take
// it and then hold the path for good: predecessor_watch.h.)
TEST_F(PluginSocketProcessTest, ANewPluginRegistersOnlyOnceTheOldOnesServerHasStopped) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  kubelet.keyed_by_endpoint();
  start_xpud();
  auto old_plugin = start_shim("old.log");
  wait_registered(*old_plugin);
  ASSERT_TRUE(
      wait_until([&] { return kubelet.streams_opened("kunlunxin-xpu.sock") == 1; }, kStartDeadline))
      << old_plugin->output();
  auto new_plugin = take_over_from(*old_plugin, "new.log");
  wait_registered(*new_plugin);
  EXPECT_EQ(kubelet.refused(), 0u) << new_plugin->output();
  EXPECT_EQ(kubelet.endpoints_registered(),
            (std::vector<std::string>{"kunlunxin-xpu.sock", "kunlunxin-xpu.sock"}))
      << new_plugin->output();
  EXPECT_TRUE(
      wait_until([&] { return kubelet.streams_opened("kunlunxin-xpu.sock") == 2; }, kStartDeadline))
      << new_plugin->output();
  EXPECT_NE(new_plugin->output().find("has stopped; registering"), std::string::npos)
      << new_plugin->output();

  stop(*old_plugin);
  stop_cleanly(*new_plugin);
}

TEST_F(PluginSocketProcessTest, RollingUpdatesLeaveOnlyTheLastPluginsSocket) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  auto first = start_shim("plugin-0.log");
  wait_serving(*first);
  // The new plugin serves before the old one gets SIGTERM.
  auto second = start_shim("plugin-1.log");
  wait_serving(*second);
  stop(*first);
  EXPECT_TRUE(serving(*second));
  // The old one gets SIGTERM as the new one starts.
  auto third = start_shim("plugin-2.log");
  stop(*second);
  wait_serving(*third);
  // One stopped while it starts (bound or not yet), its successor already on the way; then the
  // one they replace. Which of them serves meanwhile depends on who bound last (a plugin that
  // was displaced serves again when the path is free, until its own stop); the last one is left.
  auto fourth = start_shim("plugin-3.log");
  auto fifth = start_shim("plugin-4.log");
  stop(*fourth);
  stop(*third);
  wait_serving(*fifth);
  EXPECT_EQ(sockets_left(), std::vector<std::string>{"kunlunxin-xpu.sock"});
  EXPECT_EQ(count(second->output(), "serving on"), 1u) << second->output();
  stop_cleanly(*fifth);
}

TEST_F(PluginSocketProcessTest, AnOldPluginServesAgainOnlyOnceTheNewOneIsGone) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  auto old_plugin = start_shim("old.log");
  wait_serving(*old_plugin);
  auto new_plugin = take_over_from(*old_plugin, "new.log");

  // The new one stops first (its pod deleted while the old one still runs): the path is free,
  // and the old plugin serves it again; its own stop then removes it.
  stop(*new_plugin);
  wait_serving(*old_plugin);
  EXPECT_NE(old_plugin->output().find("is free again"), std::string::npos) << old_plugin->output();
  stop_cleanly(*old_plugin);
}

TEST_F(PluginSocketProcessTest, TheSocketOfAKilledPluginIsTakenOverAndNotLeft) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  start_xpud();
  // Killed (SIGKILL, OOM) while serving: its socket stays, nobody serves it.
  auto killed = start_shim("killed.log");
  wait_serving(*killed);
  killed->signal(SIGKILL);
  ASSERT_TRUE(killed->wait(kStopDeadline).has_value());
  EXPECT_EQ(sockets_left(), std::vector<std::string>{"kunlunxin-xpu.sock"});
  // The next plugin replaces it.
  auto old_plugin = start_shim("old.log");
  wait_serving(*old_plugin);
  // A newer one takes over and is killed in turn: the old one, displaced but running, takes back
  // the path that holds a socket nobody serves.
  auto new_plugin = take_over_from(*old_plugin, "new.log");
  new_plugin->signal(SIGKILL);
  ASSERT_TRUE(new_plugin->wait(kStopDeadline).has_value());
  wait_serving(*old_plugin);
  stop_cleanly(*old_plugin);
}

// Against a kubelet that keys plugins by endpoint (1.37): the kubelet takes the plugin's Register
// and restarts before the answer is read (kubelet.sock is replaced during the call). The plugin
// must register with the new kubelet, once: the kubelet.sock at the path after the call is not
// the one that took it. (Taking the file found after the call as the one registered with, it
// never registered with the new kubelet: a failure seen in CI, in the kubelet stand-in's e2e.)
TEST_F(PluginSocketProcessTest,
       AKubeletThatRestartedRightAfterTakingRegisterIsRegisteredWithAgain) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  kubelet.keyed_by_endpoint();
  kubelet.restart_after_the_next_register();
  start_xpud();
  auto shim = start_shim("shim.log");
  ASSERT_TRUE(
      wait_until([&] { return kubelet.registrations_since_restart() == 1; }, kStartDeadline))
      << shim->output();
  ASSERT_TRUE(
      wait_until([&] { return kubelet.streams_opened("kunlunxin-xpu.sock") == 2; }, kStartDeadline))
      << shim->output();
  // A third Register would come within milliseconds (the next pass of the plugin's loop, woken by
  // the new kubelet.sock's event); a second is plenty for it to show.
  EXPECT_FALSE(wait_until([&] { return kubelet.registrations() > 2; }, 1s))
      << "registered a third time: " << shim->output();
  EXPECT_EQ(kubelet.refused(), 0u);
  stop_cleanly(*shim);
}

// The kubelet accepted the plugin and opened ListAndWatch, but its answer to Register came too
// late (the plugin's call timed out): asking again would be refused, so the plugin counts it as
// registered.
TEST_F(PluginSocketProcessTest, ARegisterWhoseAnswerCameTooLateIsNotRepeated) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  kubelet.keyed_by_endpoint();
  kubelet.hold(true);
  start_xpud();
  auto shim = start_shim("shim.log");
  ASSERT_TRUE(wait_until(
      [&] {
        return shim->output().find(
                   "the kubelet opened ListAndWatch on kunlunxin-xpu.sock for it") !=
               std::string::npos;
      },
      kStartDeadline))
      << shim->output();
  EXPECT_EQ(kubelet.registrations(), 1u);
  EXPECT_EQ(kubelet.refused(), 0u);
  kubelet.hold(false);
  stop_cleanly(*shim);
}

// As above, but the kubelet opens ListAndWatch only after the plugin's call failed: the retry must
// find the stream and not ask again (the kubelet would refuse it, and then never let the socket
// go).
TEST_F(PluginSocketProcessTest, AStreamOpenedAfterARegisterFailedCountsAsRegistered) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  kubelet.keyed_by_endpoint();
  kubelet.connect_after_the_next_caller_gave_up();
  start_xpud();
  auto shim = start_shim("shim.log");
  ASSERT_TRUE(wait_until(
      [&] {
        return shim->output().find("after an earlier Register failed on our side") !=
               std::string::npos;
      },
      kStartDeadline))
      << shim->output();
  EXPECT_EQ(kubelet.registrations(), 1u);
  EXPECT_EQ(kubelet.refused(), 0u);
  EXPECT_EQ(kubelet.streams_opened("kunlunxin-xpu.sock"), 1u);
  EXPECT_EQ(sockets_left(), std::vector<std::string>{"kunlunxin-xpu.sock"});
  stop_cleanly(*shim);
}

// A kubelet left holding kunlunxin-xpu.sock by an earlier plugin refuses it for good: the plugin
// serves on a spare name instead, which the kubelet watches, and removes it when it stops.
TEST_F(PluginSocketProcessTest, AnEndpointTheKubeletWillNotLetGoIsServedUnderASpareName) {
  KubeletRegistrationStandin kubelet(plugin_dir_);
  kubelet.keyed_by_endpoint();
  kubelet.never_let_go("kunlunxin-xpu.sock");
  start_xpud();
  auto shim = start_shim("shim.log");
  ASSERT_TRUE(wait_until([&] { return kubelet.streams_opened("kunlunxin-xpu-spare1.sock") == 1; },
                         kStartDeadline))
      << shim->output();
  EXPECT_EQ(kubelet.endpoints_registered(),
            (std::vector<std::string>{"kunlunxin-xpu.sock", "kunlunxin-xpu-spare1.sock"}));
  EXPECT_EQ(sockets_left(), std::vector<std::string>{"kunlunxin-xpu-spare1.sock"})
      << "the refused socket is removed, the spare one served";
  EXPECT_NE(shim->output().find("serves on kunlunxin-xpu-spare1.sock until the kubelet restarts"),
            std::string::npos)
      << shim->output();
  stop_cleanly(*shim);
}

}  // namespace
