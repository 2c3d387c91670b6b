#include "tools/train_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/device.h"
#include "core/json_writer.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "dataset/auto_shard.h"
#include "distributed/mpi_communicator.h"
#ifdef SLUICE_HAVE_NCCL
#include "distributed/nccl/nccl_communicator.h"
#endif
#include "io/glob.h"
#include "io/record_index.h"
#include "ops/random_flip.h"
#include "ops/random_translation.h"
#include "ops/random_zoom.h"
#include "ops/rescaling.h"
#include "tools/command_line.h"
#include "tools/device_option.h"
#include "train/autodiff/check_numerics.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/cpu_allocator.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/callbacks/callback.h"
#include "train/callbacks/early_stopping.h"
#include "train/callbacks/model_checkpoint.h"
#include "train/callbacks/tensorboard.h"
#include "train/data/image_dataset.h"
#include "train/data/image_dataset_from_directory.h"
#include "train/fit/saved_model.h"
#include "train/fit/trainer.h"
#include "train/layers/summary.h"
#include "train/losses/sparse_categorical_crossentropy.h"
#include "train/models/model_zoo.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/learning_rate_schedule.h"
#include "train/optimizers/optimizer.h"
#include "train/optimizers/sgd.h"

namespace sluice::tools {
namespace {

namespace fs = std::filesystem;
using train::callbacks::Logs;
using train::fit::History;

struct TrainConfig {
  std::string data;
  // Instead of `data`: a folder of class folders of JPEGs (ImageDatasetFromDirectory), split
  // into training and validation (the test set here) subsets.
  std::string images;
  int64_t image_size = 64;
  double validation_split = 0.2;
  std::string model = "cnn";
  int64_t epochs = 1;
  int64_t batch = 64;
  std::string optimizer = "adam";
  std::optional<double> lr;
  double momentum = 0;
  std::optional<double> weight_decay;  // the optimizer's default when absent
  std::string schedule = "constant";
  int64_t warmup_steps = 0;
  double clip_norm = 0;
  double label_smoothing = 0;  // the loss's; 0: plain sparse cross-entropy
  Device device = Device::Cpu();
  train::backend::Precision precision = train::backend::Precision::kFloat32;
  int64_t accumulate = 1;
  int64_t limit = -1;
  int64_t threads = 0;
  uint64_t seed = 0;
  bool augment = false;
  // With augment: "pad-crop" (flip + 4-pixel pad-crop, fused into the decode) or "keras"
  // (RandomFlip("horizontal"), RandomTranslation(0.1, 0.1), RandomZoom(0.1) on each batch).
  std::string augmentation = "pad-crop";
  bool recompute = false;  // the resnets' residual blocks recompute their activations
  bool check_numerics = false;
  bool summary = false;
  std::string profile;  // the profiler's folder; empty: no profile
  int64_t profile_from = 2, profile_to = 11;
  bool validate = false;
  int64_t early_stopping = 0;  // patience; 0: off
  std::string logdir;
  std::string checkpoint;
  std::string save;  // SaveModel's directory after training; empty: none
  bool resume = false;
  bool skip_errors = false;
  bool json = false;
  // Data-parallel over the processes mpirun started (--batch is then per rank).
  bool distributed = false;
  int64_t collective_timeout = 300;  // seconds
  AutoShardPolicy auto_shard = AutoShardPolicy::kAuto;
  int64_t bucket_mb = 25;
};

// The number of training records (at most `limit`), for the schedule's length and the
// progress bar: each file's record headers are read with seeks past the payloads
// (RecordIndex::Build), so a large set costs a few bytes per record, not a pass over its data.
// Payloads are not checked here; training reports a corrupt one (or, with --skip-errors, skips
// it). A file whose headers cannot be indexed fails, unless `skip_errors`: it is then counted
// by reading it, without the records that fail.
absl::StatusOr<int64_t> CountRecords(const std::string& pattern, int64_t limit, bool skip_errors) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> files, Glob(pattern));
  int64_t count = 0;
  for (const std::string& file : files) {
    if (limit >= 0 && count >= limit) break;
    absl::StatusOr<RecordIndex> index = RecordIndex::Build(file);
    if (index.ok()) {
      count += index->size();
      continue;
    }
    if (!skip_errors) return index.status();
    auto records = Dataset::TFRecord(file).IgnoreErrors().MakeIterator();
    while (limit < 0 || count < limit) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> next, records->GetNext());
      if (!next) break;
      ++count;
    }
  }
  return limit >= 0 ? std::min(count, limit) : count;
}

// What --skip-errors skipped, from any pipeline thread. A bad training record is met again on
// each pass over the data; its error message (file, record, offset) tells the passes apart from
// other records, so records are counted once each.
class SkippedRecords {
 public:
  void Add(const absl::Status& status) {
    MutexLock l(&mu_);
    if (first_.empty()) first_ = std::string(status.message());
    if (distinct_.size() < kMaxTracked) distinct_.insert(std::string(status.message()));
  }
  int64_t count() const {
    MutexLock l(&mu_);
    return static_cast<int64_t>(distinct_.size());
  }
  std::string first() const {
    MutexLock l(&mu_);
    return first_;
  }

