#ifndef SLUICE_TRAIN_FIT_DATA_PARALLEL_H_
#define SLUICE_TRAIN_FIT_DATA_PARALLEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "distributed/communicator.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/layers/module.h"

namespace sluice::train::fit {

// PyTorch DDP's default bucket size.
inline constexpr int64_t kDefaultBucketBytes = 25 << 20;

// The replica side of synchronous data-parallel training (Keras' MultiWorkerMirroredStrategy,
// PyTorch's DistributedDataParallel): every rank holds the same model, computes gradients on its
// own batch, and applies the mean gradient over ranks.
//
// The gradients are all-reduced in buckets of about `bucket_bytes`, filled in reverse variable
// order (the order the backward pass produces them). A bucket's all-reduce starts from the
// tape's hook as soon as its last gradient is final, so it runs while the backward pass goes on
// with earlier layers; FinishStep waits for what is left. Every rank must run the same model,
// so that the buckets fill in the same order everywhere.
class DataParallel {
 public:
  DataParallel(distributed::Communicator& comm, int64_t bucket_bytes = kDefaultBucketBytes);

  distributed::Communicator& comm() { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  // Checks that every rank has the same variables (names, dtypes, shapes, trainable flags), and
  // fails naming the first rank and variable that differ otherwise; then copies rank 0's values
  // to every rank.
  absl::Status SyncModel(layers::Module& model);

  // Sets up the buckets for one step's gradients of `vars`, reduced with `op`: kMean, or kSum
  // for gradients of a loss already divided by the number of ranks.
  void BeginStep(const std::vector<autodiff::Variable*>& vars,
                 distributed::ReduceOp op = distributed::ReduceOp::kMean);
  // The hook for Tape::Gradient (sources in `vars` order): starts each bucket's all-reduce once
  // its gradients are all in.
  autodiff::Tape::GradientReadyFn OnGradientReady();
  // Starts the buckets the hook did not (gradients that never came), waits for every bucket:
  // `grads` then holds the reduction over ranks. Adds the time it waited to exposed_seconds().
  absl::Status FinishStep(std::vector<std::optional<Tensor>>& grads);
  // BeginStep, every gradient at once, FinishStep: for gradients computed without the hook
  // (gradient accumulation reduces only the accumulated mean).
  absl::Status AllReduceMean(const std::vector<autodiff::Variable*>& vars,
                             std::vector<std::optional<Tensor>>& grads);

  // Element-wise sums over ranks of host numbers (metric sums, image counts).
  absl::StatusOr<std::vector<double>> Sum(std::vector<double> values);

  // Since the last ResetOverlap(): seconds the gradients' all-reduces ran, and seconds of that
  // the training step waited for them (the rest ran behind the backward pass).
  double allreduce_seconds() const { return allreduce_seconds_; }
  double exposed_seconds() const { return exposed_seconds_; }
  void ResetOverlap();

 private:
  struct Bucket {
    std::vector<size_t> members;  // variable indexes
    std::vector<Tensor> ready;    // their gradients, in the order they came
    bool started = false;
    std::optional<distributed::PendingCollective> pending;
  };
  void Start(Bucket& bucket);

  distributed::Communicator& comm_;
  int64_t bucket_bytes_;
  distributed::ReduceOp op_ = distributed::ReduceOp::kMean;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // by variable index
  std::vector<size_t> start_order_;
  absl::Status error_;        // the first failed start of this step
  double busy_at_begin_ = 0;  // the communicator's busy_seconds() at BeginStep
  double allreduce_seconds_ = 0;
  double exposed_seconds_ = 0;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_DATA_PARALLEL_H_
