#ifndef SLUICE_TRAIN_AUTODIFF_VARIABLE_H_
#define SLUICE_TRAIN_AUTODIFF_VARIABLE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice::train::autodiff {

// A trainable tensor, like tf.Variable. Reading value() while a tape is
// active watches it (when trainable). Assign() updates the values in place, so
// the variable keeps its identity across optimizer steps.
class Variable {
 public:
  // Copies `initial` (float32) into storage the variable owns.
  explicit Variable(const Tensor& initial, std::string name = "", bool trainable = true);

  const Tensor& value() const;
  // Copies `values` (same dtype and shape) into the variable.
  absl::Status Assign(const Tensor& values);
  // In-place access for optimizers; not watched.
  Tensor& mutable_value() { return value_; }

  const std::string& name() const { return name_; }
  bool trainable() const { return trainable_; }
  const Shape& shape() const { return value_.shape(); }

 private:
  Tensor value_;
  std::string name_;
  bool trainable_;
};

// Deep copies of the variables' values, with their names.
std::vector<std::pair<std::string, Tensor>> SnapshotVariables(const std::vector<Variable*>& vars);
// Assigns `saved` (from SnapshotVariables or a checkpoint) to `vars` after checking that they
// match one to one: the same count, and each the same name and shape. Nothing is assigned when
// any differs. `source` (the file) starts error messages, which name the variable and the
// expected (the model's) and found (the saved) name or shape.
absl::Status AssignVariables(const std::vector<std::pair<std::string, Tensor>>& saved,
                             const std::vector<Variable*>& vars, absl::string_view source);

}  // namespace sluice::train::autodiff

#endif  // SLUICE_TRAIN_AUTODIFF_VARIABLE_H_
