// CreateInstance, DestroyInstance and ListInstances end to end: the real xpud on a private bus
// over the fake libxpuml, whose cXPU calls write what they were asked to a state file
// ($XPUML_FAKE_CXPU_STATE), so each test checks what the library holds, not only what xpud says.
// Also: the refusals a caller sees, root only, an old library and the sim backend.
#include <fcntl.h>
#include <sys/stat.h>

#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/support/child_process.h"
#include "tests/support/notify_socket.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
using xpu::test::write_file;
namespace fs = std::filesystem;

constexpr auto kCallTimeout = 10s;
constexpr std::uint64_t kGiB = 1024ull * 1024 * 1024;
// What the fake reports for a limit never set: the header's XPUML_CXPU_MEM_UNLIMIT.
constexpr const char* kNoLimit = "18446744073709551615";

class CxpuInstanceTest : public ::testing::Test {
 protected:
  // xpud over `library` (the fake's current variant unless told), with `scenario`.
  void start_xpuml(const std::string& scenario, const std::string& library = FAKE_XPUML,
                   const std::string& more_config = "") {
    write_file(dir_.path() / "scenario", scenario);
    start("[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 200\n[xpuml]\nlibrary = " +
          library + "\n[sysfs]\nroot = " + dir_.path().string() + "\n" + more_config);
  }

  void start(const std::string& config) {
    write_file(dir_.path() / "xpud.conf", config);
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{
            {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()},
            {"XPUML_FAKE_CXPU_STATE", state_file().string()},
            {"NOTIFY_SOCKET", notify_.path()}});
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  fs::path state_file() const { return dir_.path() / "cxpu-state"; }

  // The fake library's instances, one "<bus id> <id> <global limit> <L3 limit>" line each.
  std::vector<std::string> library_instances() const {
    std::vector<std::string> lines;
    std::ifstream file(state_file());
    for (std::string line; std::getline(file, line);) lines.push_back(line);
    return lines;
  }

  // A Manager method as the unprivileged user nobody, through dbus-send (which prints the
  // error's message): exit status and output.
  std::pair<int, std::string> call_as_nobody(const std::vector<std::string>& method_and_args) {
    const std::string socket = bus_.address().substr(std::string("unix:path=").size());
    ::chmod(fs::path(socket).parent_path().c_str(), 0755);
    std::vector<std::string> argv = {
        "/usr/bin/setpriv",
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        "--",
        "/usr/bin/dbus-send",
        "--bus=" + bus_.address(),
        "--print-reply",
        "--dest=" + std::string(xpu::names::kBusName),
        std::string(xpu::names::kManagerPath),
        std::string(xpu::names::kManagerInterface) + "." + method_and_args.front()};
    argv.insert(argv.end(), method_and_args.begin() + 1, method_and_args.end());
    ChildProcess call(argv, dir_.path() / ("call." + std::to_string(++calls_)));
    auto status = call.wait(15s);
    return {status.value_or(-1), call.output()};
  }

  std::pair<int, std::string> xpuctl(std::vector<std::string> args) {
    args.insert(args.begin(),
                {binary_path("xpuctl/xpuctl").string(), "--bus-address", bus_.address()});
    ChildProcess run(args, dir_.path() / ("xpuctl." + std::to_string(++calls_)));
    auto status = run.wait(15s);
    return {status.value_or(-1), run.output()};
  }

  // xpuctl as an OCI runtime runs a hook: the container's state on standard input.
  std::pair<int, std::string> hook(const std::vector<std::string>& args, const std::string& state) {
    const fs::path input = dir_.path() / ("state." + std::to_string(++calls_));
    write_file(input, state);
    std::string command = "exec '" + binary_path("xpuctl/xpuctl").string() + "' --bus-address '" +
                          bus_.address() + "'";
    for (const auto& arg : args) command += " '" + arg + "'";
    command += " < '" + input.string() + "'";
    ChildProcess run({"/bin/sh", "-c", command},
                     dir_.path() / ("hook." + std::to_string(++calls_)));
    auto status = run.wait(15s);
    return {status.value_or(-1), run.output()};
  }