 private:
  static constexpr size_t kMaxTracked = 100000;  // bounds the memory a hopeless set can take
  mutable Mutex mu_;
  std::set<std::string> distinct_ ABSL_GUARDED_BY(mu_);
  std::string first_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<train::optimizers::Optimizer>> MakeOptimizer(
    const TrainConfig& config, int64_t total_steps) {
  std::unique_ptr<train::optimizers::Optimizer> optimizer;
  float lr;
  if (config.optimizer == "sgd") {
    lr = static_cast<float>(config.lr.value_or(0.01));
    optimizer = std::make_unique<train::optimizers::Sgd>(train::optimizers::SgdOptions{
        .learning_rate = lr,
        .momentum = static_cast<float>(config.momentum),
        .weight_decay = static_cast<float>(config.weight_decay.value_or(0))});
  } else if (config.optimizer == "adam") {
    lr = static_cast<float>(config.lr.value_or(0.001));
    optimizer = std::make_unique<train::optimizers::Adam>(train::optimizers::AdamOptions{
        .learning_rate = lr, .weight_decay = static_cast<float>(config.weight_decay.value_or(0))});
  } else if (config.optimizer == "adamw") {
    lr = static_cast<float>(config.lr.value_or(0.001));
    train::optimizers::AdamWOptions options{.learning_rate = lr};
    if (config.weight_decay) options.weight_decay = static_cast<float>(*config.weight_decay);
    optimizer = std::make_unique<train::optimizers::AdamW>(options);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--optimizer takes sgd, adam or adamw, not '", config.optimizer, "'"));
  }
  std::shared_ptr<const train::optimizers::LearningRateSchedule> schedule;
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - config.warmup_steps);
  if (config.schedule == "cosine") {
    schedule =
        std::make_shared<train::optimizers::CosineDecay>(train::optimizers::CosineDecayOptions{
            .initial_learning_rate = lr, .decay_steps = decay_steps});
  } else if (config.schedule == "step") {
    // A tenth of the rate after half the steps, a hundredth after three quarters.
    SLUICE_ASSIGN_OR_RETURN(
        schedule, train::optimizers::PiecewiseConstantDecay::Create(
                      {decay_steps / 2, std::max(decay_steps / 2 + 1, decay_steps * 3 / 4)},
                      {lr, lr / 10, lr / 100}));
  } else if (config.schedule != "constant") {
    return absl::InvalidArgumentError(
        absl::StrCat("--schedule takes constant, cosine or step, not '", config.schedule, "'"));
  }
  if (config.warmup_steps > 0) {
    if (!schedule) {
      SLUICE_ASSIGN_OR_RETURN(schedule,
                              train::optimizers::PiecewiseConstantDecay::Create({}, {lr}));
    }
    schedule =
        std::make_shared<train::optimizers::LinearWarmup>(schedule, config.warmup_steps, 0.0);
  }
  if (schedule) optimizer->set_schedule(schedule);
  if (config.clip_norm > 0) optimizer->set_clip_global_norm(static_cast<float>(config.clip_norm));
  return optimizer;
}

struct Outcome {
  History history;
  Logs test;
  double train_seconds = 0;
  double images_per_second = 0;
  double input_wait_share = 0;
  int64_t train_records = 0;
  int ranks = 1;                       // processes training together (--distributed)
  double allreduce_exposed_share = 0;  // --distributed: mean over the epochs
  // Records --skip-errors skipped (each once, however many passes met it; at most 100,000),
  // and the first one's error.
  int64_t skipped_records = 0;
  std::string first_skipped;
  // Memory when training ends, before the test set's evaluation (whose batches of 256 would
  // add their own): the process's high-water mark, and the CPU backend's tensors alone
  // (activations, gradients, weights, optimizer slots; what --recompute reduces), alive at
  // once and alive plus idle in the allocator's cache.
  double train_max_rss_mb = 0;
  double train_peak_tensor_mb = 0;
  double train_peak_tensor_held_mb = 0;
};

// The process's peak resident set so far, in MiB.
double MaxRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024;  // Linux counts kibibytes
}

// Images/s over the whole run: each epoch trains on the same number of images, so the rate of
// the run is the harmonic mean of the epochs' rates.
double RunRate(const History& history, const std::string& key) {
  auto it = history.history.find(key);
  if (it == history.history.end() || it->second.empty()) return 0;
  double inverse = 0;
  for (double rate : it->second) inverse += rate > 0 ? 1 / rate : 0;
  return inverse > 0 ? it->second.size() / inverse : 0;
}

double MeanOf(const History& history, const std::string& key) {
  auto it = history.history.find(key);
  if (it == history.history.end() || it->second.empty()) return 0;
  double sum = 0;
  for (double v : it->second) sum += v;
  return sum / it->second.size();
}

// The training and test pipelines, and what Train needs to know of them.
struct Datasets {
  Dataset train;
  Dataset test;
  int64_t train_records = 0;
  int64_t classes = 10;
  std::vector<std::string> class_names;  // saved with the model (--save)
  std::string test_source;               // for errors
};

