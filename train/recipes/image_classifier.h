#ifndef SLUICE_TRAIN_RECIPES_IMAGE_CLASSIFIER_H_
#define SLUICE_TRAIN_RECIPES_IMAGE_CLASSIFIER_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/device.h"
#include "dataset/auto_shard.h"
#include "distributed/communicator.h"
#include "train/backend/compute_precision.h"
#include "train/callbacks/callback.h"
#include "train/fit/trainer.h"
#include "train/recipes/augmentation.h"
#include "train/recipes/callbacks.h"
#include "train/recipes/optimizer.h"

namespace sluice::train::recipes {

// One training run of an image classifier, `sluice train`'s: the defaults are its flags'.
struct ImageClassifierOptions {
  // The images: exactly one of `tfrecord_dir` (TFRecordImages: `sluice convert`'s shards) and
  // `image_dir` (FolderImages: class folders of JPEGs, split into training and test subsets).
  std::string tfrecord_dir;
  std::string image_dir;
  int64_t image_size = 64;        // image_dir: height and width
  double validation_split = 0.2;  // image_dir: the test set's share
  // Images a step, on each rank of a data-parallel run.
  int64_t batch_size = 64;
  int64_t limit = -1;  // train on the first `limit` records only (-1: all)
  Augmentation augmentation = Augmentation::kNone;
  // Skip (and count) unreadable records instead of failing.
  bool skip_errors = false;

  // The model zoo's model (models::MakeModel), and whether its residual blocks recompute.
  std::string model = "cnn";
  bool recompute = false;
  // Instead of `model`: transfer learning from a pretrained base in an ONNX file
  // (ImageModelOptions::base_onnx: the base cut at its global average pooling, Keras' head on
  // it). The first `freeze_base_epochs` of `epochs` train the head with the base frozen; the
  // rest fine-tune everything at `fine_tune_learning_rate` (the base unfrozen, the optimizer's
  // rate set to it), as Keras' guide does.
  std::string base_onnx;
  int64_t freeze_base_epochs = 0;
  double fine_tune_learning_rate = 1e-5;
  // The optimizer; its schedule's total_steps is counted from the data (epochs x steps an epoch
  // / accumulate).
  OptimizerOptions optimizer;
  // SparseCategoricalCrossentropy's label_smoothing; 0: the trainer's default loss.
  double label_smoothing = 0;
  int64_t epochs = 1;
  // Apply the mean gradient of this many batches (FitOptions::accumulation_steps).
  int64_t accumulate = 1;
  backend::Precision precision = backend::Precision::kFloat32;
  Device device = Device::Cpu();
  int64_t cpu_threads = 0;  // the CPU kernels' threads (backend::cpu::SetCpuThreads; 0: all)
  // The initializers', the shuffles' and the augmentation's seed.
  uint64_t seed = 0;

  // Evaluate on the test set after each epoch (val_* metrics).
  bool validate = false;
  // TensorBoard, ModelCheckpoint and EarlyStopping (which implies `validate`); `chief` is set
  // from the communicator.
  CallbackOptions callbacks;
  // Continue from callbacks.checkpoint when that file exists.
  bool resume = false;
  // After training, SaveModel into this folder (with the class names and the optimizer's state);
  // empty: not.
  std::string save_dir;
  // Profile the global steps profile_steps (1-based, inclusive) into this folder; empty: not.
  std::string profile_dir;
  std::pair<int64_t, int64_t> profile_steps = {2, 11};
  // Stop at the first op that makes a NaN or an Inf (autodiff::EnableCheckNumerics).
  bool check_numerics = false;
  // Run each training step op by op instead of tracing it once and replaying it
  // (fit::TrainerOptions::run_eagerly).
  bool run_eagerly = false;
  // Print the model's layers (layers::Summary) before training.
  bool summary = false;
  // 0: silent; 1: Fit's progress and a line for what else happens (resuming, saving, the images
  // found). Only the chief prints.
  int verbose = 1;
  // Data-parallel runs (a communicator given): how each rank takes its part of the data, and
  // the size of the gradients' all-reduce buckets.
  AutoShardPolicy auto_shard = AutoShardPolicy::kAuto;
  int64_t bucket_mb = 25;
};

struct ImageClassifierResult {
  fit::History history;  // the epochs this run trained
  // The epochs done in all, counting those a resumed run restored (and not ran again).
  int64_t epochs_completed = 0;
  // Evaluate's logs on the test set after training ("loss", "accuracy").
  callbacks::Logs test;
  int64_t train_records = 0;  // an epoch's
  double train_seconds = 0;
  // Over the whole run: the harmonic mean of the epochs' rates, and the mean input-wait share.
  double images_per_second = 0;
  double input_wait_share = 0;
  int ranks = 1;                       // processes training together
  double allreduce_exposed_share = 0;  // data-parallel: the mean over the epochs
  // Records skip_errors skipped (each once, however many passes met it), of them those of the
  // training set, and the first one's error (a training record's when there is one).
  int64_t skipped_records = 0;
  int64_t skipped_train_records = 0;
  std::string first_skipped;
  // Memory when training ended, before the test set's evaluation: the process's high-water mark,
  // and the CPU backend's tensors (activations, gradients, weights, optimizer slots) alive at
  // once, and alive plus idle in the allocator's cache, in MiB.
  double train_max_rss_mb = 0;
  double train_peak_tensor_mb = 0;
  double train_peak_tensor_held_mb = 0;
};

// Trains the zoo's model on the images, evaluates it on the test set and saves it as `options`
// say: what `sluice train` runs. With `comm`, data-parallel over its ranks (each runs this with
// the same options; only rank 0 prints and writes files other than the checkpoint). Fails before
// reading any data when the device or the precision is not available here, or the optimizer or
// its schedule is unknown.
absl::StatusOr<ImageClassifierResult> TrainImageClassifier(
    const ImageClassifierOptions& options, distributed::Communicator* comm = nullptr);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_IMAGE_CLASSIFIER_H_
