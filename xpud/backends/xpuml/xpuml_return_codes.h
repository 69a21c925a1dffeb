// Names and meanings of every xpumlReturn_t code, so that each library failure reaches the
// operator as "xpumlDeviceGetMemoryInfo(xpu2): XPU_IS_LOST (15): ..." rather than a bare number.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "xpud/backends/xpuml/xpuml_api.h"

namespace xpud::xpuml {

struct ReturnCodeInfo {
  xpumlReturn_t code;
  std::string_view name;         // the code's name without the XPUML_ERROR_ prefix
  std::string_view description;  // what it means for an operator
};

inline constexpr std::array<ReturnCodeInfo, 26> kReturnCodes = {{
    {XPUML_SUCCESS, "SUCCESS", "the call succeeded"},
    {XPUML_ERROR_UNINITIALIZED, "UNINITIALIZED", "the library was not initialised (xpumlInit)"},
    {XPUML_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "the library rejected an argument"},
    {XPUML_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED",
     "this device or driver does not support the query"},
    {XPUML_ERROR_NO_PERMISSION, "NO_PERMISSION",
     "permission denied (check access to /dev/xpu* and /dev/xpuctrl)"},
    {XPUML_ERROR_ALREADY_INITIALIZED, "ALREADY_INITIALIZED", "the library is already initialised"},
    {XPUML_ERROR_NOT_FOUND, "NOT_FOUND", "no such device or object"},
    {XPUML_ERROR_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE", "the buffer passed was too small"},
    {XPUML_ERROR_INSUFFICIENT_POWER, "INSUFFICIENT_POWER",
     "the card's external power cables are missing or not connected properly"},
    {XPUML_ERROR_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED", "the kunlun kernel driver is not loaded"},
    {XPUML_ERROR_TIMEOUT, "TIMEOUT", "the driver timed out"},
    {XPUML_ERROR_IRQ_ISSUE, "IRQ_ISSUE", "the kernel reported an interrupt problem with the card"},
    {XPUML_ERROR_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND",
     "a library that libxpuml needs could not be found"},
    {XPUML_ERROR_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND",
     "the installed driver does not implement this function"},
    {XPUML_ERROR_CORRUPTED_INFOROM, "CORRUPTED_INFOROM", "the card's info ROM is corrupted"},
    {XPUML_ERROR_XPU_IS_LOST, "XPU_IS_LOST", "the card fell off the bus or stopped responding"},
    {XPUML_ERROR_RESET_REQUIRED, "RESET_REQUIRED", "the card needs a reset before it can be used"},
    {XPUML_ERROR_OPERATING_SYSTEM, "OPERATING_SYSTEM", "the operating system refused the request"},
    {XPUML_ERROR_LIB_RM_VERSION_MISMATCH, "LIB_RM_VERSION_MISMATCH",
     "libxpuml and the kernel driver versions do not match"},
    {XPUML_ERROR_IN_USE, "IN_USE", "the card is in use by another process"},
    {XPUML_ERROR_MEMORY, "MEMORY", "out of memory"},
    {XPUML_ERROR_NO_DATA, "NO_DATA", "no data available yet"},
    {XPUML_ERROR_VXPU_ECC_NOT_SUPPORTED, "VXPU_ECC_NOT_SUPPORTED",
     "ECC is not supported on a virtual XPU"},
    {XPUML_ERROR_INSUFFICIENT_RESOURCES, "INSUFFICIENT_RESOURCES",
     "not enough resources to complete the request"},
    {XPUML_ERROR_FREQ_NOT_SUPPORTED, "FREQ_NOT_SUPPORTED",
     "the requested frequency is not supported"},
    {XPUML_ERROR_UNKNOWN, "UNKNOWN", "unknown error inside the library or driver"},
}};

// Table entry for a code; nullopt for a code the library should never return.
std::optional<ReturnCodeInfo> find_return_code(xpumlReturn_t code);

// Parses a code name ("XPU_IS_LOST", also with the XPUML_ERROR_ prefix) or a decimal number.
std::optional<xpumlReturn_t> parse_return_code(std::string_view text);

// "XPU_IS_LOST (15)"; "unrecognised code (12345)" outside the table.
std::string return_code_label(xpumlReturn_t code);

}  // namespace xpud::xpuml