  // A container as containerd hands it to a hook: its first process `pid`, the pod's names.
  static std::string container_state(const std::string& id, pid_t pid, const std::string& pod,
                                     const std::string& pod_namespace = "team") {
    return R"({"ociVersion":"1.2.0","id":")" + id + R"(","status":"created","pid":)" +
           std::to_string(pid) +
           R"(,"bundle":"/run/containerd/io.containerd.runtime.v2.task/k8s.io/)" + id +
           R"(","annotations":{"io.kubernetes.cri.container-type":"container",)"
           R"("io.kubernetes.cri.sandbox-namespace":")" +
           pod_namespace + R"(","io.kubernetes.cri.sandbox-name":")" + pod +
           R"(","io.kubernetes.cri.container-name":"main"}})";
  }

  // A container's first process, for the hook to hand xpud a pidfd of.
  std::unique_ptr<ChildProcess> container_process() {
    return std::make_unique<ChildProcess>(std::vector<std::string>{"/bin/sleep", "1000"},
                                          dir_.path() / ("sleep." + std::to_string(++calls_)));
  }

  // The instances xpud holds, "<index> <id> <bytes> <owner>".
  std::vector<std::string> recorded() {
    std::vector<std::string> lines;
    auto listed = client_.list_instances();
    EXPECT_TRUE(listed) << listed.error();
    if (listed)
      for (const auto& i : *listed)
        lines.push_back(std::to_string(i.index) + " " + i.id + " " +
                        std::to_string(i.memory_limit_bytes) + " " + i.owner);
    return lines;
  }

  bool instances_supported() {
    ChildProcess busctl({"/usr/bin/busctl", "--address=" + bus_.address(), "get-property",
                         std::string(xpu::names::kBusName), std::string(xpu::names::kManagerPath),
                         std::string(xpu::names::kManagerInterface),
                         std::string(xpu::names::property::kInstancesSupported)},
                        dir_.path() / ("busctl." + std::to_string(++calls_)));
    busctl.wait(15s);
    return busctl.output().find("b true") != std::string::npos;
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::unique_ptr<ChildProcess> xpud_;
  xpu::XpudClient client_{xpu::ClientOptions{bus_.address(), 2s}};
  unsigned calls_ = 0;
};

TEST_F(CxpuInstanceTest, TheLibraryHoldsTheInstanceWithItsBoundUntilDestroyed) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  EXPECT_TRUE(instances_supported());

  auto made = client_.create_instance(1, "4f3c2a1b0e9d", 8 * kGiB, "", kCallTimeout);
  ASSERT_TRUE(made) << made.error() << "\n" << xpud_->output();
  // Global memory bounded as asked, L3 left as the vendor's runtime leaves it.
  EXPECT_THAT(library_instances(),
              ElementsAre("00000000:3C:00.0 4f3c2a1b0e9d 8589934592 " + std::string(kNoLimit)));
  auto listed = client_.list_instances();
  ASSERT_TRUE(listed) << listed.error();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].index, 1u);
  EXPECT_EQ((*listed)[0].id, "4f3c2a1b0e9d");
  EXPECT_EQ((*listed)[0].memory_limit_bytes, 8 * kGiB);
  auto [status, table] = xpuctl({"instances"});
  EXPECT_EQ(status, 0) << table;
  EXPECT_THAT(table, HasSubstr("4f3c2a1b0e9d"));
  EXPECT_THAT(table, HasSubstr("8192MiB"));

  // The same again changes nothing (the fake would refuse a second create of the id); another
  // limit is set on the instance there is.
  ASSERT_TRUE(client_.create_instance(1, "4f3c2a1b0e9d", 8 * kGiB, "", kCallTimeout));
  ASSERT_TRUE(client_.create_instance(1, "4f3c2a1b0e9d", 4 * kGiB, "", kCallTimeout));
  EXPECT_THAT(library_instances(),
              ElementsAre("00000000:3C:00.0 4f3c2a1b0e9d 4294967296 " + std::string(kNoLimit)));
  EXPECT_EQ(client_.list_instances()->at(0).memory_limit_bytes, 4 * kGiB);

  auto destroyed = client_.destroy_instance(1, "4f3c2a1b0e9d", kCallTimeout);
  ASSERT_TRUE(destroyed) << destroyed.error();
  EXPECT_THAT(library_instances(), IsEmpty());
  EXPECT_THAT(*client_.list_instances(), IsEmpty());
  auto again = client_.destroy_instance(1, "4f3c2a1b0e9d", kCallTimeout);
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error(), HasSubstr(std::string(xpu::names::kErrorNoSuchInstance)));
}

