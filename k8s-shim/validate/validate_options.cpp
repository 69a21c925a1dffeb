#include "k8s-shim/validate/validate_options.h"

#include "k8s-shim/validate/allocation_check.h"

namespace shim::validate {

void add_validate_options(xpu::CommandLine& cli, ValidateOptions& options) {
  cli.add_option("expect-cards", "N",
                 "fail unless XPU_VISIBLE_DEVICES names exactly N cards (default: any number)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto count = xpu::parse_uint(value, 1, kMaxCards);
                   if (!count) return xpu::Error{count.error()};
                   options.expect_cards = static_cast<unsigned>(*count);
                   return xpu::ok_status();
                 });
  cli.add_option("device-dir", "DIR", "where the device nodes are (default /dev)",
                 [&options](std::string_view value) -> xpu::Status {
                   if (value.empty() || value.front() != '/')
                     return xpu::Error{"must be an absolute path"};
                   options.device_dir = std::filesystem::path(value).lexically_normal();
                   return xpu::ok_status();
                 });
}

ValidateOptions parse_validate_command_line(ShimOptions& options,
                                            std::span<const std::string> args) {
  return parse_role_options<ValidateOptions>(options, args, "validate", add_validate_options);
}

}  // namespace shim::validate
