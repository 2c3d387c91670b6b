// The whole training loop on the guarded test device (tests/train/backend/guarded_backend.h),
// whose memory the host cannot touch: any code above the Backend interface that reads device
// memory itself crashes these tests. Each test runs the same training on the CPU and on the
// guarded device and wants the same numbers bit for bit: the guarded backend runs the CPU
// kernels, so any difference is a host-side path that the device run skipped or changed.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/train/backend/guarded_backend.h"
#include "tests/train/fit_test_util.h"
#include "tests/train/training_comparison.h"
#include "train/backend/compute_precision.h"
#include "train/backend/transfer.h"
#include "train/callbacks/early_stopping.h"
#include "train/callbacks/model_checkpoint.h"
#include "train/callbacks/reduce_lr_on_plateau.h"
#include "train/callbacks/tensorboard.h"
#include "train/fit/trainer.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/depthwise_conv2d.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/relu.h"
#include "train/layers/reshape.h"
#include "train/layers/sequential.h"
#include "train/layers/zero_padding2d.h"
#include "train/models/model_zoo.h"
#include "train/optimizers/adadelta.h"
#include "train/optimizers/adagrad.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamax.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/rmsprop.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::testing {
namespace {

class GuardedTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The pipeline's and oneTBB's threads are running: re-exec rather than fork.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    RegisterGuardedBackend();
  }

  void TearDown() override {
    std::error_code ignored;
    for (const std::string& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }

  // A fresh temporary directory, removed after the test.
  std::string TempDir(const std::string& name) {
    std::string dir = ::testing::TempDir() + "/guarded_" + name + "_" +
                      std::to_string(reinterpret_cast<uintptr_t>(this));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    dirs_.push_back(dir);
    return dir;
  }

 private:
  std::vector<std::string> dirs_;
};

TEST_F(GuardedTrainingTest, GuardedModuleToMovesVariablesOffTheHost) {
  auto model = TinyModel(1);
  const int64_t before = GuardedLiveAllocations();
  ASSERT_TRUE(model->To(Device::Guarded()).ok());
  EXPECT_TRUE(model->device() == Device::Guarded());
  for (autodiff::Variable* v : model->Variables()) {
    EXPECT_TRUE(v->device() == Device::Guarded()) << v->name();
  }
  EXPECT_EQ(GuardedLiveAllocations() - before, 4);  // two kernels, two biases
  // A host read of a variable now dies where it happens.
  const float* p = model->Variables()[0]->mutable_value().data<float>();
  EXPECT_DEATH({ std::printf("%f\n", static_cast<double>(p[0])); }, "");
}