// Keras' RandomFlip("horizontal"), RandomTranslation(0.1, 0.1) and RandomZoom(0.1) on each
// batch of `batches` when `augment`, then Rescaling(`rescale`) (1: none), in parallel.
absl::StatusOr<Dataset> KerasAugmentation(Dataset batches, float rescale, bool augment = true) {
  const Rescaling rescaling(rescale);
  const RandomFlip flip(RandomFlip::Mode::kHorizontal);
  SLUICE_ASSIGN_OR_RETURN(const RandomTranslation translate, RandomTranslation::Create(0.1, 0.1));
  SLUICE_ASSIGN_OR_RETURN(const RandomZoom zoom, RandomZoom::Create(0.1));
  return batches
      .Map(
          [=](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
            if (augment) {
              SLUICE_ASSIGN_OR_RETURN(e[0], flip.Apply(e[0], c.seed));
              SLUICE_ASSIGN_OR_RETURN(e[0], translate.Apply(e[0], c.seed));
              SLUICE_ASSIGN_OR_RETURN(e[0], zoom.Apply(e[0], c.seed));
            }
            if (rescale != 1) {
              SLUICE_ASSIGN_OR_RETURN(e[0], rescaling.Apply(e[0]));
            }
            return e;
          },
          {.num_parallel_calls = kAutotune})
      .Prefetch();
}

// --data DIR: the TFRecords `sluice convert` writes, 10 classes of grayscale images.
absl::StatusOr<Datasets> TFRecordDatasets(const TrainConfig& config,
                                          std::function<void(const absl::Status&)> on_skipped) {
  const std::string train_files = (fs::path(config.data) / "train-*.tfrecord").string();
  const std::string test_files = (fs::path(config.data) / "test-*.tfrecord").string();
  SLUICE_ASSIGN_OR_RETURN(int64_t train_records,
                          CountRecords(train_files, config.limit, config.skip_errors));
  if (train_records == 0) {
    return absl::NotFoundError(absl::StrCat("no training records in ", train_files,
                                            " (make them with `sluice convert fashion-mnist`)"));
  }
  const bool keras = config.augment && config.augmentation == "keras";
  SLUICE_ASSIGN_OR_RETURN(Dataset train_data,
                          train::data::MakeImageDataset({.files = train_files,
                                                         .batch_size = config.batch,
                                                         .channels = 1,
                                                         .shuffle_buffer = 10000,
                                                         .augment = config.augment && !keras,
                                                         .limit = config.limit,
                                                         .skip_errors = config.skip_errors,
                                                         .on_skipped = on_skipped,
                                                         .seed = config.seed}));
  if (keras) {
    SLUICE_ASSIGN_OR_RETURN(train_data, KerasAugmentation(std::move(train_data), /*rescale=*/1));
  }
  SLUICE_ASSIGN_OR_RETURN(Dataset test_data,
                          train::data::MakeImageDataset({.files = test_files,
                                                         .batch_size = 256,
                                                         .channels = 1,
                                                         .skip_errors = config.skip_errors,
                                                         .on_skipped = on_skipped,
                                                         .seed = config.seed}));
  // `sluice convert` writes the class names beside the records.
  std::vector<std::string> class_names;
  {
    std::ifstream labels(fs::path(config.data) / "labels.txt");
    for (std::string line; std::getline(labels, line);) class_names.push_back(line);
  }
  if (class_names.size() != 10) {
    class_names.clear();
    for (int i = 0; i < 10; ++i) class_names.push_back(absl::StrCat(i));
  }
  return Datasets{.train = std::move(train_data),
                  .test = std::move(test_data),
                  .train_records = train_records,
                  .classes = 10,
                  .class_names = std::move(class_names),
                  .test_source = test_files};
}

// --images DIR: ImageDatasetFromDirectory's training and validation subsets, RGB, scaled to
// [0, 1]; with --augment, Keras' RandomFlip("horizontal"), RandomTranslation(0.1, 0.1) and
// RandomZoom(0.1) on each training batch.
absl::StatusOr<Datasets> ImageFolderDatasets(const TrainConfig& config, bool chief,
                                             std::function<void(const absl::Status&)> on_skipped) {
  using Options = train::data::ImageDirectoryOptions;
  Options options;
  options.image_height = options.image_width = config.image_size;
  options.seed = config.seed;
  options.validation_split = config.validation_split;
  options.subset = Options::Subset::kTraining;
  options.batch_size = config.batch;
  options.verbose = chief && !config.json;
  options.skip_errors = config.skip_errors;
  options.on_skipped = on_skipped;
  SLUICE_ASSIGN_OR_RETURN(train::data::ImageDirectoryDataset train_set,
                          train::data::ImageDatasetFromDirectory(config.images, options));
  options.subset = Options::Subset::kValidation;
  options.batch_size = 256;
  SLUICE_ASSIGN_OR_RETURN(train::data::ImageDirectoryDataset test_set,
                          train::data::ImageDatasetFromDirectory(config.images, options));
  const Rescaling rescale(1.0f / 255);
  SLUICE_ASSIGN_OR_RETURN(Dataset train_data,
                          KerasAugmentation(train_set.dataset, 1.0f / 255, config.augment));
  Dataset test_data = test_set.dataset.Map([rescale](Element e) -> absl::StatusOr<Element> {
    SLUICE_ASSIGN_OR_RETURN(e[0], rescale.Apply(e[0]));
    return e;
  });
  int64_t train_records = static_cast<int64_t>(train_set.files.size());
  if (config.limit >= 0) {
    train_records = std::min(train_records, config.limit);
    train_data = train_data.Take((config.limit + config.batch - 1) / config.batch);
  }
  return Datasets{.train = std::move(train_data),
                  .test = std::move(test_data),
                  .train_records = train_records,
                  .classes = static_cast<int64_t>(train_set.class_names.size()),
                  .class_names = train_set.class_names,
                  .test_source = absl::StrCat(config.images, " (validation subset)")};
}

