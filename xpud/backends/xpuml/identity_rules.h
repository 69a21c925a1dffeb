// The rules that turn what the library and sysfs answered about one card into its identity:
// which source names it, its model, its SR-IOV role, its memory, its UUID and its NUMA node.
// Pure functions: the backend gathers the answers (xpuml_backend.cpp) and applies the decisions,
// logging the warnings they carry. The facts behind each rule are in docs/hardware.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "xpud/backends/pci_ids.h"
#include "xpud/backends/xpuml/xpuml_api.h"

namespace xpud::xpuml {

// What one optional library call answered.
template <typename T>
struct Answer {
  bool available = false;  // the library exports the function
  std::optional<T> value;  // set when the call succeeded (and, for text, gave printable text)
  std::string failure;     // the library's message when the call failed
  bool succeeded() const { return available && failure.empty(); }
};

// ---- Naming: index, object path, /dev/xpuN, XPU_VISIBLE_DEVICES ----

enum class NameSource { PhysicalId, ClassLink, LibraryIndex };

struct NamingInputs {
  std::string subject;         // "index 2 (0000:3b:00.0)", for messages
  unsigned library_index = 0;  // position in the library's enumeration
  Answer<int> physical_id;     // xpumlDeviceGetId
  // N of each xpuN class device under the card's PCI function, ascending (both chips of a K200
  // share one function, hence two nodes); empty when sysfs has none.
  std::vector<unsigned> class_nodes;
  // Library devices before this one at the same PCI address: 0, or 1 for a K200's second chip.
  unsigned chip = 0;
};

struct NamingDecision {
  unsigned index = 0;
  NameSource source = NameSource::LibraryIndex;
  std::optional<std::string> warning;  // a lasting problem: once per appearance
  // The name differs from the library's position: worth one info line per card, since the
  // vendor's container runtime reads CXPU_VISIBLE_DEVICES numbers as library positions.
  std::optional<std::string> differs_from_library_order;
};

// The physical id when the library gives a plausible one; else the class link of the card's
// PCI function; else the library's index, with a warning. Never the minor number.
NamingDecision choose_name(const NamingInputs& inputs);

// ---- Model and SR-IOV role ----

struct ModelInputs {
  std::optional<pci::PciModel> pci_model;  // from the library's PCI ids; nullopt when unknown
  std::optional<int> board_id;             // attributes, when the call succeeded
  std::optional<int> model_id;
  std::optional<std::string> library_name;  // xpumlDeviceGetName
};

// The board's name: a VF's from its model id (R200-VF-16G/-8G/-5G) or its PCI ids ("KL2-VF");
// otherwise the board id, the model id, the PCI ids, the library's name, in that order.
std::string choose_model(const ModelInputs& inputs);

// The model name a model id gives; nullopt for unknown ids (9999 included).
std::optional<std::string> model_from_model_id(int model_id);

// Whether a model id is one of an R200's SR-IOV virtual functions (201-203).
bool is_virtual_function_model(int model_id);

struct SriovInputs {
  std::optional<pci::PciModel> pci_model;
  std::optional<int> model_id;
  std::optional<int> host_vxpu_mode;  // xpumlDeviceGetHostVxpuMode, when it succeeded
};

struct SriovRole {
  bool is_virtual_function = false;
  bool sriov_enabled = false;  // a PF whose virtual functions are on: no compute of its own
};

// A VF is PCI 1d22:3685 or model id 201-203. Otherwise HOST_VXPU SRIOV_ON (or model id 200)
// marks a PF whose VFs are enabled; it is not a VF.
SriovRole choose_sriov_role(const SriovInputs& inputs);

// The most virtual functions a card can have: nullopt when it has no SR-IOV (maxVFCount 0, or
// XPUML_VALUE_NOT_AVAILABLE, which is not a limit of four billion).
std::optional<unsigned> virtual_function_limit(unsigned max_vf_count);

// ---- Memory, UUID, NUMA ----

// Total global memory in bytes: the memory info's (a VF reports its own share), else the
// attributes' MiB; nullopt when neither is plausible.
std::optional<std::uint64_t> choose_memory_total(
    const std::optional<xpumlMemory_t>& memory,
    const std::optional<xpumlDeviceAttributes_t>& attributes);

struct UuidDecision {
  std::string uuid;  // empty: derive one (device_uuid.h)
  std::optional<std::string> warning;
};

// The library's UUID when it exports xpumlDeviceGetUUID and the answer is usable.
UuidDecision choose_uuid(const Answer<std::string>& uuid, std::string_view subject);

struct NumaDecision {
  int node = -1;
  std::optional<std::string> warning;
};

// numa_node as read from sysfs: absent means -1; unusable or malformed means -1, with a warning.
NumaDecision choose_numa_node(const xpu::Result<std::optional<int>>& read, std::string_view bus_id);

}  // namespace xpud::xpuml
