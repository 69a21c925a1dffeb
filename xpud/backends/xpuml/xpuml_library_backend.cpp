#include "xpud/backends/xpuml/xpuml_library_backend.h"

#include <string>
#include <utility>

#include "xpud/backends/xpuml/xpuml_backend.h"
#include "xpud/backends/xpuml/xpuml_library.h"

namespace xpud {
namespace {

// Forwards every call to the xpuml backend and adds the library's file. A decorator rather than
// a member of the xpuml backend so that the backend stays as it is; the path is fixed for the
// backend's life, so any thread may read it.
class LibraryBackend final : public Backend {
 public:
  LibraryBackend(std::unique_ptr<Backend> backend, std::string library_path)
      : backend_(std::move(backend)), library_path_(std::move(library_path)) {}

  std::string_view name() const override { return backend_->name(); }
  std::string library_path() const override { return library_path_; }
  std::string driver_version() override { return backend_->driver_version(); }
  xpu::Result<std::vector<DeviceIdentity>> discover() override { return backend_->discover(); }
  DeviceReading read(const DeviceIdentity& device) override { return backend_->read(device); }
  VirtualFunctionControl* virtual_functions() override { return backend_->virtual_functions(); }

 private:
  std::unique_ptr<Backend> backend_;
  const std::string library_path_;
};

}  // namespace

xpu::Result<std::unique_ptr<Backend>> open_xpuml_backend(
    const std::vector<std::filesystem::path>& libraries, const std::filesystem::path& sysfs_root,
    bool* init_failed, std::shared_ptr<const topology::LinkTable> links) {
  auto library = xpuml::Library::open_first(libraries, init_failed);
  if (!library) return xpu::Error{library.error()};
  std::string path = (*library)->path().string();
  return std::unique_ptr<Backend>(std::make_unique<LibraryBackend>(
      make_xpuml_backend(std::move(*library), sysfs_root, std::move(links)), std::move(path)));
}

}  // namespace xpud
