#ifndef SLUICE_TRAIN_FIT_COMPILED_LOSS_H_
#define SLUICE_TRAIN_FIT_COMPILED_LOSS_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "train/fit/deferred_label_checks.h"
#include "train/layers/module.h"
#include "train/losses/loss.h"

namespace sluice::train::fit {

// Keras' compiled loss: the loss of (y_true, y_pred) plus the model's regularisation penalties
// (Module::AddLosses). Each batch's label range check (a count on the device) is kept until the
// loop reads from the device anyway, so that the loop never waits for the device just for it.
class CompiledLoss {
 public:
  // `model` is not owned. An unset `loss`: SparseCategoricalCrossentropy(from_logits = true),
  // the classifier's.
  CompiledLoss(std::shared_ptr<const losses::Loss> loss, layers::Module& model);

  const losses::Loss& loss() const { return *loss_; }
  std::shared_ptr<const losses::Loss> shared_loss() const { return loss_; }

  // InvalidArgument, naming `who`, when the loss is not reduced to a scalar (training and
  // Evaluate need one).
  absl::Status CheckReduced(absl::string_view who) const;

  // The loss of the batch, a float32 scalar on the device, recorded by an active tape. `where`
  // names the batch in a label error that CheckLabels finds later ("Fit: epoch 2, step 7: ").
  absl::StatusOr<Tensor> Compute(const Tensor& y_true, const Tensor& y_pred, std::string where);
  // The same, with the batch's label check handed to the caller instead of kept: a traced step
  // (CompiledTrainStep) keeps, after each replay, a check of that replay's count.
  absl::StatusOr<Tensor> Compute(const Tensor& y_true, const Tensor& y_pred,
                                 ops::LabelRangeCheck& label_check);
  void AddLabelCheck(std::string where, ops::LabelRangeCheck check) {
    label_checks_.Add(std::move(where), std::move(check));
  }

  // The label checks of the batches since the last call: OK, or the first failure after its
  // `where`. Clears them either way.
  absl::Status CheckLabels() { return label_checks_.CheckAll(); }
  size_t unchecked_batches() const { return label_checks_.size(); }
  void ClearLabelChecks() { label_checks_.Clear(); }

 private:
  // The sum of the model's regularisation penalties, unset when it has none.
  absl::StatusOr<std::optional<Tensor>> RegularizationLoss();

  std::shared_ptr<const losses::Loss> loss_;
  layers::Module& model_;
  DeferredLabelChecks label_checks_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_COMPILED_LOSS_H_
