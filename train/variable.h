#ifndef SLUICE_TRAIN_VARIABLE_H_
#define SLUICE_TRAIN_VARIABLE_H_

#include <string>

#include "absl/status/status.h"
#include "core/tensor.h"

namespace sluice::train {

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

}  // namespace sluice::train

#endif  // SLUICE_TRAIN_VARIABLE_H_