// `comm`: the job's processes with --distributed, else nullptr.
absl::StatusOr<Outcome> Train(const TrainConfig& config, distributed::Communicator* comm) {
  const int ranks = comm != nullptr ? comm->size() : 1;
  const bool chief = comm == nullptr || comm->rank() == 0;  // prints and writes files
  train::backend::cpu::SetCpuThreads(static_cast<int>(config.threads));
  auto skipped = std::make_shared<SkippedRecords>();
  auto on_skipped = [skipped](const absl::Status& status) { skipped->Add(status); };
  SLUICE_ASSIGN_OR_RETURN(Datasets data, config.images.empty()
                                             ? TFRecordDatasets(config, on_skipped)
                                             : ImageFolderDatasets(config, chief, on_skipped));
  const int64_t train_records = data.train_records;
  Dataset& train_data = data.train;
  Dataset& test_data = data.test;
  const std::string& test_source = data.test_source;
  // The model's input shape comes from the first test batch.
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> first, test_data.MakeIterator()->GetNext());
  if (!first) return absl::NotFoundError(absl::StrCat("no test records in ", test_source));
  const Shape& shape = (*first)[0].shape();
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<train::layers::Module> model,
      train::models::MakeModel(
          config.model,
          {.height = shape[1], .width = shape[2], .channels = shape[3], .classes = data.classes},
          config.seed, {.recompute = config.recompute}));
  if (!config.device.is_cpu()) {
    SLUICE_RETURN_IF_ERROR(CheckDeviceAvailable(config.device));
    SLUICE_RETURN_IF_ERROR(model->To(config.device));
  }
  // Before any training: a processor without bf16 says so at once.
  {
    absl::Status supported =
        train::backend::CheckPrecisionSupported(config.device, config.precision);
    if (!supported.ok()) {
      return absl::Status(
          supported.code(),
          absl::StrCat("--precision ", train::backend::PrecisionName(config.precision), ": ",
                       supported.message()));
    }
  }
  // Each rank trains on its shard with --batch images a step: together, ranks x batch.
  const int64_t global_batch = config.batch * ranks;
  const int64_t steps_per_epoch = (train_records + global_batch - 1) / global_batch;
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<train::optimizers::Optimizer> optimizer,
      MakeOptimizer(config, steps_per_epoch * config.epochs / config.accumulate));

  train::fit::TrainerOptions trainer_options{.precision = config.precision,
                                             .communicator = comm,
                                             .auto_shard = config.auto_shard,
                                             .bucket_bytes = config.bucket_mb << 20};
  if (config.label_smoothing > 0) {
    trainer_options.loss = std::make_shared<train::losses::SparseCategoricalCrossentropy>(
        train::losses::SparseCategoricalCrossentropyOptions{
            .from_logits = true, .label_smoothing = static_cast<float>(config.label_smoothing)});
    trainer_options.metrics = std::vector<train::fit::MetricSpec>{"accuracy"};
  }
  train::fit::Trainer trainer(*model, *optimizer, std::move(trainer_options));
  std::vector<std::unique_ptr<train::callbacks::Callback>> callbacks;
  // Every rank runs ModelCheckpoint (saving gathers every rank's input position; rank 0
  // writes); TensorBoard runs on rank 0 only.
  if (!config.logdir.empty() && chief) {
    callbacks.push_back(std::make_unique<train::callbacks::TensorBoard>(
        train::callbacks::TensorBoardOptions{.log_dir = config.logdir, .update_freq = 100}));
  }
  if (!config.checkpoint.empty()) {
    callbacks.push_back(std::make_unique<train::callbacks::ModelCheckpoint>(
        train::callbacks::ModelCheckpointOptions{.path = config.checkpoint, .monitor = "loss"}));
    if (config.resume && fs::exists(config.checkpoint)) {
      SLUICE_RETURN_IF_ERROR(trainer.LoadCheckpoint(config.checkpoint));
      if (!config.json && chief) {
        std::printf("resuming from %s (step %lld)\n", config.checkpoint.c_str(),
                    static_cast<long long>(trainer.global_step()));
      }
    }
  }
  if (config.early_stopping > 0) {
    callbacks.push_back(std::make_unique<train::callbacks::EarlyStopping>(
        train::callbacks::EarlyStoppingOptions{.monitor = "val_loss",
                                               .patience = config.early_stopping,
                                               .restore_best_weights = true}));
  }
  if (config.summary && chief && !config.json) {
    SLUICE_ASSIGN_OR_RETURN(std::string summary,
                            train::layers::Summary(*model, Shape{1, shape[1], shape[2], shape[3]}));
    std::printf("%s", summary.c_str());
  }
  if (config.check_numerics) train::autodiff::EnableCheckNumerics();
  train::fit::FitOptions fit;
  fit.epochs = config.epochs;
  if (!config.profile.empty()) {
    fit.profile_steps = {config.profile_from, config.profile_to};
    fit.profile_dir = config.profile;
  }
  // Known from the record count, so that progress shows a total and an ETA. Skipped records
  // would shorten a pass, so then each epoch is one pass, however long.
  if (!config.skip_errors) fit.steps_per_epoch = steps_per_epoch;
  fit.accumulation_steps = static_cast<int>(config.accumulate);
  fit.seed = config.seed;
  fit.verbose = config.json ? 0 : 1;  // rank 0 only, whatever this says
  if (config.validate || config.early_stopping > 0) fit.validation_data = test_data;
  for (auto& callback : callbacks) fit.callbacks.push_back(callback.get());

  Outcome outcome;
  outcome.train_records = train_records;
  const auto start = std::chrono::steady_clock::now();
  SLUICE_ASSIGN_OR_RETURN(outcome.history, trainer.Fit(train_data, fit));
  outcome.train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.images_per_second = RunRate(outcome.history, "images_per_second");
  outcome.input_wait_share = MeanOf(outcome.history, "input_wait_share");
  outcome.ranks = ranks;
  outcome.allreduce_exposed_share = MeanOf(outcome.history, "allreduce_exposed_share");
  outcome.train_max_rss_mb = MaxRssMb();
  constexpr double kMiB = 1 << 20;
  outcome.train_peak_tensor_mb = train::backend::cpu::CpuAllocator::peak_live_bytes() / kMiB;
  outcome.train_peak_tensor_held_mb = train::backend::cpu::CpuAllocator::peak_held_bytes() / kMiB;
  SLUICE_ASSIGN_OR_RETURN(outcome.test, trainer.Evaluate(test_data));
  if (!config.save.empty() && chief) {
    SLUICE_RETURN_IF_ERROR(
        train::fit::SaveModel(*model, Shape{1, shape[1], shape[2], shape[3]}, config.save,
                              {.class_names = data.class_names, .optimizer = optimizer.get()}));
    if (!config.json) std::printf("saved the model to %s\n", config.save.c_str());
  }
  outcome.skipped_records = skipped->count();
  outcome.first_skipped = skipped->first();
  return outcome;
}

