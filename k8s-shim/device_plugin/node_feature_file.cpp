#include "k8s-shim/device_plugin/node_feature_file.h"

#include <sys/types.h>

#include <spdlog/spdlog.h>

#include "common/file_replacement.h"

namespace shim {
namespace {

constexpr mode_t kFileMode = 0644;  // facts, not secrets: NFD's worker reads them

// The label lines of a feature file, for the log.
std::string summary(std::string_view content) {
  std::string out;
  while (!content.empty()) {
    auto end = content.find('\n');
    auto line = content.substr(0, end);
    if (!line.empty() && line.front() != '#') out += (out.empty() ? "" : " ") + std::string(line);
    if (end == std::string_view::npos) break;
    content.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace

xpu::Status validate_feature_file_path(std::string_view path) {
  if (path.empty()) return xpu::Error{"must not be empty"};
  const std::string name = std::filesystem::path(path).filename().string();
  if (path.back() == '/' || name.empty() || name == "." || name == "..")
    return xpu::Error{"'" + std::string(path) + "' names a directory, not a file"};
  if (name.front() == '.')
    return xpu::Error{"'" + name +
                      "' starts with '.', and node-feature-discovery ignores such files"};
  return xpu::ok_status();
}

NodeFeatureFile::NodeFeatureFile(std::filesystem::path path)
    : path_(std::move(path)),
      directory_(path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".")),
      name_(path_.filename().string()) {}

void NodeFeatureFile::set_content(std::string content) {
  std::lock_guard lock(mutex_);
  content_ = std::move(content);
  ++generation_;
}

void NodeFeatureFile::sync() {
  std::string content;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    if (!content_) return;
    content = *content_;
    generation = generation_;
  }
  auto written = write_if_changed(content);
  if (!written) {
    if (written.error() != last_error_)
      spdlog::warn("cannot write node labels for node-feature-discovery: {}; retrying",
                   written.error());
    last_error_ = written.error();
    return;
  }
  last_error_.clear();
  if (*written)
    spdlog::info("node labels for node-feature-discovery written to {}: {}", path_.string(),
                 summary(content));
  else if (generation != synced_generation_)
    spdlog::debug("node labels for node-feature-discovery unchanged in {}", path_.string());
  synced_generation_ = generation;
}

xpu::Result<bool> NodeFeatureFile::write_if_changed(const std::string& content) {
  // The directory may be a symlink on the host (it is followed).
  return xpu::replace_file_if_changed(directory_, name_, content, xpu::FileReplacement{kFileMode});
}

void NodeFeatureFile::remove() {
  auto removed = xpu::remove_replaced_file(directory_, name_);
  if (!removed)
    spdlog::warn("{}", removed.error());
  else if (*removed)
    spdlog::info("removed {}: node-feature-discovery drops its labels at its next pass",
                 path_.string());
}

}  // namespace shim
