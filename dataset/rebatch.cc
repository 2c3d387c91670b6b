// Rebatch(batch_size, drop_remainder): the rows of the input's batches in new batches of
// batch_size, as tf.data's rebatch.
#include "dataset/dataset.h"

namespace sluice {

Dataset Dataset::Rebatch(int64_t batch_size, bool drop_remainder) const {
  // Unbatch's rows are views of the input batches, so each row is copied once, into its new
  // batch, as in tf.data's rebatch; checkpoints are those of the two ops.
  return Unbatch().Batch(batch_size, {.drop_remainder = drop_remainder});
}

}  // namespace sluice