// What the CDI spec of a share has the runtime run around a container: its instance is named as
// the vendor's runtime names it, the first 12 characters of the container id.
TEST_F(CxpuInstanceTest, TheOciHooksMakeAndDestroyTheContainersInstance) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  const std::string state =
      R"({"ociVersion":"1.2.0","id":"0123456789abcdef0123","status":"created","pid":4242,)"
      R"("bundle":"/run/containerd/io.containerd.runtime.v2.task/k8s.io/0123456789abcdef0123",)"
      R"("annotations":{"io.kubernetes.cri.container-type":"container"}})";
  auto [made_status, made_output] = hook({"hook-create-instance", "1", "8589934592"}, state);
  ASSERT_EQ(made_status, 0) << made_output << xpud_->output();
  EXPECT_THAT(library_instances(),
              ElementsAre("00000000:3C:00.0 0123456789ab 8589934592 " + std::string(kNoLimit)));

  auto [gone_status, gone_output] = hook({"hook-destroy-instance", "1"}, state);
  EXPECT_EQ(gone_status, 0) << gone_output;
  EXPECT_THAT(library_instances(), IsEmpty());
  // poststop also runs for a container whose creation failed before its instance was made.
  auto [again_status, again_output] = hook({"hook-destroy-instance", "1"}, state);
  EXPECT_EQ(again_status, 0) << again_output;

  // Input that is no container state fails the hook, and so the container's creation.
  for (const std::string bad : {"", "not json", "[1]", R"({"id":""})", R"({"id":42})",
                                R"({"status":"created"})", R"({"id":"a/b/c"})"}) {
    auto [status, output] = hook({"hook-create-instance", "1", "1024"}, bad);
    EXPECT_EQ(status, 1) << bad << ": " << output;
  }
  EXPECT_THAT(library_instances(), IsEmpty());
  auto [refused_status, refused_output] = hook({"hook-create-instance", "1", "1024"}, "[1]");
  EXPECT_THAT(refused_output, HasSubstr("not an OCI container state"));
}

TEST_F(CxpuInstanceTest, TheHookRecordsWhoTheContainerIsFromTheRuntimesAnnotations) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  // containerd's CRI annotations, as runc hands them to the hook in the state; the bundle in
  // containerd's task directory says containerd wrote them (xpuctl/oci_state.h).
  const std::string containerd =
      R"({"ociVersion":"1.2.0","id":"aaaabbbbccccdddd","status":"created","pid":1,)"
      R"("bundle":"/run/containerd/io.containerd.runtime.v2.task/k8s.io/aaaabbbbccccdddd",)"
      R"("annotations":{"io.kubernetes.cri.container-type":"container",)"
      R"("io.kubernetes.cri.sandbox-namespace":"team","io.kubernetes.cri.sandbox-name":"train-0",)"
      R"("io.kubernetes.cri.container-name":"main"}})";
  // CRI-O's keys, with a pod name that is no Kubernetes name and no mark of CRI-O's: the
  // instance is made, without owner.
  const std::string odd =
      R"({"ociVersion":"1.2.0","id":"eeeeffff00001111","status":"created","pid":2,)"
      R"("annotations":{"io.kubernetes.pod.namespace":"team","io.kubernetes.pod.name":"Bad Pod",)"
      R"("io.kubernetes.container.name":"main"}})";
  ASSERT_EQ(hook({"hook-create-instance", "0", "1073741824"}, containerd).first, 0);
  ASSERT_EQ(hook({"hook-create-instance", "1", "2147483648"}, odd).first, 0);
  auto listed = client_.list_instances();
  ASSERT_TRUE(listed) << listed.error();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, "aaaabbbbcccc");
  EXPECT_EQ((*listed)[0].owner, "team/train-0/main");
  EXPECT_EQ((*listed)[1].owner, "");
  auto [status, output] = xpuctl({"instances"});
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("team/train-0/main"));

  // An owner that is no <namespace>/<pod>/<container> is refused before anything is made.
  for (const std::string bad : {"team/pod", "Team/pod/main", "a/b/c/d", "team//main", "/p/c"}) {
    auto refused = client_.create_instance(0, "zzz", kGiB, bad, kCallTimeout);
    ASSERT_FALSE(refused) << bad;
    EXPECT_THAT(refused.error(), HasSubstr("owner must be empty or")) << bad;
  }
  EXPECT_EQ(library_instances().size(), 2u);
}

