#include "xpud/backends/xpuml/cxpu_calls.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "xpud/backends/xpuml/xpuml_library.h"

namespace xpud::xpuml {
namespace {

using Kind = DriverChangeError::Kind;

// The header takes the id as a char*: the library gets a copy of its own, NUL-terminated, in a
// buffer of the header's id length plus one (what the vendor's CLI passes it).
class IdBuffer {
 public:
  explicit IdBuffer(const std::string& id) {
    std::memcpy(buffer_.data(), id.data(), std::min(id.size(), buffer_.size() - 1));
  }
  char* get() { return buffer_.data(); }

 private:
  std::array<char, XPUML_CXPU_INST_ID_LEN + 1> buffer_{};
};

DriverChangeError failure(Library& library, std::string_view function, const std::string& subject,
                          const std::string& id, xpumlReturn_t rc) {
  std::string message = library.error_message(function, subject + ", instance " + id, rc);
  switch (rc) {
    case XPUML_ERROR_INVALID_ARGUMENT:
      return {Kind::InvalidArgument, std::move(message)};
    case XPUML_ERROR_NOT_SUPPORTED:
      return {Kind::NotSupported, std::move(message)};
    case XPUML_ERROR_NOT_FOUND:
      return {Kind::NoSuchInstance, std::move(message)};
    default:
      return {Kind::Failed, std::move(message)};
  }
}

}  // namespace

std::optional<DriverChangeError> create_cxpu_instance(Library& library, xpumlDevice_t device,
                                                      const std::string& subject,
                                                      const std::string& id,
                                                      std::uint64_t memory_limit_bytes) {
  const auto& sym = library.symbols();
  IdBuffer buffer(id);
  xpumlReturn_t rc = library.call(sym.device_create_cxpu_instance, device, buffer.get());
  if (rc != XPUML_SUCCESS)
    return failure(library, sym.device_create_cxpu_instance.name, subject, id, rc);
  auto limited = set_cxpu_memory_limit(library, device, subject, id, memory_limit_bytes);
  if (!limited) return std::nullopt;
  // An instance the driver does not bound is worse than none: the container would run with the
  // whole card while its grant says otherwise.
  IdBuffer again(id);
  rc = library.call(sym.device_destroy_cxpu_instance, device, again.get());
  if (rc != XPUML_SUCCESS)
    limited->message += "; and destroying the unbounded instance failed too: " +
                        library.error_message(sym.device_destroy_cxpu_instance.name,
                                              subject + ", instance " + id, rc);
  return limited;
}

std::optional<DriverChangeError> set_cxpu_memory_limit(Library& library, xpumlDevice_t device,
                                                       const std::string& subject,
                                                       const std::string& id,
                                                       std::uint64_t memory_limit_bytes) {
  const auto& sym = library.symbols();
  IdBuffer buffer(id);
  // Global memory, as the vendor's CLI bounds it (type 0); L3 stays unbounded.
  const xpumlReturn_t rc =
      library.call(sym.device_set_cxpu_instance_memory_limit, device, buffer.get(),
                   static_cast<unsigned>(XPUML_MEMORY_LOCATION_GLOBAL_MEMORY),
                   static_cast<unsigned long long>(memory_limit_bytes));
  if (rc != XPUML_SUCCESS)
    return failure(library, sym.device_set_cxpu_instance_memory_limit.name, subject, id, rc);
  return std::nullopt;
}

std::optional<DriverChangeError> destroy_cxpu_instance(Library& library, xpumlDevice_t device,
                                                       const std::string& subject,
                                                       const std::string& id) {
  const auto& sym = library.symbols();
  IdBuffer buffer(id);
  const xpumlReturn_t rc = library.call(sym.device_destroy_cxpu_instance, device, buffer.get());
  if (rc != XPUML_SUCCESS)
    return failure(library, sym.device_destroy_cxpu_instance.name, subject, id, rc);
  return std::nullopt;
}

}  // namespace xpud::xpuml
