// End-to-end: the real `xpu-k8s-shim token-sync` as a child process against a projected volume
// that rotates the way the kubelet rotates it, with a reader playing the XPU runtime.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/token_sync/projected_volume.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace shim::token_sync {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProjectedVolume;
using testing::read_file;
using xpu::test::ChildProcess;
using xpu::test::TempDir;
using xpu::test::wait_until;

// Generous: the CI also runs this under ASan/UBSan on a loaded 2-core machine.
constexpr auto kDeadline = 15s;

std::uint32_t fnv1a(std::string_view text) {
  std::uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash;
}

// "<generation>.<length>.<checksum>.<payload>": a reader can tell a complete record from a
// truncated or mixed one. Only characters a token may hold.
std::string framed_record(unsigned generation, std::mt19937& random) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::uniform_int_distribution<std::size_t> length(16, 8192), pick(0, sizeof kAlphabet - 2);
  std::string payload(length(random), 'x');
  for (auto& c : payload) c = kAlphabet[pick(random)];
  char header[64];
  std::snprintf(header, sizeof header, "%u.%zu.%08x.", generation, payload.size(), fnv1a(payload));
  return header + payload;
}

// The generation of a complete record, or nullopt when it is partial or corrupt.
std::optional<unsigned> check_record(std::string_view record) {
  unsigned generation = 0;
  std::size_t length = 0;
  unsigned checksum = 0;
  int consumed = 0;
  const std::string head(record.substr(0, 64));
  if (std::sscanf(head.c_str(), "%u.%zu.%8x.%n", &generation, &length, &checksum, &consumed) != 3 ||
      consumed == 0)
    return std::nullopt;
  std::string_view payload = record.substr(static_cast<std::size_t>(consumed));
  if (payload.size() != length || fnv1a(payload) != checksum) return std::nullopt;
  return generation;
}

std::string ca_for(const std::string& record) {
  return testing::valid_ca_cert(record);
}

std::optional<unsigned> check_ca(std::string_view ca) {
  constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----\n",
                             kEnd = "\n-----END CERTIFICATE-----\n";
  if (!ca.starts_with(kBegin) || !ca.ends_with(kEnd)) return std::nullopt;
  return check_record(ca.substr(kBegin.size(), ca.size() - kBegin.size() - kEnd.size()));
}

// What the XPU runtime does: open by name, read it all. Never through a symlink, and the file
// must be 0600 whenever it is seen.
struct ReadResult {
  std::string content;
  std::string problem;  // empty when the file was there, regular and 0600
};
ReadResult read_as_runtime(const fs::path& path) {
  ReadResult result;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    result.problem = path.filename().string() + ": open failed: " + std::strerror(errno);
    return result;
  }
  struct stat st {};
  ::fstat(fd, &st);
  if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0600)
    result.problem = path.filename().string() + ": not a regular 0600 file";
  char buffer[16384];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    result.content.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return result;
}

std::string log_text(const fs::path& log) {
  return read_file(log).value_or("");
}

std::string shim_binary() {
  return xpu::test::binary_path("k8s-shim/xpu-k8s-shim").string();
}

class TokenSyncProcessTest : public ::testing::Test {
 protected:
  // `environment` is set in the child's environment, `unset` names variables removed from it.
  std::unique_ptr<ChildProcess> start(
      std::vector<std::string> extra_args = {},
      std::map<std::string, std::string> environment = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                                        {"KUBERNETES_SERVICE_PORT", "443"}},
      std::vector<std::string> unset = {}) {
    std::vector<std::string> argv = {shim_binary(),    "token-sync", "--source-dir",
                                     source_.string(), "--dest-dir", dest_.string(),
                                     "--log-level",    "debug"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    return std::make_unique<ChildProcess>(argv, log_, environment, unset);
  }

  void publish(const std::string& record) {
    volume_.publish({{"token", record}, {"ca.crt", ca_for(record)}, {"namespace", "kube-system"}});
  }

  // Stops the child the way the kubelet does and expects a clean exit.
  void expect_clean_stop(ChildProcess& child, int signo = SIGTERM) {
    child.signal(signo);
    auto status = child.wait(kDeadline);
    ASSERT_TRUE(status.has_value()) << "no exit within the deadline after signal " << signo;
    EXPECT_EQ(*status, 0) << "exit status (128+N: killed by signal N)";
  }

  TempDir temp_;
  fs::path source_ = temp_.path() / "serviceaccount";
  fs::path dest_ = temp_.path() / "xpu-runtime" / "auth";
  fs::path log_ = temp_.path() / "token-sync.log";
  ProjectedVolume volume_{source_};
  std::mt19937 random_{20261129};
};