TEST_F(CxpuInstanceTest, TheInstanceHookIsACommandThatReachesThisXpud) {
  const std::string xpuctl_path = binary_path("xpuctl/xpuctl").string();
  ASSERT_NO_FATAL_FAILURE(
      start_xpuml("devices 2\n", FAKE_XPUML, "[cxpu]\nhook_program = " + xpuctl_path + "\n"));
  auto manager = client_.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  ASSERT_THAT(manager->instance_hook, ElementsAre(xpuctl_path, "--bus-address", bus_.address()));
  // The hook takes a memory share and its claim (CreateShareInstance).
  EXPECT_TRUE(manager->share_instances_supported);

  // As a runtime runs the hook the DRA driver writes: the command, the xpuctl command, the
  // container's state on standard input.
  std::string command = "exec";
  for (const auto& arg : manager->instance_hook) command += " '" + arg + "'";
  command +=
      " hook-create-instance 0 4294967296 <<'EOF'\n"
      R"({"ociVersion":"1.2.0","id":"fedcba9876543210","status":"created","pid":1})"
      "\nEOF\n";
  ChildProcess run({"/bin/sh", "-c", command}, dir_.path() / "hook.run");
  ASSERT_EQ(run.wait(15s), 0) << run.output();
  EXPECT_THAT(library_instances(),
              ElementsAre("00000000:3B:00.0 fedcba987654 4294967296 " + std::string(kNoLimit)));
}

TEST_F(CxpuInstanceTest, NoInstancesNoHook) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 1\n", FAKE_XPUML_OLD));
  auto manager = client_.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_THAT(manager->instance_hook, IsEmpty());
  EXPECT_FALSE(manager->share_instances_supported);
}

TEST_F(CxpuInstanceTest, BadArgumentsReachNeitherTheLibraryNorTheRecord) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  const std::string invalid(xpu::names::kErrorInvalidArgument);
  for (const std::string id : {"", "0123456789abc", "a/b", "id with space", "caf\xc3\xa9"}) {
    auto refused = client_.create_instance(0, id, kGiB, "", kCallTimeout);
    ASSERT_FALSE(refused) << id;
    EXPECT_THAT(refused.error(), HasSubstr(invalid)) << id;
  }
  auto zero = client_.create_instance(0, "abc", 0, "", kCallTimeout);
  ASSERT_FALSE(zero);
  EXPECT_THAT(zero.error(), HasSubstr("at least 1 byte"));
  auto above = client_.create_instance(0, "abc", 32 * kGiB + 1, "", kCallTimeout);
  ASSERT_FALSE(above);
  EXPECT_THAT(above.error(), HasSubstr("above the card's 34359738368"));
  auto no_card = client_.create_instance(7, "abc", kGiB, "", kCallTimeout);
  ASSERT_FALSE(no_card);
  EXPECT_THAT(no_card.error(), HasSubstr(std::string(xpu::names::kErrorNoSuchDevice)));
  EXPECT_FALSE(fs::exists(state_file()));
  EXPECT_THAT(*client_.list_instances(), IsEmpty());

  // The whole card is a valid bound.
  ASSERT_TRUE(client_.create_instance(0, "whole", 32 * kGiB, "", kCallTimeout));
  EXPECT_EQ(library_instances().size(), 1u);
}

