#ifndef SLUICE_DATASET_DEVICE_ELEMENTS_H_
#define SLUICE_DATASET_DEVICE_ELEMENTS_H_

#include <optional>

#include "absl/status/status.h"
#include "core/device.h"
#include "dataset/dataset_base.h"

namespace sluice {

// Where a pipeline's elements live, and tf.data's rule for prefetch_to_device: it is the
// pipeline's last step. After it, a node may only pass the elements on (Take, Skip, Repeat,
// Shard, Concatenate, Zip, ...); one that reads them on the host (Map, Filter, Batch, Unbatch,
// Cache, Window, Interleave, and Shuffle and Prefetch, whose checkpoints copy what they hold)
// would read device memory from the host, which crashes on a GPU. Such a pipeline is refused
// when its iterator starts, naming both nodes.

// Elements on a device: which device, and the node that moved them there.
struct DeviceElements {
  Device device;
  const DatasetBase* moved_by = nullptr;
};

// Where the elements `node` yields live when that is not the host: the device a node before it
// moved them to (DatasetBase::MovesElementsTo), through nodes that pass elements on; nullopt
// when they are on the host.
std::optional<DeviceElements> ElementsDevice(const DatasetBase& node);

// InvalidArgument naming the first node of the pipeline ending at `root` that reads, on the host,
// elements that a node before it moved to a device; OK when there is none.
absl::Status CheckNoHostReadsOfDeviceElements(const DatasetBase& root);

// The same rule for a pipeline that `owner` builds while it runs (Interleave's, FlatMap's and
// GroupByWindow's functions): `inner` must pass CheckNoHostReadsOfDeviceElements, and its
// elements must be on the host, since `owner` reads or holds them there. InvalidArgument naming
// both nodes otherwise.
absl::Status CheckInnerPipeline(const DatasetBase& owner, const DatasetBase& inner);

}  // namespace sluice

#endif  // SLUICE_DATASET_DEVICE_ELEMENTS_H_