// Fit with a shuffled, prefetched pipeline, validation, the progress bar and every callback,
// clipping by global norm and a momentum optimizer; then Evaluate and Predict.
TEST_F(GuardedTrainingTest, GuardedFitEvaluatePredictMatchCpu) {
  struct Run {
    fit::History history;
    callbacks::Logs eval;
    Tensor predictions;
    std::unique_ptr<layers::Sequential> model;
  };
  auto train_once = [&](Device device) -> Run {
    Run run;
    run.model = TinyModel(7);
    EXPECT_TRUE(run.model->To(device).ok());
    optimizers::Sgd sgd({.learning_rate = 0.1f, .momentum = 0.9f, .nesterov = true});
    sgd.set_clip_global_norm(1.0f);
    fit::Trainer trainer(*run.model, sgd, {.top_k = 2});
    const std::string dir = TempDir(device.DebugString());
    callbacks::EarlyStopping early(
        {.monitor = "val_loss", .patience = 5, .restore_best_weights = true});
    callbacks::ModelCheckpoint checkpoint({.path = dir + "/ckpt-{epoch}", .save_freq = 3});
    callbacks::ReduceLROnPlateau plateau({.monitor = "loss", .factor = 0.5, .patience = 1});
    callbacks::TensorBoard tensorboard({.log_dir = dir + "/tb", .update_freq = 2});
    RecordingCallback recorder;
    std::FILE* progress = std::tmpfile();
    Dataset train =
        Dataset::FromTensorSlices(Blobs(96, 3)).Shuffle(32, {.seed = 5}).Batch(16).Prefetch(2);
    absl::StatusOr<fit::History> history =
        trainer.Fit(train, {.epochs = 4,
                            .validation_data = BlobsDataset(48, 4, 16),
                            .callbacks = {&early, &checkpoint, &plateau, &tensorboard, &recorder},
                            .seed = 11,
                            .verbose = 1,
                            .progress_stream = progress});
    std::fclose(progress);
    EXPECT_TRUE(history.ok()) << history.status();
    if (history.ok()) run.history = *history;
    EXPECT_FALSE(recorder.batch_losses.empty());
    absl::StatusOr<callbacks::Logs> eval = trainer.Evaluate(BlobsDataset(48, 9, 16));
    EXPECT_TRUE(eval.ok()) << eval.status();
    if (eval.ok()) run.eval = *eval;
    absl::StatusOr<Tensor> predictions =
        trainer.Predict(Dataset::FromTensorSlices(Element{Blobs(20, 9)[0]}).Batch(8));
    EXPECT_TRUE(predictions.ok()) << predictions.status();
    if (predictions.ok()) run.predictions = *predictions;
    return run;
  };
  Run cpu = train_once(Device::Cpu());
  const int64_t kernels_before = GuardedKernelCalls();
  const int64_t copies_before = GuardedAsyncCopies();
  Run guarded = train_once(Device::Guarded());
  EXPECT_GT(GuardedKernelCalls() - kernels_before, 1000);  // the work really ran there
  // Fit's 4 x 6 batches of images and labels crossed on the copy thread (PrefetchToDevice),
  // and so did the validation, Evaluate and Predict batches.
  EXPECT_GE(GuardedAsyncCopies() - copies_before, 4 * 6 * 2 + 4 * 3 * 2 + 3 * 2 + 3);
  ExpectSameHistory(cpu.history, guarded.history);
  EXPECT_EQ(cpu.eval, guarded.eval);
  EXPECT_TRUE(guarded.predictions.device().is_cpu());
  EXPECT_TRUE(cpu.predictions.Equals(guarded.predictions))
      << cpu.predictions.DebugString(6) << " vs " << guarded.predictions.DebugString(6);
  ExpectSameVariables(*cpu.model, *guarded.model);
}

// Each optimizer, with gradient accumulation, on both devices.
TEST_F(GuardedTrainingTest, GuardedOptimizersAndAccumulationMatchCpu) {
  for (const auto& [name, make] : EveryOptimizer()) {
    SCOPED_TRACE(name);
    fit::History histories[2];
    std::unique_ptr<layers::Sequential> models[2];
    const Device devices[2] = {Device::Cpu(), Device::Guarded()};
    for (int d = 0; d < 2; ++d) {
      models[d] = TinyModel(3);
      ASSERT_TRUE(models[d]->To(devices[d]).ok());
      std::unique_ptr<optimizers::Optimizer> opt = make();
      fit::Trainer trainer(*models[d], *opt);
      absl::StatusOr<fit::History> h =
          trainer.Fit(BlobsDataset(64, 5, 8), {.epochs = 2, .accumulation_steps = 2, .verbose = 0});
      ASSERT_TRUE(h.ok()) << h.status();
      histories[d] = *h;
    }
    ExpectSameHistory(histories[0], histories[1]);
    ExpectSameVariables(*models[0], *models[1]);
  }
}