void PrintJson(const TrainConfig& config, const Outcome& outcome) {
  JsonWriter json;
  json.BeginObject();
  json.Key("model");
  json.String(config.model);
  json.Key("recompute");
  json.RawValue(config.recompute ? "true" : "false");
  json.Key("augmentation");  // what the training images went through: none, pad-crop or keras
  json.String(config.augment ? config.augmentation : "none");
  json.Key("label_smoothing");
  json.Double(config.label_smoothing);
  json.Key("precision");
  json.String(train::backend::PrecisionName(config.precision));
  json.Key("epochs");
  json.Int(config.epochs);
  json.Key("batch");
  json.Int(config.batch);
  json.Key("train_records");
  json.Int(outcome.train_records);
  json.Key("ranks");
  json.Int(outcome.ranks);
  json.Key("global_batch");
  json.Int(config.batch * outcome.ranks);
  if (outcome.ranks > 1) {
    json.Key("allreduce_exposed_share");
    json.Double(outcome.allreduce_exposed_share);
  }
  json.Key("test_accuracy");
  json.Double(outcome.test.count("accuracy") ? outcome.test.at("accuracy") : 0);
  json.Key("test_loss");
  json.Double(outcome.test.count("loss") ? outcome.test.at("loss") : 0);
  json.Key("train_images_per_second");
  json.Double(outcome.images_per_second);
  json.Key("input_wait_share");
  json.Double(outcome.input_wait_share);
  json.Key("train_seconds");
  json.Double(outcome.train_seconds);
  json.Key("train_max_rss_mb");
  json.Double(outcome.train_max_rss_mb);
  json.Key("train_peak_tensor_mb");
  json.Double(outcome.train_peak_tensor_mb);
  json.Key("train_peak_tensor_held_mb");
  json.Double(outcome.train_peak_tensor_held_mb);
  json.Key("skipped_records");
  json.Int(outcome.skipped_records);
  if (outcome.skipped_records > 0) {
    json.Key("first_skipped");
    json.String(outcome.first_skipped);
  }
  json.Key("history");
  json.BeginObject();
  for (const auto& [name, values] : outcome.history.history) {
    json.Key(name);
    json.BeginArray();
    for (double v : values) json.Double(v);
    json.EndArray();
  }
  json.EndObject();
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
}