TEST_F(TokenSyncProcessTest, RotationsNeverShowTheRuntimeAMissingOrPartialFile) {
  constexpr unsigned kRotations = 200;
  constexpr unsigned kCheckpointEvery = 50;
  std::string record = framed_record(0, random_);
  publish(record);
  // A long interval: every update below has to come from inotify.
  auto child = start({"--interval", "3600"});
  ASSERT_TRUE(wait_until([&] { return read_file(dest_ / "token") == record; }, kDeadline))
      << log_text(log_);
  ASSERT_TRUE(wait_until([&] { return fs::exists(dest_ / "kubeconfig"); }, kDeadline))
      << log_text(log_);
  const auto kubeconfig = read_file(dest_ / "kubeconfig");

  std::atomic<bool> stop_reading{false};
  std::atomic<unsigned> latest_seen{0};
  std::vector<std::string> problems;
  std::set<unsigned> generations_seen;
  std::size_t reads = 0;
  std::thread reader([&] {
    while (!stop_reading.load()) {
      auto token = read_as_runtime(dest_ / "token");
      auto ca = read_as_runtime(dest_ / "ca.crt");
      auto config = read_as_runtime(dest_ / "kubeconfig");
      auto ns = read_as_runtime(dest_ / "namespace");
      for (const auto* read : {&token, &ca, &config, &ns})
        if (!read->problem.empty()) problems.push_back(read->problem);
      auto generation = check_record(token.content);
      if (!generation)
        problems.push_back("partial or corrupt token of " + std::to_string(token.content.size()) +
                           " bytes");
      else {
        generations_seen.insert(*generation);
        latest_seen = *generation;
      }
      if (!check_ca(ca.content))
        problems.push_back("partial or corrupt ca.crt of " + std::to_string(ca.content.size()) +
                           " bytes");
      if (config.content != kubeconfig) problems.push_back("kubeconfig changed or partial");
      if (ns.content != "kube-system") problems.push_back("namespace is '" + ns.content + "'");
      ++reads;
    }
  });

  // An ASSERT below returns early; the reader must still be stopped before it goes away.
  struct StopReader {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~StopReader() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } stop_reader{stop_reading, reader};

  for (unsigned generation = 1; generation <= kRotations; ++generation) {
    record = framed_record(generation, random_);
    publish(record);
    // Vary the pace so the syncer is caught both idle and mid-sync.
    if (generation % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(generation % 7));
    // Now and then let the runtime catch up, so it provably reads across several updates
    // however loaded the machine is.
    if (generation % kCheckpointEvery == 0) {
      ASSERT_TRUE(wait_until([&] { return latest_seen.load() >= generation; }, kDeadline))
          << "rotation " << generation << " never reached the reader\n"
          << log_text(log_);
    }
  }
  const bool converged = wait_until(
      [&] {
        return read_file(dest_ / "token") == record &&
               read_file(dest_ / "ca.crt") == ca_for(record);
      },
      kDeadline);
  stop_reading = true;
  reader.join();

  EXPECT_TRUE(converged) << "the destination never reached the last rotation\n" << log_text(log_);
  EXPECT_TRUE(problems.empty()) << problems.size() << " bad reads out of " << reads
                                << ", first: " << problems.front();
  RecordProperty("reads", static_cast<int>(reads));
  RecordProperty("generations_seen", static_cast<int>(generations_seen.size()));
  EXPECT_GT(reads, 0u);
  EXPECT_GE(generations_seen.size(), kRotations / kCheckpointEvery)
      << "the reader saw too few versions for the test to mean anything";
  // Credentials never reach the log: no token payload, in whole or in part.
  const std::string log = log_text(log_);
  EXPECT_THAT(log, Not(HasSubstr(record.substr(record.rfind('.') + 1, 16))));
  EXPECT_THAT(log, HasSubstr("updated " + (dest_ / "token").string()));
  expect_clean_stop(*child);
}

TEST_F(TokenSyncProcessTest, SigtermAndSigintExitZero) {
  publish(framed_record(0, random_));
  for (int signo : {SIGTERM, SIGINT}) {
    auto child = start();
    ASSERT_TRUE(wait_until(
        [&] {
          return log_text(log_).find("created " + (dest_ / "kubeconfig").string()) !=
                     std::string::npos ||
                 log_text(log_).find("is in sync") != std::string::npos;
        },
        kDeadline))
        << log_text(log_);
    expect_clean_stop(*child, signo);
    fs::remove(log_);
  }
}

TEST_F(TokenSyncProcessTest, BadFlagsExitTwoWithOneLineNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--interval", "0"}, "--interval: '0' is out of range"},
      {{"--interval", "ten"}, "--interval: 'ten' is not a non-negative integer"},
      {{"--interval", "86401"}, "--interval"},
      {{"--source-dir", ""}, "--source-dir: must not be empty"},
      {{"--dest-dir", ""}, "--dest-dir: must not be empty"},
      {{"--dest-dir", "/tmp/a\nb"}, "--dest-dir: contains a control character"},
      {{"--no-such-flag"}, "unknown option '--no-such-flag'"},
      {{"stray"}, "unexpected argument 'stray'"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {shim_binary(), "token-sync"};
    argv.insert(argv.end(), args.begin(), args.end());
    fs::remove(log_);
    ChildProcess child(argv, log_);
    auto status = child.wait(kDeadline);
    ASSERT_TRUE(status.has_value()) << message;
    EXPECT_EQ(*status, 2) << message;
    const std::string output = log_text(log_);
    EXPECT_THAT(output, HasSubstr(message));
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
  }
}