// The layers functional graphs need (Reshape, ZeroPadding2D, DepthwiseConv2D and grouped Conv2D,
// ReLU with its options, GlobalMaxPool) train on the device exactly as on the CPU.
TEST_F(GuardedTrainingTest, GuardedFunctionalGraphLayersMatchCpu) {
  auto make = [] {
    auto model = std::make_unique<layers::Sequential>();
    model->Add(std::make_unique<layers::Reshape>(std::vector<int64_t>{2, 2, 1}));
    model->Add(std::make_unique<layers::ZeroPadding2D>(std::pair<int64_t, int64_t>{1, 2},
                                                       std::pair<int64_t, int64_t>{2, 1}));
    model->Add(std::make_unique<layers::Conv2D>(4, layers::KernelSize(3),
                                                layers::Conv2DLayerOptions{.seed = 1}));
    model->Add(std::make_unique<layers::DepthwiseConv2D>(
        layers::KernelSize(3),
        layers::DepthwiseConv2DOptions{
            .padding = ops::Padding::kSame, .depth_multiplier = 2, .seed = 2}));
    model->Add(std::make_unique<layers::ReLU>(layers::ReLUOptions{.max_value = 6}));
    model->Add(std::make_unique<layers::Conv2D>(
        6, layers::KernelSize(1), layers::Conv2DLayerOptions{.conv = {.groups = 2}, .seed = 3}));
    model->Add(std::make_unique<layers::ReLU>(
        layers::ReLUOptions{.negative_slope = 0.1f, .threshold = 0.05f}));
    model->Add(std::make_unique<layers::GlobalMaxPool>());
    model->Add(std::make_unique<layers::Dense>(3, layers::Activation::kLinear,
                                               layers::DenseOptions{.seed = 4}));
    return model;
  };
  fit::History histories[2];
  std::unique_ptr<layers::Sequential> models[2];
  const Device devices[2] = {Device::Cpu(), Device::Guarded()};
  for (int d = 0; d < 2; ++d) {
    models[d] = make();
    ASSERT_TRUE(models[d]->Build(Shape{1, kFeatures}).ok());
    ASSERT_TRUE(models[d]->To(devices[d]).ok());
    optimizers::Nadam nadam(0.01f);
    fit::Trainer trainer(*models[d], nadam);
    absl::StatusOr<fit::History> h =
        trainer.Fit(BlobsDataset(64, 5, 8), {.epochs = 3, .verbose = 0});
    ASSERT_TRUE(h.ok()) << h.status();
    histories[d] = *h;
  }
  ExpectSameHistory(histories[0], histories[1]);
  ExpectSameVariables(*models[0], *models[1]);
  EXPECT_LT(histories[0].at("loss").back(), histories[0].at("loss").front());
}