void AddTrainOptions(CommandLine& command_line) {
  command_line.AddOption("data", "DIR", "", "folder with train-*.tfrecord and test-*.tfrecord");
  command_line.AddOption("images", "DIR", "",
                         "instead of --data: a folder of class folders of JPEGs "
                         "(ImageDatasetFromDirectory), RGB, split into training and validation "
                         "subsets; the validation subset is the test set");
  command_line.AddOption("image-size", "N", "64", "with --images: height and width of the images");
  command_line.AddOption("validation-split", "X", "0.2",
                         "with --images: the share of the images held out as the test set");
  command_line.AddOption("model", "NAME", "cnn",
                         absl::StrCat(absl::StrJoin(train::models::ModelNames(), ", "),
                                      " (see the README for their layers)"));
  command_line.AddOption("epochs", "N", "1", "passes over the training set");
  command_line.AddOption("batch", "B", "64", "images per training step");
  command_line.AddOption("optimizer", "NAME", "adam", "sgd, adam or adamw (Keras defaults)");
  command_line.AddOption("lr", "X", "optimizer's default",
                         "learning rate (sgd 0.01, adam and adamw 0.001 by default)");
  command_line.AddOption("momentum", "M", "0", "SGD momentum");
  command_line.AddOption("weight-decay", "X", "adamw 0.004, others 0",
                         "decoupled weight decay: w -= lr * X * w each step (Keras' weight_decay)");
  command_line.AddOption("schedule", "NAME", "constant",
                         "learning-rate schedule: constant, cosine (to 0 at the end) or step "
                         "(/10 at 50% and 75% of the steps)");
  command_line.AddOption("warmup-steps", "N", "0", "linear warmup from 0 over N steps");
  command_line.AddOption("clip-norm", "X", "0", "clip gradients to this global norm (0: off)");
  command_line.AddOption("label-smoothing", "X", "0",
                         "in [0, 1]: train towards (1 - X) on the label and X spread evenly over "
                         "the classes (CategoricalCrossentropy's label_smoothing); the logged "
                         "losses include it");
  command_line.AddOption(
      "precision", "POLICY", "float32",
      "float32, mixed_bfloat16 (matmuls and convolutions multiply in bfloat16; needs AVX512-BF16 "
      "on the CPU) or mixed_float16 (CUDA only)");
  command_line.AddOption(
      "device", "DEV", "cpu",
      "where the model trains: cpu, cuda or cuda:N (needs a CUDA build and a GPU)");
  command_line.AddOption("accumulate", "N", "1", "apply the mean gradient of N batches");
  command_line.AddOption("limit", "N", "all", "train on the first N training records only");
  const std::string resnets = absl::StrJoin(train::models::ResNetNames(), " and ");
  command_line.AddFlag("augment", absl::StrCat("augment the training images, as --augmentation "
                                               "says (default for ",
                                               resnets, "; --augment=false turns it off)"));
  command_line.AddOption(
      "augmentation", "NAME", "pad-crop with --data, keras with --images",
      "with --augment: pad-crop (random flip and 4-pixel pad-crop, fused into the decode) or "
      "keras (Keras' RandomFlip(\"horizontal\"), RandomTranslation(0.1, 0.1) and "
      "RandomZoom(0.1) on each batch)");
  command_line.AddFlag(
      "recompute",
      absl::StrCat(resnets,
                   " only: recompute each residual block's activations in the backward pass "
                   "instead of keeping them (tf.recompute_grad): less memory, a slower step, "
                   "the same training"));
  command_line.AddFlag("check-numerics",
                       "stop at the first op that produces a NaN or an Inf, naming the op, the "
                       "layer and the step (tf.debugging.enable_check_numerics; slow)");
  command_line.AddFlag("summary", "print the model's layers, output shapes and parameter counts");
  command_line.AddOption("profile", "DIR", "",
                         "profile steps --profile-steps into DIR: a Chrome trace (Perfetto, "
                         "chrome://tracing), the same for TensorBoard's profile plugin, and a "
                         "summary printed at the end");
  command_line.AddOption("profile-steps", "FROM:TO", "2:11",
                         "the global steps (1-based, inclusive) that --profile records");
  command_line.AddFlag("validate", "evaluate on the test set after each epoch (val_* metrics)");
  command_line.AddOption("early-stopping", "P", "0",
                         "stop when val_loss has not improved for P epochs, restoring the best "
                         "weights (implies --validate; 0: off)");
  command_line.AddOption("logdir", "DIR", "", "write TensorBoard event files under DIR");
  command_line.AddOption("checkpoint", "PATH", "",
                         "save a checkpoint (weights, optimizer, input position) after each epoch");
  command_line.AddFlag("resume", "continue from --checkpoint PATH when it exists");
  command_line.AddOption("save", "DIR", "",
                         "after training, save the model to DIR (architecture, weights, class "
                         "names, the optimizer's state): what `sluice predict --model DIR` and "
                         "`sluice export` load");
  command_line.AddOption("threads", "N", "all cores", "threads for the training kernels");
  command_line.AddOption("seed", "S", "0", "seed of initializers, shuffling and augmentation");
  command_line.AddFlag("skip-errors", "skip (and count) unreadable records instead of failing");
  command_line.AddFlag("json", "print one JSON object (test_accuracy, train_images_per_second...)");
  command_line.AddFlag(
      "distributed",
      "data-parallel over the processes mpirun (or srun) started, one rank each: --batch and "
      "--threads are per rank, rank 0 prints and writes the files");
  command_line.AddOption("collective-timeout", "S", "300",
                         "with --distributed: fail, naming the rank, when a peer has not joined "
                         "a collective within S seconds");
  command_line.AddOption("auto-shard", "POLICY", "auto",
                         "with --distributed: how each rank takes its part of the data: file, "
                         "data (every N-th batch), auto (file when there are enough files) or off");
  command_line.AddOption("bucket-mb", "MB", "25",
                         "with --distributed: all-reduce the gradients in buckets of this size");
}