TEST_F(CxpuInstanceTest, AnInstanceWhoseBoundFailsIsDestroyedAgain) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml(
      "devices 1\nfail xpumlDeviceSetCxpuInstanceMemoryLimit INSUFFICIENT_RESOURCES\n"));
  auto made = client_.create_instance(0, "abc", kGiB, "", kCallTimeout);
  ASSERT_FALSE(made);
  EXPECT_THAT(made.error(), HasSubstr(std::string(xpu::names::kErrorBackend)));
  EXPECT_THAT(made.error(), HasSubstr("xpumlDeviceSetCxpuInstanceMemoryLimit"));
  // The fake wrote the created instance, then its destruction.
  ASSERT_TRUE(fs::exists(state_file()));
  EXPECT_THAT(library_instances(), IsEmpty());
  EXPECT_THAT(*client_.list_instances(), IsEmpty());
  EXPECT_THAT(xpud_->output(), HasSubstr("CreateInstance abc"));
}

TEST_F(CxpuInstanceTest, OnlyRootChangesInstancesAndAnyoneMayList) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 1\n"));
  ASSERT_TRUE(client_.create_instance(0, "mine", kGiB, "", kCallTimeout));
  auto [status, output] =
      call_as_nobody({"CreateInstance", "uint32:0", "string:theirs", "uint64:1024", "string:"});
  EXPECT_NE(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("CreateInstance is for root"));
  auto [destroy_status, destroy_output] =
      call_as_nobody({"DestroyInstance", "uint32:0", "string:mine"});
  EXPECT_NE(destroy_status, 0) << destroy_output;
  EXPECT_THAT(destroy_output, HasSubstr("DestroyInstance is for root"));
  EXPECT_EQ(library_instances().size(), 1u);
  auto [list_status, list_output] = call_as_nobody({"ListInstances"});
  EXPECT_EQ(list_status, 0) << list_output;
  EXPECT_THAT(list_output, HasSubstr("\"mine\""));
}

TEST_F(CxpuInstanceTest, AnOlderLibraryHasNoInstances) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 1\n", FAKE_XPUML_OLD));
  EXPECT_FALSE(instances_supported());
  auto made = client_.create_instance(0, "abc", kGiB, "", kCallTimeout);
  ASSERT_FALSE(made);
  EXPECT_THAT(made.error(), HasSubstr(std::string(xpu::names::kErrorNotSupported)));
  EXPECT_THAT(made.error(), HasSubstr("xpumlDeviceCreateCxpuInstance"));
}

TEST_F(CxpuInstanceTest, APhysicalFunctionWithItsVirtualFunctionsOnTakesNone) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 1\ndevice 0\nmax_vfs 2\n"));
  ASSERT_TRUE(client_.configure_virtual_functions(0, 2, kCallTimeout));
  auto on_pf = client_.create_instance(0, "abc", kGiB, "", kCallTimeout);
  ASSERT_FALSE(on_pf);
  EXPECT_THAT(on_pf.error(), HasSubstr("make the instance on one of them"));
  // A virtual function (index 1, 16 GiB) is a card of its own to the library.
  auto on_vf = client_.create_instance(1, "abc", 2 * kGiB, "", kCallTimeout);
  ASSERT_TRUE(on_vf) << on_vf.error();
  EXPECT_THAT(library_instances(),
              ElementsAre("00000000:3B:00.1 abc 2147483648 " + std::string(kNoLimit)));
}

TEST_F(CxpuInstanceTest, TheRecordGoesWithTheCard) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  ASSERT_TRUE(client_.create_instance(1, "abc", kGiB, "", kCallTimeout));
  ASSERT_EQ(client_.list_instances()->size(), 1u);
  write_file(dir_.path() / "scenario.new", "devices 1\n");
  fs::rename(dir_.path() / "scenario.new", dir_.path() / "scenario");
  ASSERT_TRUE(wait_until([&] { return client_.list_devices()->size() == 1; }, 10s))
      << xpud_->output();
  EXPECT_THAT(*client_.list_instances(), IsEmpty());
  EXPECT_THAT(xpud_->output(), HasSubstr("cXPU instance abc on xpu1 forgotten"));
}