// A checkpoint saved mid-epoch on the device resumes exactly, on a fresh model on the device.
TEST_F(GuardedTrainingTest, GuardedCheckpointResumesExactly) {
  const std::string dir = TempDir("resume");
  Dataset train = Dataset::FromTensorSlices(Blobs(96, 3)).Shuffle(96, {.seed = 2}).Batch(16);
  auto make_model = [] {
    auto m = TinyModel(5);
    m->Add(std::make_unique<layers::Dropout>(0.25f, 9));
    return m;
  };
  // Uninterrupted, on the device.
  auto straight = make_model();
  ASSERT_TRUE(straight->To(Device::Guarded()).ok());
  optimizers::Adam adam1;
  fit::Trainer t1(*straight, adam1);
  absl::StatusOr<fit::History> full = t1.Fit(train, {.epochs = 2, .seed = 4, .verbose = 0});
  ASSERT_TRUE(full.ok()) << full.status();

  // Stopped after 8 steps (mid-epoch 2), saved, resumed on a fresh model.
  auto first = make_model();
  ASSERT_TRUE(first->To(Device::Guarded()).ok());
  optimizers::Adam adam2;
  fit::Trainer t2(*first, adam2);
  RecordingCallback stopper;
  stopper.on_batch_end = [&](int64_t, const callbacks::Logs&) -> absl::Status {
    if (t2.global_step() == 8) {
      SLUICE_RETURN_IF_ERROR(t2.SaveCheckpoint(dir + "/mid.ckpt"));
      t2.StopTraining();
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(t2.Fit(train, {.epochs = 2, .callbacks = {&stopper}, .seed = 4, .verbose = 0}).ok());

  auto resumed = make_model();
  ASSERT_TRUE(resumed->To(Device::Guarded()).ok());
  optimizers::Adam adam3;
  fit::Trainer t3(*resumed, adam3);
  ASSERT_TRUE(t3.LoadCheckpoint(dir + "/mid.ckpt").ok());
  absl::StatusOr<fit::History> rest = t3.Fit(train, {.epochs = 2, .seed = 4, .verbose = 0});
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->at("loss").back(), full->at("loss").back());
  EXPECT_EQ(rest->at("accuracy").back(), full->at("accuracy").back());
  ExpectSameVariables(*straight, *resumed);
}

// A pass of unknown length: Fit holds the next pass's first batch back, already on the device
// (prefetched), when the epoch ends; a checkpoint then saves a host copy of it and resumes.
TEST_F(GuardedTrainingTest, GuardedCheckpointWithAHeldBackBatchResumesExactly) {
  const std::string dir = TempDir("held_back");
  // Filter hides the cardinality, so the epoch ends when the next pass's index 0 arrives.
  Dataset train = Dataset::FromTensorSlices(Blobs(64, 3))
                      .Filter([](const Element&) -> absl::StatusOr<bool> { return true; })
                      .Batch(16);
  auto run = [&](layers::Module& model, optimizers::Optimizer& opt,
                 std::vector<callbacks::Callback*> cbs) {
    fit::Trainer trainer(model, opt);
    return trainer.Fit(train, {.epochs = 3, .callbacks = std::move(cbs), .seed = 4, .verbose = 0});
  };
  auto straight = TinyModel(5);
  ASSERT_TRUE(straight->To(Device::Guarded()).ok());
  optimizers::Adam adam1;
  absl::StatusOr<fit::History> full = run(*straight, adam1, {});
  ASSERT_TRUE(full.ok()) << full.status();

  auto first = TinyModel(5);
  ASSERT_TRUE(first->To(Device::Guarded()).ok());
  optimizers::Adam adam2;
  fit::Trainer t2(*first, adam2);
  RecordingCallback stopper;
  stopper.on_epoch_end = [&](int64_t epoch, const callbacks::Logs&) -> absl::Status {
    if (epoch == 0) {
      SLUICE_RETURN_IF_ERROR(t2.SaveCheckpoint(dir + "/epoch1.ckpt"));
      t2.StopTraining();
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(t2.Fit(train, {.epochs = 3, .callbacks = {&stopper}, .seed = 4, .verbose = 0}).ok());

  auto resumed = TinyModel(5);
  ASSERT_TRUE(resumed->To(Device::Guarded()).ok());
  optimizers::Adam adam3;
  fit::Trainer t3(*resumed, adam3);
  ASSERT_TRUE(t3.LoadCheckpoint(dir + "/epoch1.ckpt").ok());
  absl::StatusOr<fit::History> rest = t3.Fit(train, {.epochs = 3, .seed = 4, .verbose = 0});
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->at("loss").back(), full->at("loss").back());
  ExpectSameVariables(*straight, *resumed);
}

// Fit waits for the device only when something reads from it: with no callback that reads batch
// logs and no progress bar on a terminal, an epoch reads its metrics and one sum of its label
// checks back once, at its end, not after each step.
TEST_F(GuardedTrainingTest, GuardedFitReadsBackOncePerEpochUnlessBatchLogsAreRead) {
  auto reads_during_fit = [](std::vector<callbacks::Callback*> cbs) -> int64_t {
    auto model = TinyModel(4);
    EXPECT_TRUE(model->To(Device::Guarded()).ok());
    optimizers::Sgd sgd;
    fit::Trainer trainer(*model, sgd);
    const int64_t before = GuardedHostReads();
    // 3 epochs of 6 steps; a log file, not a terminal: the bar prints one line per epoch.
    std::FILE* progress = std::tmpfile();
    absl::StatusOr<fit::History> h = trainer.Fit(
        BlobsDataset(96, 3, 16),
        {.epochs = 3, .callbacks = std::move(cbs), .verbose = 1, .progress_stream = progress});
    std::fclose(progress);
    EXPECT_TRUE(h.ok()) << h.status();
    return GuardedHostReads() - before;
  };
  // Per epoch: the label checks' sum, the loss and the accuracy.
  EXPECT_EQ(reads_during_fit({}), 3 * 3);
  callbacks::EarlyStopping early({.monitor = "loss", .patience = 10});
  EXPECT_EQ(reads_during_fit({&early}), 3 * 3);
  // A callback that reads every step's logs gets them: three reads per step, and the epoch's
  // metrics once more at its end.
  RecordingCallback recorder;
  EXPECT_EQ(reads_during_fit({&recorder}), 3 * (6 * 3 + 2));
  EXPECT_EQ(recorder.batch_losses.size(), 18u);
}

// Fit queues at most two steps ahead of the device: after each step it records the device's
// event and waits for the one two steps back, so a device-bound loop waits there (as device
// time) and not in its input. 3 epochs of 6 steps: 18 events, 3 * (6 - 2) waits (an epoch's end
// reads the metrics, which waits for everything).
TEST_F(GuardedTrainingTest, GuardedFitRunsAtMostTwoStepsAheadOfTheDevice) {
  auto model = TinyModel(4);
  ASSERT_TRUE(model->To(Device::Guarded()).ok());
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  const int64_t recorded = GuardedRecordedEvents(), waits = GuardedEventWaits();
  absl::StatusOr<fit::History> h =
      trainer.Fit(BlobsDataset(96, 3, 16), {.epochs = 3, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(GuardedRecordedEvents() - recorded, 18);
  EXPECT_EQ(GuardedEventWaits() - waits, 3 * 4);
}

// mixed_bfloat16: the policy reaches every matmul of Fit, Evaluate and Predict (the history
// differs from float32's), the model still learns, and the guarded device, which runs the CPU's
// kernels, gives the CPU's bf16 results bit for bit. mixed_float16 is refused on the CPU.
TEST_F(GuardedTrainingTest, GuardedMixedBFloat16MatchesCpu) {
  auto train = [](Device device, backend::Precision precision) -> absl::StatusOr<fit::History> {
    auto model = TinyModel(6);
    SLUICE_RETURN_IF_ERROR(model->To(device));
    optimizers::Sgd sgd({.learning_rate = 0.1f, .momentum = 0.9f});
    fit::Trainer trainer(*model, sgd, {.precision = precision});
    return trainer.Fit(BlobsDataset(96, 3, 16),
                       {.epochs = 4, .validation_data = BlobsDataset(48, 4, 16), .verbose = 0});
  };
  absl::StatusOr<fit::History> f16 = train(Device::Cpu(), backend::Precision::kMixedFloat16);
  EXPECT_EQ(f16.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(f16.status().message().find("Fit: mixed_float16"), std::string::npos) << f16.status();
  if (absl::Status s =
          backend::CheckPrecisionSupported(Device::Cpu(), backend::Precision::kMixedBFloat16);
      !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  absl::StatusOr<fit::History> f32 = train(Device::Cpu(), backend::Precision::kFloat32);
  absl::StatusOr<fit::History> cpu = train(Device::Cpu(), backend::Precision::kMixedBFloat16);
  absl::StatusOr<fit::History> guarded =
      train(Device::Guarded(), backend::Precision::kMixedBFloat16);
  ASSERT_TRUE(f32.ok() && cpu.ok() && guarded.ok()) << cpu.status() << guarded.status();
  ExpectSameHistory(*cpu, *guarded);
  EXPECT_NE(cpu->at("loss"), f32->at("loss"));
  EXPECT_GT(cpu->at("val_accuracy").back(), 0.9);
  EXPECT_NEAR(cpu->at("val_accuracy").back(), f32->at("val_accuracy").back(), 0.05);
}

// Dynamic loss scaling runs on the device too (the scale is copied there, the gradients are
// unscaled there, and one number comes back per step), with the CPU's results.
TEST_F(GuardedTrainingTest, GuardedLossScalingMatchesCpu) {
  fit::History histories[2];
  std::unique_ptr<layers::Sequential> models[2];
  const Device devices[2] = {Device::Cpu(), Device::Guarded()};
  for (int d = 0; d < 2; ++d) {
    models[d] = TinyModel(9);
    ASSERT_TRUE(models[d]->To(devices[d]).ok());
    optimizers::Adam adam;
    fit::Trainer trainer(*models[d], adam,
                         {.loss_scale = optimizers::DynamicLossScaleOptions{.growth_steps = 4}});
    absl::StatusOr<fit::History> h =
        trainer.Fit(BlobsDataset(64, 5, 8), {.epochs = 2, .verbose = 0});
    ASSERT_TRUE(h.ok()) << h.status();
    histories[d] = *h;
  }
  ExpectSameHistory(histories[0], histories[1]);
  ExpectSameVariables(*models[0], *models[1]);
  EXPECT_EQ(histories[1].at("loss_scale").back(), 32768.0 * 16);  // 16 clean steps: 4 doublings
}

// Every model of the zoo trains for a few steps on both devices with the same results.
TEST_F(GuardedTrainingTest, GuardedModelZooMatchesCpu) {
  const models::ModelShape shape{.height = 12, .width = 12, .channels = 3, .classes = 4};
  std::vector<int64_t> labels(24);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 4);
  const Element data{RandomTensor({24, 12, 12, 3}, 17), Tensor::FromVector(labels)};
  for (const std::string& name : models::ModelNames()) {
    SCOPED_TRACE(name);
    fit::History histories[2];
    std::unique_ptr<layers::Module> trained[2];
    const Device devices[2] = {Device::Cpu(), Device::Guarded()};
    for (int d = 0; d < 2; ++d) {
      absl::StatusOr<std::unique_ptr<layers::Module>> model = models::MakeModel(name, shape, 3);
      ASSERT_TRUE(model.ok()) << model.status();
      trained[d] = *std::move(model);
      ASSERT_TRUE(trained[d]->To(devices[d]).ok());
      optimizers::Adam adam;
      fit::Trainer trainer(*trained[d], adam);
      absl::StatusOr<fit::History> h =
          trainer.Fit(Dataset::FromTensorSlices(data).Batch(8),
                      {.epochs = 2,
                       .validation_data = Dataset::FromTensorSlices(data).Batch(12),
                       .verbose = 0});
      ASSERT_TRUE(h.ok()) << h.status();
      histories[d] = *h;
    }
    ExpectSameHistory(histories[0], histories[1]);
    ExpectSameVariables(*trained[0], *trained[1]);
  }
}

// A bad label is found on the device and reported with its step, as on the CPU.
TEST_F(GuardedTrainingTest, GuardedBadLabelIsReportedWithItsStep) {
  Element data = Blobs(32, 1);
  std::vector<int64_t> labels(32, 1);
  labels[21] = 7;
  data[1] = Tensor::FromVector(labels);
  for (Device device : {Device::Cpu(), Device::Guarded()}) {
    SCOPED_TRACE(device.DebugString());
    auto model = TinyModel(2);
    ASSERT_TRUE(model->To(device).ok());
    optimizers::Sgd sgd;
    fit::Trainer trainer(*model, sgd);
    absl::StatusOr<fit::History> h =
        trainer.Fit(Dataset::FromTensorSlices(data).Batch(8), {.verbose = 0});
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find("epoch 1, step 3"), std::string::npos) << h.status();
    EXPECT_NE(h.status().message().find("label 7 at index 5 is outside [0, 3)"), std::string::npos)
        << h.status();
    absl::StatusOr<callbacks::Logs> eval =
        trainer.Evaluate(Dataset::FromTensorSlices(data).Batch(8));
    ASSERT_FALSE(eval.ok());
    EXPECT_NE(eval.status().message().find("batch 3"), std::string::npos) << eval.status();
  }
}

}  // namespace
}  // namespace sluice::train::testing
