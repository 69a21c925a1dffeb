#include "k8s-shim/token_sync/token_syncer.h"

#include <spdlog/spdlog.h>

#include "k8s-shim/token_sync/destination_directory.h"
#include "k8s-shim/token_sync/kubeconfig.h"

namespace shim::token_sync {
namespace {

void fail(SyncReport& report, std::string message) {
  spdlog::error("{}", message);
  report.errors.push_back(std::move(message));
}

// Logs the change (name and sizes, never the content: these are credentials).
void log_update(const DestinationDirectory& dir, std::string_view name,
                const DestinationDirectory::FileUpdate& update) {
  const std::string where = (dir.path() / name).string();
  using Change = DestinationDirectory::Change;
  switch (update.change) {
    case Change::Unchanged:
      break;
    case Change::ModeFixed:
      spdlog::warn("fixed the mode of {} to 0600 (content unchanged)", where);
      break;
    case Change::Created:
      spdlog::info("created {} ({} bytes)", where, update.size);
      break;
    case Change::Replaced:
      spdlog::info("updated {} ({} bytes, was {} bytes)", where, update.size, update.previous_size);
      break;
    case Change::ReplacedSymlink:
      spdlog::warn(
          "replaced a symlink or non-regular file at {} with a regular file ({} bytes); it was not "
          "followed",
          where, update.size);
      break;
  }
}

// False when the pass has to stop (a write failed: the next file would likely fail the same way).
bool write(DestinationDirectory& dir, std::string_view name, std::string_view content,
           SyncReport& report) {
  auto update = dir.write_file(name, content);
  if (!update) {
    fail(report, "cannot update " + (dir.path() / name).string() + ": " + update.error() +
                     "; the previous copy stays in place");
    report.destination_failed = true;
    return false;
  }
  log_update(dir, name, *update);
  if (update->change != DestinationDirectory::Change::Unchanged)
    report.changed_files.emplace_back(name);
  return true;
}

// Opens (creating or fixing) the destination and says so when it had to.
xpu::Result<DestinationDirectory> open_destination(const TokenSyncConfig& config) {
  const std::filesystem::path& path = config.dest_dir;
  auto dir = DestinationDirectory::open(path, config.dest_parent_dir);
  if (!dir) return dir;
  if (dir->created()) spdlog::info("created directory {} (mode 0700)", path.string());
  if (auto mode = dir->fixed_mode())
    spdlog::warn("fixed the mode of directory {} from {:04o} to 0700", path.string(), *mode);
  return dir;
}

}  // namespace

SyncReport sync_once(const TokenSyncConfig& config) {
  SyncReport report;
  auto files = read_service_account(config.source_dir, config.max_source_file_bytes);
  if (!files) {
    fail(report, "not syncing: " + files.error() + "; the previous copy in " +
                     config.dest_dir.string() + " stays in place");
    return report;
  }
  auto dir = open_destination(config);
  if (!dir) {
    fail(report, "not syncing: " + dir.error());
    report.destination_failed = true;
    return report;
  }

  // Token and CA first: the kubeconfig refers to them, so they must be in place before it is.
  if (!write(*dir, kTokenFile, files->token, report)) return report;
  if (!write(*dir, kCaCertFile, files->ca_cert, report)) return report;
  if (!write(*dir, kNamespaceFile, files->namespace_file, report)) return report;

  auto server = api_server_url(config.api_server);
  if (!server) {
    fail(report, "cannot write " + (config.dest_dir / kKubeconfigFile).string() + ": " +
                     server.error() + "; the previous kubeconfig (if any) stays in place");
    return report;
  }
  KubeconfigInputs inputs{*server, (config.dest_dir / kCaCertFile).string(),
                          (config.dest_dir / kTokenFile).string(), files->namespace_name};
  write(*dir, kKubeconfigFile, render_kubeconfig(inputs), report);
  if (report.changed_files.empty())
    spdlog::debug("{} is in sync with {}", config.dest_dir.string(), config.source_dir.string());
  return report;
}

void remove_stale_temp_files(const TokenSyncConfig& config) {
  auto dir = open_destination(config);
  if (!dir) return;  // the first sync reports why
  for (const auto& name : dir->remove_stale_temp_files())
    spdlog::info("removed {} left behind by an earlier run", (config.dest_dir / name).string());
}

}  // namespace shim::token_sync
