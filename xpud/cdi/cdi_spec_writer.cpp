#include "xpud/cdi/cdi_spec_writer.h"

#include <spdlog/spdlog.h>

namespace xpud {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

CdiSpecWriter::CdiSpecWriter(std::filesystem::path path, std::string host_node_stand_in)
    : file_(std::move(path)), host_node_stand_in_(std::move(host_node_stand_in)) {}

void CdiSpecWriter::update(const std::vector<DeviceIdentity>& cards) {
  if (!rendered_for_ || *rendered_for_ != cards) {
    rendering_ = render_cdi_spec(CdiSpecInput{cards, host_node_stand_in_});
    rendered_for_ = cards;
    synced_ = false;
    for (const auto& skip : rendering_.skipped)
      if (reported_skips_.insert(skip).second)
        spdlog::warn("CDI spec {}: {}", file_.path().string(), skip);
  }
  // Between changes only a stat: the file must still be the one written (nobody removed or
  // replaced it), or it is put back.
  if (synced_ && (rendering_.text.empty() || file_.unchanged_since_write())) return;
  sync();
}

void CdiSpecWriter::sync() {
  const std::string where = file_.path().string();
  if (rendering_.text.empty()) {
    auto removed = file_.remove();
    if (!removed) {
      if (removed.error() != last_error_) spdlog::error("{}; retrying", removed.error());
      last_error_ = removed.error();
      return;
    }
    if (*removed) spdlog::info("CDI spec {} removed: no card to describe", where);
  } else {
    auto written = file_.write(rendering_.text);
    if (!written) {
      if (written.error() != last_error_)
        spdlog::error("cannot write the CDI spec: {}; retrying with the next sample",
                      written.error());
      last_error_ = written.error();
      return;
    }
    if (*written)
      spdlog::info("CDI spec written to {}: kunlunxin.com/xpu={}", where,
                   joined(rendering_.devices));
  }
  if (!last_error_.empty()) spdlog::info("CDI spec {} is current again", where);
  last_error_.clear();
  synced_ = true;
}

void CdiSpecWriter::withdraw() {
  auto removed = file_.remove();
  if (!removed)
    spdlog::warn("{}", removed.error());
  else if (*removed)
    spdlog::info("CDI spec {} removed", file_.path().string());
  rendered_for_.reset();
  synced_ = false;
}

}  // namespace xpud