TEST_F(CxpuInstanceTest, TheSimBackendKeepsInstancesToo) {
  ASSERT_NO_FATAL_FAILURE(start("[daemon]\nbackend = sim\n[sim]\ndevices = 2\n"));
  EXPECT_TRUE(instances_supported());
  auto [made_status, made_output] = xpuctl({"create-instance", "1", "abc", "1073741824"});
  EXPECT_EQ(made_status, 0) << made_output;
  EXPECT_THAT(made_output,
              HasSubstr("xpu1: cXPU instance abc, memory bounded to 1073741824 bytes"));
  auto [json_status, json] = xpuctl({"instances", "--json"});
  EXPECT_EQ(json_status, 0) << json;
  EXPECT_THAT(json,
              HasSubstr(R"({"index":1,"id":"abc","memory_limit_bytes":1073741824,"owner":""})"));
  auto [gone_status, gone_output] = xpuctl({"destroy-instance", "1", "abc"});
  EXPECT_EQ(gone_status, 0) << gone_output;
  auto [again_status, again_output] = xpuctl({"destroy-instance", "1", "abc"});
  EXPECT_EQ(again_status, 1) << again_output;
  EXPECT_THAT(again_output, HasSubstr("has no cXPU instance abc"));
  auto [usage_status, usage_output] = xpuctl({"create-instance", "1", "abc"});
  EXPECT_EQ(usage_status, 2);
  EXPECT_THAT(usage_output, HasSubstr("usage: create-instance INDEX ID BYTES"));
}

// One share claim used by two containers (two pods on one ResourceClaim, or two containers of
// one pod): the hook names the share, and xpud holds one bound for it, not one per container.
TEST_F(CxpuInstanceTest, AShareBoundsOneContainerAtATime) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  const std::string share = "3f1c2a9e-1111-4222-8333-444455556666/share-1";
  const std::vector<std::string> create = {"hook-create-instance", "1", "8589934592", share,
                                           "team/shares"};
  auto a = container_process();
  auto b = container_process();
  const std::string a_state = container_state("aaaaaaaaaaaa0000", a->pid(), "pod-a");
  const std::string b_state = container_state("bbbbbbbbbbbb0000", b->pid(), "pod-b");

  auto [a_status, a_output] = hook(create, a_state);
  ASSERT_EQ(a_status, 0) << a_output << xpud_->output();
  // The runtime runs the hook again for the same container (a retried create): still one.
  ASSERT_EQ(hook(create, a_state).first, 0);
  EXPECT_THAT(recorded(), ElementsAre("1 aaaaaaaaaaaa 8589934592 team/pod-a/main"));

  // Before: a second 8 GiB instance for the same 8 GiB grant. Now the second container's
  // creation fails, with the reason the kubelet's event carries.
  auto [b_status, b_output] = hook(create, b_state);
  EXPECT_EQ(b_status, 1) << b_output;
  EXPECT_THAT(b_output, HasSubstr("claim team/shares: memory share " + share +
                                  " of xpu1 is bounded by cXPU instance aaaaaaaaaaaa "
                                  "(team/pod-a/main) already, whose container still runs"));
  EXPECT_THAT(b_output, HasSubstr(std::string(xpu::names::kErrorInUse)));
  EXPECT_THAT(library_instances(),
              ElementsAre("00000000:3C:00.0 aaaaaaaaaaaa 8589934592 " + std::string(kNoLimit)));
  EXPECT_THAT(xpud_->output(), HasSubstr("CreateShareInstance bbbbbbbbbbbb"));

  // Another share of the same card is another bound; the same container's instance bounds one.
  const std::string other = "3f1c2a9e-1111-4222-8333-444455556666/share-2";
  EXPECT_EQ(hook({"hook-create-instance", "1", "8589934592", other, "team/shares"}, b_state).first,
            0);
  auto [both_status, both_output] =
      hook({"hook-create-instance", "1", "8589934592", other, "team/shares"}, a_state);
  EXPECT_EQ(both_status, 1);
  EXPECT_THAT(both_output, HasSubstr("bounds memory share " + share + " already"));

  // The first container stops: its poststop hook frees the share for the next (a restarted
  // container is a new one, created after the old one's poststop).
  ASSERT_EQ(hook({"hook-destroy-instance", "1"}, a_state).first, 0);
  auto c = container_process();
  auto [c_status, c_output] = hook(create, container_state("cccccccccccc0000", c->pid(), "pod-a"));
  EXPECT_EQ(c_status, 0) << c_output;
  EXPECT_THAT(recorded(), ElementsAre("1 bbbbbbbbbbbb 8589934592 team/pod-b/main",
                                      "1 cccccccccccc 8589934592 team/pod-a/main"));
}

