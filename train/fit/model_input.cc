#include "train/fit/model_input.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "train/backend/transfer.h"
#include "train/data/prefetch_to_device.h"

namespace sluice::train::fit {

absl::Status CheckModelInput(absl::string_view who, const Element& e, size_t first,
                             bool need_targets) {
  // The components before `first` are the trainer's own (Fit's pass index): not counted or shown.
  const size_t given = e.size() - std::min(first, e.size());
  if (given < (need_targets ? 2u : 1u)) {
    const Element shown(e.begin() + static_cast<std::ptrdiff_t>(e.size() - given), e.end());
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": elements must be {inputs float32 [B, ...], targets [B, ...]}",
                     need_targets ? "" : " or {inputs}", ", got ", ElementDebugString(shown, 2)));
  }
  if (need_targets && given > 2) {
    // Keras reads a third component as sample weights; ignoring it trained unweighted.
    return absl::InvalidArgumentError(absl::StrCat(
        who, ": elements must be {inputs, targets}, got ", given,
        " components: per-example weights (Keras' third component, sample_weight) are not "
        "supported; drop the extra components with a Map"));
  }
  const Tensor& images = e[first];
  if (images.dtype() != DType::kFloat32 || images.rank() < 1) {
    // What to change, for the mistakes a newcomer makes.
    std::string fix;
    if (images.dtype() == DType::kUint8) {
      fix =
          "; decoded images are uint8: add Rescaling(1.0f / 255) (ops/rescaling.h) or Cast(x, "
          "DType::kFloat32) to the pipeline's Map";
    } else if (images.dtype() != DType::kFloat32) {
      fix = "; add Cast(x, DType::kFloat32) (ops/cast.h) to the pipeline's Map";
    } else {
      fix = "; batch the dataset (Dataset::Batch) so that inputs have a batch dimension";
    }
    return absl::InvalidArgumentError(absl::StrCat(who, ": inputs must be float32 [B, ...], got ",
                                                   DTypeName(images.dtype()),
                                                   images.shape().DebugString(), fix));
  }
  return absl::OkStatus();
}

absl::Status CheckPrediction(absl::string_view who, const Tensor& prediction, const Tensor* first) {
  auto inner = [](const Tensor& t) {
    Shape s = t.shape();
    s.RemoveDim(0);
    return s;
  };
  if (prediction.dtype() == DType::kFloat32 && prediction.rank() >= 1 &&
      (first == nullptr || inner(prediction) == inner(*first))) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      who,
      ": the model must return float32 [B, ...] with the same inner shape for every batch, got ",
      DTypeName(prediction.dtype()), prediction.shape().DebugString(),
      first == nullptr ? "" : absl::StrCat(" after ", first->shape().DebugString())));
}

absl::StatusOr<Element> ToModelDevice(const Element& batch, const Device& device, size_t first) {
  if (device.is_cpu()) return batch;
  return backend::ElementToDevice(batch, device, first);
}

Dataset OnModelDevice(const Dataset& data, const Device& device, int64_t ahead) {
  if (device.is_cpu() || ahead <= 0) return data;
  return data::PrefetchToDevice(data, device, ahead);
}

}  // namespace sluice::train::fit
