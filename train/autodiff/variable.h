#ifndef SLUICE_TRAIN_AUTODIFF_VARIABLE_H_
#define SLUICE_TRAIN_AUTODIFF_VARIABLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice::train::autodiff {

// How many times any variable of this process moved to new storage (Variable::MoveTo): a traced
// function (train::function::Function), whose program holds the storage its variables had,
// retraces when this changed since its traces were made.
uint64_t VariableMoves();

// A trainable tensor, like tf.Variable. Reading value() while a tape is
// active watches it (when trainable). Assign() updates the values in place, so
// the variable keeps its identity across optimizer steps. The value lives on
// one device (the host at creation; MoveTo moves it) and is only ever touched
// through that device's backend.
class Variable {
 public:
  // Copies `initial` (float32, on any device) into storage the variable owns, on the same
  // device. Dies if that device cannot hold it (a constructor has no status to return).
  explicit Variable(const Tensor& initial, std::string name = "", bool trainable = true);

  const Tensor& value() const;
  // Copies `values` (same dtype and shape, on any device) into the variable.
  absl::Status Assign(const Tensor& values);
  // In-place access for optimizers; not watched.
  Tensor& mutable_value() { return value_; }

  // Moves the value to `device` (a copy there; the old storage is released). A host-resident
  // variable stays where it is. Each move counts in VariableMoves().
  absl::Status MoveTo(const Device& device);
  Device device() const { return value_.device(); }
  // Marks a counter the host reads and writes itself on every call (Dropout's call count): it
  // is saved with the model's variables but never moves to a device.
  void KeepOnHost() { host_resident_ = true; }
  bool host_resident() const { return host_resident_; }

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  // Whether the variable is a weight (BatchNorm's moving statistics are not): fixed at creation.
  bool trainable() const { return trainable_; }
  // Keras' layer.trainable = False (layers::Module::set_trainable): a frozen trainable variable
  // is not watched by a tape, gets no gradient and no optimizer slots, until unfrozen.
  bool frozen() const { return frozen_; }
  void set_frozen(bool frozen) { frozen_ = frozen; }
  // trainable() and not frozen(): what an optimizer updates.
  bool updated() const { return trainable_ && !frozen_; }
  const Shape& shape() const { return value_.shape(); }

 private:
  Tensor value_;
  std::string name_;
  bool trainable_;
  bool frozen_ = false;
  bool host_resident_ = false;
};

// InvalidArgument naming the first name two of `vars` share (`who` starts the message): a
// checkpoint matches variables by name, so duplicates would load into the wrong variable.
absl::Status CheckUniqueNames(const std::vector<Variable*>& vars, absl::string_view who);

// How a snapshot of variables (or optimizer slots) holds values that are already on the host.
enum class HostValues {
  kCopy,   // copied: the snapshot is kept while training changes them (EarlyStopping's best)
  kShare,  // shared: it is written at once (a checkpoint), before they change again
};

// The variables' values on the host, with their names (what a checkpoint writes): values on a
// device are always copied, host ones as `host` says. Fails on duplicate names
// (CheckUniqueNames).
absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> SnapshotVariables(
    const std::vector<Variable*>& vars, HostValues host = HostValues::kCopy);
// `t` on the host: itself (`host` kShare) or a copy.
absl::StatusOr<Tensor> HostSnapshot(const Tensor& t, HostValues host);
// Assigns `saved` (from SnapshotVariables or a checkpoint) to `vars` after checking that they
// match one to one: the same count, and each the same name and shape. Nothing is assigned when
// any differs. `source` (the file) starts error messages, which name the variable and the
// expected (the model's) and found (the saved) name or shape.
absl::Status AssignVariables(const std::vector<std::pair<std::string, Tensor>>& saved,
                             const std::vector<Variable*>& vars, absl::string_view source);

// The names of the frozen variables among `vars` (what a checkpoint saves of the freezing), and
// its restoration: exactly the variables named in `frozen` are frozen afterwards.
std::vector<std::string> FrozenNames(const std::vector<Variable*>& vars);
void SetFrozen(const std::vector<Variable*>& vars, const std::vector<std::string>& frozen);

}  // namespace sluice::train::autodiff

#endif  // SLUICE_TRAIN_AUTODIFF_VARIABLE_H_