// The configuration the options describe; InvalidArgument (a usage error) names a bad option.
absl::StatusOr<TrainConfig> ParseTrainConfig(const CommandLine& command_line) {
  TrainConfig config;
  config.data = command_line.Value("data");
  config.images = command_line.Value("images");
  if (config.data.empty() == config.images.empty()) {
    return absl::InvalidArgumentError("give --data DIR or --images DIR (one of them)");
  }
  if (config.images.empty()) {
    for (const char* name : {"image-size", "validation-split"}) {
      if (command_line.WasGiven(name)) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " applies to --images"));
      }
    }
  } else {
    absl::StatusOr<int64_t> size = command_line.IntValue("image-size", 8);
    if (!size.ok()) return size.status();
    config.image_size = *size;
    const std::string& split = command_line.Value("validation-split");
    if (!absl::SimpleAtod(split, &config.validation_split) || !(config.validation_split > 0) ||
        !(config.validation_split < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--validation-split takes a number in (0, 1), not '", split, "'"));
    }
  }
  config.model = command_line.Value("model");
  config.optimizer = command_line.Value("optimizer");
  config.schedule = command_line.Value("schedule");
  SLUICE_ASSIGN_OR_RETURN(config.device, ParseDevice(command_line.Value("device")));
  {
    absl::StatusOr<train::backend::Precision> precision =
        train::backend::ParsePrecision(command_line.Value("precision"));
    if (!precision.ok())
      return absl::InvalidArgumentError(absl::StrCat("--", precision.status().message()));
    config.precision = *precision;
  }
  // Integer options: name, smallest value, destination, and whether an absent option keeps the
  // config's value (its default text, "all", is not a number).
  int64_t seed = 0;
  struct IntOption {
    const char* name;
    int64_t min;
    int64_t* out;
    bool only_when_given;
  };
  for (const IntOption& option :
       {IntOption{"epochs", 1, &config.epochs, false}, IntOption{"batch", 1, &config.batch, false},
        IntOption{"warmup-steps", 0, &config.warmup_steps, false},
        IntOption{"accumulate", 1, &config.accumulate, false},
        IntOption{"early-stopping", 0, &config.early_stopping, false},
        IntOption{"limit", 1, &config.limit, true}, IntOption{"threads", 1, &config.threads, true},
        IntOption{"seed", 0, &seed, false}}) {
    if (option.only_when_given && !command_line.WasGiven(option.name)) continue;
    absl::StatusOr<int64_t> value = command_line.IntValue(option.name, option.min);
    if (!value.ok()) return value.status();
    *option.out = *value;
  }
  config.seed = static_cast<uint64_t>(seed);
  if (command_line.WasGiven("lr")) {
    absl::StatusOr<double> lr = command_line.DoubleValue("lr", 0);
    if (!lr.ok()) return lr.status();
    config.lr = *lr;
  }
  double weight_decay = 0;
  for (auto [name, out] : {std::pair<const char*, double*>{"momentum", &config.momentum},
                           {"clip-norm", &config.clip_norm},
                           {"label-smoothing", &config.label_smoothing},
                           {"weight-decay", &weight_decay}}) {
    if (!command_line.WasGiven(name)) continue;
    absl::StatusOr<double> value =
        command_line.DoubleValue(name, 0, CommandLine::Bound::kInclusive);
    if (!value.ok()) return value.status();
    *out = *value;
  }
  if (command_line.WasGiven("weight-decay")) config.weight_decay = weight_decay;
  if (config.label_smoothing > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--label-smoothing takes a number in [0, 1], not '",
                     command_line.Value("label-smoothing"), "'"));
  }
  if (command_line.WasGiven("momentum") && config.optimizer != "sgd") {
    return absl::InvalidArgumentError("--momentum applies to --optimizer sgd only");
  }
  config.augment = command_line.WasGiven("augment") ? command_line.Flag("augment")
                                                    : train::models::IsResNet(config.model);
  config.augmentation = command_line.WasGiven("augmentation")
                            ? command_line.Value("augmentation")
                            : (config.images.empty() ? "pad-crop" : "keras");
  if (config.augmentation != "pad-crop" && config.augmentation != "keras") {
    return absl::InvalidArgumentError(
        absl::StrCat("--augmentation takes pad-crop or keras, not '", config.augmentation, "'"));
  }
  if (!config.images.empty() && config.augmentation != "keras") {
    return absl::InvalidArgumentError("--images augments with --augmentation keras only");
  }
  if (command_line.WasGiven("augmentation") && !config.augment) {
    return absl::InvalidArgumentError("--augmentation needs augmentation on (--augment)");
  }
  config.recompute = command_line.Flag("recompute");
  if (config.recompute && !train::models::IsResNet(config.model)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--recompute applies to --model ",
                     absl::StrJoin(train::models::ResNetNames(), " and "), " only"));
  }
  config.check_numerics = command_line.Flag("check-numerics");
  config.summary = command_line.Flag("summary");
  config.profile = command_line.Value("profile");
  {
    const std::vector<std::string> parts = absl::StrSplit(command_line.Value("profile-steps"), ':');
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &config.profile_from) ||
        !absl::SimpleAtoi(parts[1], &config.profile_to) || config.profile_from < 1 ||
        config.profile_to < config.profile_from) {
      return absl::InvalidArgumentError(
          absl::StrCat("--profile-steps must be FROM:TO with 1 <= FROM <= TO, got '",
                       command_line.Value("profile-steps"), "'"));
    }
  }
  config.validate = command_line.Flag("validate");
  config.logdir = command_line.Value("logdir");
  config.checkpoint = command_line.Value("checkpoint");
  config.save = command_line.Value("save");
  config.resume = command_line.Flag("resume");
  if (config.resume && config.checkpoint.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint PATH");
  }
  config.skip_errors = command_line.Flag("skip-errors");
  config.json = command_line.Flag("json");
  config.distributed = command_line.Flag("distributed");
  {
    absl::StatusOr<int64_t> timeout = command_line.IntValue("collective-timeout", 1);
    if (!timeout.ok()) return timeout.status();
    config.collective_timeout = *timeout;
    absl::StatusOr<int64_t> bucket = command_line.IntValue("bucket-mb", 1);
    if (!bucket.ok()) return bucket.status();
    config.bucket_mb = *bucket;
    absl::StatusOr<AutoShardPolicy> policy = ParseAutoShardPolicy(command_line.Value("auto-shard"));
    if (!policy.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--auto-shard: ", policy.status().message()));
    }
    config.auto_shard = *policy;
  }
  if (!config.distributed) {
    for (const char* name : {"collective-timeout", "auto-shard", "bucket-mb"}) {
      if (command_line.WasGiven(name)) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs --distributed"));
      }
    }
  }
  return config;
}

