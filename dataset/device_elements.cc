#include "dataset/device_elements.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// The nodes that pass their inputs' elements on without reading their tensors: they keep, drop
// or repeat whole elements, or add host components beside them (Enumerate's index). Not Shuffle
// or Prefetch: their checkpoints copy the elements they hold on the host. A node missing here
// counts as reading, so a new op is refused after a device node until it is added: the safe
// default.
constexpr absl::string_view kPassElementsOn[] = {"Take",
                                                 "Skip",
                                                 "Repeat",
                                                 "Shard",
                                                 "Concatenate",
                                                 "Zip",
                                                 "Enumerate",
                                                 "WithOptions",
                                                 "IgnoreErrors",
                                                 "SampleFromDatasets",
                                                 "ChooseFromDatasets",
                                                 "PrefetchToDevice"};

// Whether `node` reads the tensors of its input `i` on the host.
bool ReadsInput(const DatasetBase& node, size_t i) {
  if (std::find(std::begin(kPassElementsOn), std::end(kPassElementsOn), node.kind()) ==
      std::end(kPassElementsOn)) {
    return true;
  }
  // ChooseFromDatasets reads the index of each choice from its last input.
  return node.kind() == "ChooseFromDatasets" && i + 1 == node.inputs().size();
}

}  // namespace

std::optional<DeviceElements> ElementsDevice(const DatasetBase& node) {
  if (std::optional<Device> device = node.MovesElementsTo(); device && !device->is_cpu()) {
    return DeviceElements{*device, &node};
  }
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (ReadsInput(node, i)) continue;  // what it yields was made on the host
    if (std::optional<DeviceElements> d = ElementsDevice(*node.inputs()[i])) return d;
  }
  return std::nullopt;
}

absl::Status CheckNoHostReadsOfDeviceElements(const DatasetBase& root) {
  std::vector<const DatasetBase*> stack = {&root};
  absl::flat_hash_set<const DatasetBase*> seen;
  while (!stack.empty()) {
    const DatasetBase* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const DatasetBase& input = *node->inputs()[i];
      if (!ReadsInput(*node, i)) continue;
      if (std::optional<DeviceElements> d = ElementsDevice(input)) {
        return absl::InvalidArgumentError(absl::StrCat(
            node->name(), " reads its input's elements on the host, but ", d->moved_by->name(),
            " put them on ", d->device.DebugString(), " (pipeline: ", root.DebugString(),
            "); make ", d->moved_by->kind(),
            " the pipeline's last step, as tf.data does, or move this step before it"));
      }
    }
    for (const auto& input : node->inputs()) stack.push_back(input.get());
  }
  return absl::OkStatus();
}

absl::Status CheckInnerPipeline(const DatasetBase& owner, const DatasetBase& inner) {
  SLUICE_RETURN_IF_ERROR(CheckNoHostReadsOfDeviceElements(inner));
  if (std::optional<DeviceElements> d = ElementsDevice(inner)) {
    return absl::InvalidArgumentError(absl::StrCat(
        owner.name(), "'s function returned a pipeline whose elements ", d->moved_by->name(),
        " put on ", d->device.DebugString(), " (", inner.DebugString(), "), but ", owner.name(),
        " reads its inner pipelines' elements on the host; apply ", d->moved_by->kind(), " after ",
        owner.name(), ", as the pipeline's last step, as tf.data does"));
  }
  return absl::OkStatus();
}

}  // namespace sluice