// The runtime (or the node) died before the container's poststop hook ran: the container is
// gone, its instance is not. Its pidfd says so, and the share goes to the next container.
TEST_F(CxpuInstanceTest, AContainerGoneWithoutItsPoststopLeavesTheShareToTheNext) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  const std::vector<std::string> create = {"hook-create-instance", "0", "17179869184",
                                           "claim-uid/share", "team/shares"};
  auto a = container_process();
  ASSERT_EQ(hook(create, container_state("aaaaaaaaaaaa0000", a->pid(), "pod-a")).first, 0);
  // 16 GiB of this 32 GiB card stay taken by another container all along.
  auto other = container_process();
  ASSERT_EQ(hook({"hook-create-instance", "0", "17179869184", "claim-uid/other", "team/shares"},
                 container_state("dddddddddddd0000", other->pid(), "pod-d"))
                .first,
            0);
  a->signal(SIGKILL);
  ASSERT_TRUE(a->wait(10s));
  auto b = container_process();
  auto [status, output] = hook(create, container_state("bbbbbbbbbbbb0000", b->pid(), "pod-b"));
  ASSERT_EQ(status, 0) << output << xpud_->output();
  EXPECT_THAT(
      library_instances(),
      UnorderedElementsAre("00000000:3B:00.0 dddddddddddd 17179869184 " + std::string(kNoLimit),
                           "00000000:3B:00.0 bbbbbbbbbbbb 17179869184 " + std::string(kNoLimit)));
  EXPECT_THAT(recorded(), ElementsAre("0 bbbbbbbbbbbb 17179869184 team/pod-b/main",
                                      "0 dddddddddddd 17179869184 team/pod-d/main"));
  EXPECT_THAT(xpud_->output(), HasSubstr("cXPU instance aaaaaaaaaaaa on xpu0 destroyed: its "
                                         "container exited without its poststop hook"));
  // Its late poststop (the runtime back) finds nothing to do and is no error.
  EXPECT_EQ(
      hook({"hook-destroy-instance", "0"}, container_state("aaaaaaaaaaaa0000", a->pid(), "pod-a"))
          .first,
      0);
}

TEST_F(CxpuInstanceTest, TheCardsInstancesHoldAtMostItsMemoryTogether) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  ASSERT_TRUE(client_.create_instance(0, "a", 16 * kGiB, "", kCallTimeout));
  ASSERT_TRUE(client_.create_instance(0, "b", 16 * kGiB, "", kCallTimeout));
  auto full = client_.create_instance(0, "c", 1, "", kCallTimeout);
  ASSERT_FALSE(full);
  EXPECT_THAT(full.error(), HasSubstr(std::string(xpu::names::kErrorInUse)));
  EXPECT_THAT(full.error(), HasSubstr("cXPU instance c on xpu0 of 1 bytes does not fit: the "
                                      "card's other instances hold 34359738368 of its "
                                      "34359738368 bytes"));
  // Through the hook too, share or not.
  auto process = container_process();
  auto [status, output] =
      hook({"hook-create-instance", "0", "1073741824", "claim-uid/share", "team/shares"},
           container_state("eeeeeeeeeeee0000", process->pid(), "pod-e"));
  EXPECT_EQ(status, 1);
  EXPECT_THAT(output, HasSubstr("does not fit"));
  // An instance's own limit is not counted twice when it changes, and what it gives back fits.
  ASSERT_TRUE(client_.create_instance(0, "a", 8 * kGiB, "", kCallTimeout));
  EXPECT_FALSE(client_.create_instance(0, "b", 24 * kGiB + 1, "", kCallTimeout));
  ASSERT_TRUE(client_.create_instance(0, "c", 8 * kGiB, "", kCallTimeout));
  // Another card is another sum.
  ASSERT_TRUE(client_.create_instance(1, "a", 32 * kGiB, "", kCallTimeout));
  EXPECT_EQ(library_instances().size(), 4u);
}

