#include "xpud/backends/xpuml/xpuml_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "xpud/backends/xpuml/xpuml_return_codes.h"

namespace xpud::xpuml {
namespace {

// Longest xpumlErrorString text we pass on; anything longer is not a message.
constexpr std::size_t kMaxErrorStringLength = 256;

std::string dl_error() {
  const char* text = dlerror();
  return text != nullptr ? std::string(text) : std::string("unknown dlopen error");
}

template <typename Fn>
void resolve(void* handle, Function<Fn>& function) {
  dlerror();  // clear any stale error so a null result is judged on its own
  void* address = dlsym(handle, std::string(function.name).c_str());
  // POSIX guarantees object and function pointers convert; dlsym has no other way to return one.
  function.fn = reinterpret_cast<Fn>(address);
}

template <typename Fn>
void resolve_required(void* handle, Function<Fn>& function,
                      std::vector<std::string_view>& missing) {
  resolve(handle, function);
  if (!function.available()) missing.push_back(function.name);
}

}  // namespace

DlHandle::DlHandle(DlHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

DlHandle& DlHandle::operator=(DlHandle&& other) noexcept {
  if (this != &other) reset(std::exchange(other.handle_, nullptr));
  return *this;
}

void DlHandle::reset(void* handle) {
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = handle;
}

xpu::Result<std::unique_ptr<Library>> Library::open(const std::filesystem::path& path,
                                                    bool* init_failed) {
  if (init_failed != nullptr) *init_failed = false;
  auto loaded = load(path);
  if (!loaded) return xpu::Error{loaded.error()};
  return initialise(std::move(*loaded), init_failed);
}

xpu::Result<std::unique_ptr<Library>> Library::open_first(
    const std::vector<std::filesystem::path>& candidates, bool* init_failed) {
  if (init_failed != nullptr) *init_failed = false;
  if (candidates.empty()) return xpu::Error{"no libxpuml listed ([xpuml] library)"};
  std::string errors;
  for (const auto& candidate : candidates) {
    auto loaded = load(candidate);
    if (!loaded) {
      errors += (errors.empty() ? "" : "; ") + loaded.error();
      continue;
    }
    const std::filesystem::path& opened = (*loaded)->path();
    spdlog::info(
        "libxpuml: using {}{}", opened.string(),
        candidate == opened ? "" : " (the loader's search for " + candidate.string() + ")");
    return initialise(std::move(*loaded), init_failed);
  }
  if (candidates.size() == 1) return xpu::Error{std::move(errors)};
  return xpu::Error{"no usable libxpuml among " + std::to_string(candidates.size()) +
                    " candidates ([xpuml] library): " + errors};
}

xpu::Result<std::unique_ptr<Library>> Library::load(const std::filesystem::path& path) {
  const std::string shown = path.string();
  // A bare name ("libxpuml.so.1") is searched on the loader's path; only a path can be checked.
  if (shown.find('/') != std::string::npos) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      return xpu::Error{"libxpuml not found at " + shown +
                        " (is the XPU runtime installed? set [xpuml] library in xpud.conf)"};
  }
  DlHandle handle(dlopen(shown.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (handle.get() == nullptr)
    return xpu::Error{"cannot load libxpuml " + shown + ": " + dl_error()};
  Symbols symbols;
  std::vector<std::string_view> missing;
  void* h = handle.get();
  resolve_required(h, symbols.init, missing);
  resolve_required(h, symbols.shutdown, missing);
  resolve_required(h, symbols.system_get_driver_version, missing);
  resolve_required(h, symbols.device_get_count, missing);
  resolve_required(h, symbols.device_get_handle_by_index, missing);
  resolve_required(h, symbols.device_get_serial, missing);
  resolve_required(h, symbols.device_get_pci_info, missing);
  resolve_required(h, symbols.device_get_attributes, missing);
  resolve_required(h, symbols.device_get_memory_info, missing);
  resolve_required(h, symbols.device_get_utilization_rates, missing);
  resolve_required(h, symbols.device_get_temperature, missing);
  resolve_required(h, symbols.device_get_power_usage, missing);
  resolve_required(h, symbols.device_get_clock_info, missing);
  resolve_required(h, symbols.device_get_state, missing);
  resolve_required(h, symbols.device_get_compute_running_processes, missing);
  resolve_required(h, symbols.device_get_host_vxpu_mode, missing);
  resolve(h, symbols.device_get_name);
  resolve(h, symbols.device_get_minor_number);
  resolve(h, symbols.device_get_id);
  resolve(h, symbols.device_get_uuid);
  resolve(h, symbols.error_string);
  resolve(h, symbols.device_set_sriov_vf_num);
  resolve(h, symbols.device_create_cxpu_instance);
  resolve(h, symbols.device_set_cxpu_instance_memory_limit);
  resolve(h, symbols.device_destroy_cxpu_instance);
  if (!missing.empty()) {
    std::string list;
    for (auto name : missing) list += (list.empty() ? "" : ", ") + std::string(name);
    return xpu::Error{"libxpuml too old: " + shown + " lacks required symbol" +
                      (missing.size() > 1 ? "s " : " ") + list};
  }
  std::string absent;
  for (const auto& [name, available] :
       {std::pair{symbols.device_get_name.name, symbols.device_get_name.available()},
        std::pair{symbols.device_get_minor_number.name,
                  symbols.device_get_minor_number.available()},
        std::pair{symbols.device_get_id.name, symbols.device_get_id.available()},
        std::pair{symbols.error_string.name, symbols.error_string.available()},
        std::pair{symbols.device_set_sriov_vf_num.name,
                  symbols.device_set_sriov_vf_num.available()},
        std::pair{symbols.device_create_cxpu_instance.name,
                  symbols.device_create_cxpu_instance.available()},
        std::pair{symbols.device_set_cxpu_instance_memory_limit.name,
                  symbols.device_set_cxpu_instance_memory_limit.available()},
        std::pair{symbols.device_destroy_cxpu_instance.name,
                  symbols.device_destroy_cxpu_instance.available()}})
    if (!available) absent += (absent.empty() ? "" : ", ") + std::string(name);
  // xpumlDeviceGetUUID is not in the list: no public header declares it, so every real library
  // would be reported as lacking it.
  if (!absent.empty())
    spdlog::info("libxpuml {} lacks the optional {}; working without", shown, absent);

  // The file the loader opened: for a bare name, where its search found it.
  std::filesystem::path opened = path;
  link_map* map = nullptr;
  if (dlinfo(handle.get(), RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
      map->l_name != nullptr && map->l_name[0] == '/')
    opened = map->l_name;
  return std::unique_ptr<Library>(new Library(std::move(opened), std::move(handle), symbols));
}

xpu::Result<std::unique_ptr<Library>> Library::initialise(std::unique_ptr<Library> library,
                                                          bool* init_failed) {
  const std::string shown = library->path_.string();
  xpumlReturn_t rc = library->call(library->symbols_.init);
  if (rc != XPUML_SUCCESS) {
    std::string message = library->error_message(library->symbols_.init.name, shown, rc);
    // Init failed, so there is nothing to shut down; only unload.
    library->symbols_.shutdown.fn = nullptr;
    if (init_failed != nullptr) *init_failed = true;
    return xpu::Error{std::move(message)};
  }
  return library;
}

std::unique_ptr<Library> Library::from_symbols(std::filesystem::path name, const Symbols& symbols) {
  return std::unique_ptr<Library>(new Library(std::move(name), DlHandle{}, symbols));
}

Library::Library(std::filesystem::path path, DlHandle handle, Symbols symbols)
    : path_(std::move(path)), handle_(std::move(handle)), symbols_(symbols) {}

Library::~Library() {
  if (!symbols_.shutdown.available()) return;
  xpumlReturn_t rc = call(symbols_.shutdown);
  if (rc != XPUML_SUCCESS)
    spdlog::warn("{}", error_message(symbols_.shutdown.name, path_.string(), rc));
}

std::string Library::error_message(std::string_view function, std::string_view subject,
                                   xpumlReturn_t code) {
  std::string message =
      std::string(function) + "(" + std::string(subject) + "): " + return_code_label(code);
  std::optional<std::string> text;
  if (symbols_.error_string.available()) {
    const char* raw = call(symbols_.error_string, code);
    if (raw != nullptr) text = text_from_library(raw, ::strnlen(raw, kMaxErrorStringLength + 1));
    if (text && text->size() > kMaxErrorStringLength) text.reset();
  }
  if (!text) {
    if (auto info = find_return_code(code)) text = std::string(info->description);
  }
  if (text) message += ": " + *text;
  return message;
}

std::optional<std::string> text_from_library(const char* buffer, std::size_t capacity) {
  std::size_t length = ::strnlen(buffer, capacity);
  std::string_view text(buffer, length);
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      return std::nullopt;
  return std::string(text);
}

}  // namespace xpud::xpuml
