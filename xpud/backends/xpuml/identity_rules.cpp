#include "xpud/backends/xpuml/identity_rules.h"

#include "xpud/backends/device_uuid.h"
#include "xpud/backends/sysfs/pci_function_scan.h"
#include "xpud/backends/xpuml/xpuml_metrics.h"

namespace xpud::xpuml {
namespace {

std::string node_name(unsigned index) {
  return "xpu" + std::to_string(index);
}

}  // namespace

NamingDecision choose_name(const NamingInputs& in) {
  NamingDecision decision;
  // Why the physical id could not be used, when the library has the call: a failure or an id no
  // driver hands out is worth a warning even when sysfs can stand in.
  std::optional<std::string> id_problem;
  if (in.physical_id.succeeded() && in.physical_id.value) {
    const int id = *in.physical_id.value;
    if (id >= 0 && static_cast<unsigned>(id) <= sysfs::kMaxDeviceNodeNumber) {
      decision.index = static_cast<unsigned>(id);
      decision.source = NameSource::PhysicalId;
    } else {
      id_problem =
          "xpumlDeviceGetId(" + in.subject + "): implausible physical id " + std::to_string(id);
    }
  } else if (in.physical_id.available) {
    id_problem = in.physical_id.failure.empty() ? "xpumlDeviceGetId(" + in.subject + ") gave no id"
                                                : in.physical_id.failure;
  }

  if (decision.source != NameSource::PhysicalId) {
    if (in.chip < in.class_nodes.size()) {
      decision.index = in.class_nodes[in.chip];
      decision.source = NameSource::ClassLink;
      if (id_problem)
        decision.warning = *id_problem + "; naming it " + node_name(decision.index) +
                           " after the xpu class device under its PCI function";
    } else {
      decision.index = in.library_index;
      decision.source = NameSource::LibraryIndex;
      decision.warning = (id_problem ? *id_problem + "; " : std::string(in.subject) + ": ") +
                         "no physical id and no xpu class device under its PCI function in sysfs;"
                         " naming it " +
                         node_name(decision.index) +
                         " by the library's order, which need not be its /dev/xpuN";
    }
  }
  if (decision.index != in.library_index)
    decision.differs_from_library_order =
        in.subject + " is " + node_name(decision.index) +
        "; the vendor's container runtime reads CXPU_VISIBLE_DEVICES numbers as positions in "
        "the library's enumeration, where it is " +
        std::to_string(in.library_index);
  return decision;
}

std::optional<std::string> model_from_model_id(int model_id) {
  switch (model_id) {
    case XPUML_DEVICE_MODEL_KL1_K200:
      return "K200";
    case XPUML_DEVICE_MODEL_KL1_K100:
      return "K100";
    case XPUML_DEVICE_MODEL_KL2_R200:
      return "R200";
    case XPUML_DEVICE_MODEL_KL2_R300:
      return "R300";
    case XPUML_DEVICE_MODEL_KL2_R200_8F:
      return "R200-8F";
    case XPUML_DEVICE_MODEL_KL2_R200_SRIOV_PF:
      return "R200-PF";
    case XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_ONE:
      return "R200-VF-16G";
    case XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_TWO:
      return "R200-VF-8G";
    case XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_THREE:
      return "R200-VF-5G";
    default:
      return std::nullopt;
  }
}

bool is_virtual_function_model(int model_id) {
  return model_id >= XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_ONE &&
         model_id <= XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_THREE;
}

std::string choose_model(const ModelInputs& in) {
  // A VF is a share of a board: its model id says which share; the PCI ids only say "a VF".
  if (in.model_id && is_virtual_function_model(*in.model_id))
    return *model_from_model_id(*in.model_id);
  if (in.pci_model && in.pci_model->is_virtual_function) return in.pci_model->model;
  // The board id names the exact board, and keeps a PF's name when its VFs are switched on
  // (its model id turns to 200, "R200-PF"; sriov_enabled says that instead).
  if (in.board_id && *in.board_id >= 0)
    if (auto board = pci::model_from_board_id(static_cast<unsigned>(*in.board_id))) return *board;
  if (in.model_id && *in.model_id != XPUML_DEVICE_MODEL_KL2_R200_SRIOV_PF)
    if (auto model = model_from_model_id(*in.model_id)) return *model;
  if (in.pci_model && in.pci_model->model != pci::kUnknownModel) return in.pci_model->model;
  if (in.library_name) return *in.library_name;
  if (in.model_id)
    if (auto model = model_from_model_id(*in.model_id)) return *model;
  return pci::kUnknownModel;
}

SriovRole choose_sriov_role(const SriovInputs& in) {
  SriovRole role;
  role.is_virtual_function = (in.pci_model && in.pci_model->is_virtual_function) ||
                             (in.model_id && is_virtual_function_model(*in.model_id));
  if (!role.is_virtual_function)
    role.sriov_enabled = (in.host_vxpu_mode && *in.host_vxpu_mode == XPUML_HOST_VXPU_SRIOV_ON) ||
                         (in.model_id && *in.model_id == XPUML_DEVICE_MODEL_KL2_R200_SRIOV_PF);
  return role;
}

std::optional<unsigned> virtual_function_limit(unsigned max_vf_count) {
  if (max_vf_count == 0 || max_vf_count == XPUML_VALUE_NOT_AVAILABLE_UNSIGNED) return std::nullopt;
  return max_vf_count;
}

std::optional<std::uint64_t> choose_memory_total(
    const std::optional<xpumlMemory_t>& memory,
    const std::optional<xpumlDeviceAttributes_t>& attributes) {
  if (memory && memory->totalGlobalMemory > 0 && memory->totalGlobalMemory <= kMaxMemoryBytes)
    return memory->totalGlobalMemory;
  if (attributes && attributes->globalMemorySizeMB > 0 &&
      attributes->globalMemorySizeMB <= (kMaxMemoryBytes >> 20))
    return attributes->globalMemorySizeMB << 20;
  return std::nullopt;
}

UuidDecision choose_uuid(const Answer<std::string>& uuid, std::string_view subject) {
  UuidDecision decision;
  if (!uuid.available) return decision;
  if (!uuid.succeeded()) {
    decision.warning = uuid.failure + "; deriving a UUID";
  } else if (uuid.value && is_usable_device_uuid(*uuid.value)) {
    decision.uuid = *uuid.value;
  } else {
    decision.warning =
        "xpumlDeviceGetUUID(" + std::string(subject) + "): unusable UUID; deriving one";
  }
  return decision;
}

NumaDecision choose_numa_node(const xpu::Result<std::optional<int>>& read,
                              std::string_view bus_id) {
  NumaDecision decision;
  if (read.ok()) {
    decision.node = read->value_or(-1);
  } else {
    decision.warning = std::string(bus_id) + ": " + read.error() + "; NUMA node unknown";
  }
  return decision;
}

}  // namespace xpud::xpuml