TEST_F(TokenSyncProcessTest, SameSourceAndDestExitTwo) {
  ChildProcess child(
      {shim_binary(), "token-sync", "--source-dir", "/tmp/x/", "--dest-dir", "/tmp/x"}, log_);
  auto status = child.wait(kDeadline);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 2);
  EXPECT_THAT(log_text(log_), HasSubstr("name the same directory"));
}

TEST_F(TokenSyncProcessTest, BadServiceHostIsReportedAndTheFilesStillSync) {
  const std::string record = framed_record(0, random_);
  publish(record);
  auto child = start({"--interval", "1"}, {{"KUBERNETES_SERVICE_HOST", "not a host!"},
                                           {"KUBERNETES_SERVICE_PORT", "443"}});
  ASSERT_TRUE(wait_until([&] { return read_file(dest_ / "token") == record; }, kDeadline))
      << log_text(log_);
  // Reported on every attempt (the interval is 1 s), and the process keeps running.
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string log = log_text(log_);
        std::size_t count = 0;
        for (auto at = log.find("KUBERNETES_SERVICE_HOST='not a host!'"); at != std::string::npos;
             at = log.find("KUBERNETES_SERVICE_HOST='not a host!'", at + 1))
          ++count;
        return count >= 2;
      },
      kDeadline))
      << log_text(log_);
  EXPECT_FALSE(fs::exists(dest_ / "kubeconfig"));
  expect_clean_stop(*child);
}

TEST_F(TokenSyncProcessTest, MissingServiceHostIsReported) {
  publish(framed_record(0, random_));
  auto child = start({}, {}, {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"});
  ASSERT_TRUE(wait_until(
      [&] {
        return log_text(log_).find("KUBERNETES_SERVICE_HOST is not set") != std::string::npos;
      },
      kDeadline))
      << log_text(log_);
  expect_clean_stop(*child);
}

TEST_F(TokenSyncProcessTest, TheIntervalSyncRepairsATamperedDestination) {
  const std::string record = framed_record(0, random_);
  publish(record);
  // The source never changes here, so only the interval can bring the files back.
  auto child = start({"--interval", "1"});
  ASSERT_TRUE(wait_until([&] { return read_file(dest_ / "token") == record; }, kDeadline))
      << log_text(log_);
  fs::remove(dest_ / "token");
  xpu::test::write_file(dest_ / "ca.crt", "tampered");
  EXPECT_TRUE(wait_until(
      [&] {
        return read_file(dest_ / "token") == record &&
               read_file(dest_ / "ca.crt") == ca_for(record);
      },
      kDeadline))
      << log_text(log_);
  expect_clean_stop(*child);
}

// A destination that refuses the files (here a plain file where the directory should be; in the
// fault matrix a full disk) sends no event when it can take them again, so the pass is retried
// after 1 s, 2 s, 4 s... rather than after the interval (found by the fault matrix: a freed disk
// kept the runtime on the old token for up to a minute).
TEST_F(TokenSyncProcessTest, ARefusedWriteIsRetriedSoonNotAfterTheInterval) {
  const std::string record = framed_record(2, random_);
  publish(record);
  fs::create_directories(dest_.parent_path());
  xpu::test::write_file(dest_, "in the way");
  auto child = start({"--interval", "3600"});
  ASSERT_TRUE(wait_until(
      [&] { return log_text(log_).find("exists but is not a directory") != std::string::npos; },
      kDeadline))
      << log_text(log_);
  EXPECT_THAT(log_text(log_), HasSubstr("trying " + dest_.string() + " again in 1 s"));
  fs::remove(dest_);
  EXPECT_TRUE(wait_until([&] { return read_file(dest_ / "token") == record; }, kDeadline))
      << log_text(log_);
  expect_clean_stop(*child);
}

TEST_F(TokenSyncProcessTest, ASourceThatAppearsLaterIsPickedUp) {
  fs::remove_all(source_);
  auto child = start({"--interval", "3600"});
  ASSERT_TRUE(wait_until([&] { return log_text(log_).find("cannot watch") != std::string::npos; },
                         kDeadline))
      << log_text(log_);
  ProjectedVolume late(source_);
  const std::string record = framed_record(1, random_);
  late.publish({{"token", record}, {"ca.crt", ca_for(record)}, {"namespace", "kube-system"}});
  EXPECT_TRUE(wait_until([&] { return read_file(dest_ / "token") == record; }, kDeadline))
      << log_text(log_);
  expect_clean_stop(*child);
}

}  // namespace
}  // namespace shim::token_sync