TEST_F(CxpuInstanceTest, TheOwnerIsInTheClaimsNamespaceWhateverTheAnnotationsSay) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  auto a = container_process();
  // The spec's annotations name another namespace than the claim's (a runtime that let the pod
  // write them): no owner rather than another tenant's pod.
  ASSERT_EQ(hook({"hook-create-instance", "0", "1073741824", "claim-uid/share", "team/shares"},
                 container_state("aaaaaaaaaaaa0000", a->pid(), "their-pod", "victim"))
                .first,
            0);
  EXPECT_THAT(recorded(), ElementsAre("0 aaaaaaaaaaaa 1073741824 "));
}

TEST_F(CxpuInstanceTest, AShareInstanceNeedsALiveContainerAndAShareKey) {
  ASSERT_NO_FATAL_FAILURE(start_xpuml("devices 2\n"));
  // A container already gone (or a pid that is none): the hook cannot watch it.
  auto gone = container_process();
  const pid_t pid = gone->pid();
  gone->signal(SIGKILL);
  ASSERT_TRUE(gone->wait(10s));
  for (const pid_t bad : {pid, 0}) {
    auto [status, output] =
        hook({"hook-create-instance", "0", "1073741824", "claim-uid/share", "team/shares"},
             container_state("aaaaaaaaaaaa0000", bad, "pod-a"));
    EXPECT_EQ(status, 1) << output;
    EXPECT_THAT(output, bad == 0 ? HasSubstr("has no \"pid\"")
                                 : HasSubstr("cannot watch the container's process"));
  }
  auto [usage, usage_output] =
      hook({"hook-create-instance", "0", "1073741824", "claim-uid/share", "no-slash"},
           container_state("aaaaaaaaaaaa0000", 1, "pod-a"));
  EXPECT_EQ(usage, 2) << usage_output;
  auto [three, three_output] = hook({"hook-create-instance", "0", "1073741824", "claim-uid/share"},
                                    container_state("aaaaaaaaaaaa0000", 1, "pod-a"));
  EXPECT_EQ(three, 2) << three_output;
  EXPECT_THAT(three_output, HasSubstr("usage: hook-create-instance INDEX BYTES [SHARE CLAIM]"));

  // Over the bus: a share key that is none, and a `container` that is no live process's pidfd
  // (a file polls readable at once).
  const int not_a_pidfd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(not_a_pidfd, 0);
  for (const std::string& bad_share :
       std::vector<std::string>{"", "a b", std::string(129, 'a'), "caf\xc3\xa9"}) {
    auto refused =
        client_.create_share_instance(0, "abc", kGiB, "", bad_share, not_a_pidfd, kCallTimeout);
    ASSERT_FALSE(refused) << bad_share;
    EXPECT_THAT(refused.error(), HasSubstr("share must have 1 to 128")) << bad_share;
  }
  auto dead =
      client_.create_share_instance(0, "abc", kGiB, "", "claim/share", not_a_pidfd, kCallTimeout);
  ::close(not_a_pidfd);
  ASSERT_FALSE(dead);
  EXPECT_THAT(dead.error(), HasSubstr("has exited already"));
  EXPECT_FALSE(fs::exists(state_file()));
}

}  // namespace