// Prints the outcome as one JSON object or one line, and the skipped records to stderr.
void ReportOutcome(const TrainConfig& config, const Outcome& outcome) {
  if (outcome.skipped_records > 0) {
    std::fprintf(stderr, "sluice train: skipped %lld unreadable record%s; the first: %s\n",
                 static_cast<long long>(outcome.skipped_records),
                 outcome.skipped_records == 1 ? "" : "s", outcome.first_skipped.c_str());
  }
  if (config.json) {
    PrintJson(config, outcome);
    return;
  }
  std::printf(
      "test accuracy %.2f%% (loss %.4f) | %s, %lld epochs of %lld images | train %.1f images/s | "
      "input wait %.1f%% of step time%s\n",
      100 * train::callbacks::LogValue(outcome.test, "accuracy").value_or(0),
      train::callbacks::LogValue(outcome.test, "loss").value_or(0), config.model.c_str(),
      static_cast<long long>(config.epochs), static_cast<long long>(outcome.train_records),
      outcome.images_per_second, 100 * outcome.input_wait_share,
      outcome.ranks > 1
          ? absl::StrCat(" | ", outcome.ranks, " ranks, all-reduce exposed ",
                         static_cast<int>(100 * outcome.allreduce_exposed_share + 0.5), "%")
                .c_str()
          : "");
}

}  // namespace

int RunTrain(int argc, char** argv) {
  CommandLine command_line(
      "sluice train",
      "Trains an image classifier on the TFRecords that `sluice convert fashion-mnist` writes\n"
      "(--data DIR: DIR/train-*.tfrecord, DIR/test-*.tfrecord), fed by the input pipeline\n"
      "(shuffle, JPEG decode, [flip + pad-crop], batch, prefetch), or on a folder of class\n"
      "folders of JPEGs (--images DIR, split into training and test subsets), then prints the\n"
      "test accuracy and the training throughput in images/s; --save DIR keeps the model for\n"
      "`sluice predict`. The loss is sparse softmax cross-entropy (--label-smoothing).\n"
      "Data-parallel over processes and machines: mpirun -np N sluice train --distributed ...");
  AddTrainOptions(command_line);
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;
  absl::StatusOr<TrainConfig> config = ParseTrainConfig(command_line);
  if (!config.ok()) return command_line.ReportUsageError(config.status().message());
  std::unique_ptr<distributed::MpiCommunicator> comm;
  if (config->distributed) {
    absl::StatusOr<std::unique_ptr<distributed::MpiCommunicator>> created =
        distributed::MpiCommunicator::Create(
            {.timeout = absl::Seconds(config->collective_timeout)});
    if (!created.ok()) {
      std::fprintf(stderr, "sluice train: --distributed: %s\n",
                   std::string(created.status().message()).c_str());
      return kExitFailure;
    }
    comm = *std::move(created);
  }
  distributed::Communicator* collectives = comm.get();
#ifdef SLUICE_HAVE_NCCL
  // On GPUs the gradients are all-reduced in device memory by NCCL, bootstrapped through MPI;
  // rank r takes GPU r % (the GPUs it sees).
  std::unique_ptr<distributed::NcclCommunicator> nccl;
  if (comm != nullptr && config->device.type == DeviceType::kCuda) {
    absl::StatusOr<std::unique_ptr<distributed::NcclCommunicator>> created =
        distributed::NcclCommunicator::Create(
            *comm, {.timeout = absl::Seconds(config->collective_timeout)});
    if (!created.ok()) {
      std::fprintf(stderr, "sluice train: --distributed on %s: %s\n",
                   config->device.DebugString().c_str(),
                   std::string(created.status().message()).c_str());
      if (comm->size() > 1) comm->Abort(kExitFailure);
      return kExitFailure;
    }
    nccl = *std::move(created);
    config->device = Device::Cuda(nccl->device());
    collectives = nccl.get();
  }
#endif
  absl::StatusOr<Outcome> outcome = Train(*config, collectives);
  if (!outcome.ok()) {
    if (comm != nullptr) {
      std::fprintf(stderr, "sluice train: rank %d: %s\n", comm->rank(),
                   std::string(outcome.status().message()).c_str());
      // Peers may wait in a collective for this rank: end the whole job now.
      if (comm->size() > 1) comm->Abort(kExitFailure);
      return kExitFailure;
    }
    std::fprintf(stderr, "sluice train: %s\n", std::string(outcome.status().message()).c_str());
    return kExitFailure;
  }
  if (comm != nullptr && comm->rank() != 0) return kExitOk;  // rank 0 reports for the job
  ReportOutcome(*config, *outcome);
  return kExitOk;
}

}  // namespace sluice::tools
