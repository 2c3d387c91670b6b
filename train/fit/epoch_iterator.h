#ifndef SLUICE_TRAIN_FIT_EPOCH_ITERATOR_H_
#define SLUICE_TRAIN_FIT_EPOCH_ITERATOR_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/element.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "train/fit/training_checkpoint.h"

namespace sluice::train::fit {

// The training input of one Fit, as Keras' EpochIterator. Fit reads train.Enumerate().Repeat()
// through ONE iterator for the whole run (each pass a new repetition, so that a Shuffle
// reshuffles each epoch), so that a checkpoint holds the exact input position. Enumerate tags
// each batch with its index in the pass: a pass of unknown length ends where index 0 comes
// again, and that element is held back for the next epoch (and saved with a checkpoint).
class EpochIterator {
 public:
  // `data` as the model's device takes it; `seed`: the pipeline seed (Options::seed), unset:
  // the pipeline's own options.
  EpochIterator(const Dataset& data, std::optional<uint64_t> seed);

  // The next element {pass index int64 scalar, inputs, targets, ...}: the held-back one first;
  // nullopt at the end of the data (a Repeat of an empty pass). DataLoss for an element without
  // its index (from a corrupt checkpoint's buffers).
  absl::StatusOr<std::optional<Element>> Next();
  // Gives `element` back: the next Next() returns it.
  void HoldBack(Element element) { held_back_ = std::move(element); }

  // The index within its pass of an element Next() returned.
  static int64_t PassIndex(const Element& element) { return element[0].scalar<int64_t>(); }
  // Skips the rest of this pass (data-parallel: a peer's pass ended first), so that the next
  // Next() returns the first element of the next pass.
  absl::Status SkipToNextPass();

  // Steps in one pass, once a whole pass was seen; -1: unknown.
  int64_t pass_length() const { return pass_length_; }
  void set_pass_length(int64_t steps) { pass_length_ = steps; }

  // The position, for a checkpoint: the pipeline's state and a host copy of the held-back
  // element.
  absl::Status Save(RankPosition& position);
  // Restores a position Save wrote, whatever was read before; errors name `path`. The held-back
  // element must match the pipeline's element_spec (DataLoss otherwise), as the elements a restore
  // puts in the pipeline's own buffers must.
  absl::Status Restore(RankPosition& position, absl::string_view path);

 private:
  Dataset indexed_;
  ElementSpec element_spec_;  // of the indexed pipeline: what a held-back element must match
  std::unique_ptr<Iterator> iterator_;
  // Whether iterator_ was read: a Restore then starts a fresh one (Fit reads the first element to
  // build the model before a BackupAndRestore resume is known; an iterator restores only fresh).
  bool read_ = false;
  std::optional<Element> held_back_;
  int64_t pass_length_ = -1;
};

// The parts of an element EpochIterator returns, once the loop checked its inputs and targets.
struct EnumeratedBatch {
  explicit EnumeratedBatch(const Element& e)
      : index(EpochIterator::PassIndex(e)), inputs(e[1]), targets(e[2]) {}
  int64_t index;  // within the pass
  const Tensor& inputs;
  const Tensor& targets;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_EPOCH_ITERATOR_H_
