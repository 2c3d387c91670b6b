// Fit's compiled step (TrainerOptions::run_eagerly = false: traced once, replayed) against the
// eager one: the same kernels on the same values in the same order, so the same variables and
// logs bit for bit, for the zoo's models and every optimizer, on the CPU and on the guarded test
// device (whose memory the host cannot touch).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/train/backend/guarded_backend.h"
#include "tests/train/fit_test_util.h"
#include "tests/train/gradient_check.h"
#include "tests/train/training_comparison.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/transfer.h"
#include "train/fit/trainer.h"
#include "train/models/model_zoo.h"
#include "train/optimizers/adadelta.h"
#include "train/optimizers/adagrad.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamax.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/learning_rate_schedule.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/rmsprop.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::testing {
namespace {

void ExpectSameTraining(layers::Module& eager, const fit::History& eager_history,
                        layers::Module& compiled, const fit::History& compiled_history) {
  ExpectSameVariables(eager, compiled);
  ExpectSameHistory(eager_history, compiled_history);
}

// 44 images of 12x12x1 in 4 classes, batches of 16: two full batches, replayed, and a last one of
// 12, run eagerly.
Dataset Images(uint32_t seed) {
  constexpr int64_t kImages = 44;
  Tensor images = RandomTensor({kImages, 12, 12, 1}, seed);
  std::vector<int64_t> labels(kImages);
  for (int64_t i = 0; i < kImages; ++i) labels[i] = (i * 7 + seed) % 4;
  return Dataset::FromTensorSlices(Element{images, Tensor::FromVector(labels)}).Batch(16);
}

struct Trained {
  std::unique_ptr<layers::Module> model;
  fit::History history;
  int64_t traces = 0;
};

Trained TrainModel(
    const std::string& model_name, optimizers::Optimizer& optimizer, bool eager,
    Device device = Device::Cpu(),
    const std::function<std::vector<callbacks::Callback*>(layers::Module&)>& callbacks = nullptr) {
  Trained t;
  absl::StatusOr<std::unique_ptr<layers::Module>> model =
      models::MakeModel(model_name, {.height = 12, .width = 12, .channels = 1, .classes = 4}, 5);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return t;
  t.model = *std::move(model);
  EXPECT_TRUE(t.model->Build(Shape{1, 12, 12, 1}).ok());
  EXPECT_TRUE(t.model->To(device).ok());
  fit::Trainer trainer(*t.model, optimizer, {.run_eagerly = eager});
  absl::StatusOr<fit::History> h = trainer.Fit(
      Images(3),
      {.epochs = 2,
       .callbacks = callbacks ? callbacks(*t.model) : std::vector<callbacks::Callback*>{},
       .verbose = 0});
  EXPECT_TRUE(h.ok()) << h.status();
  if (h.ok()) t.history = *h;
  return t;
}

TEST(CompiledTrainStepTest, ZooModelsTrainAsEagerly) {
  for (const std::string& name : models::ModelNames()) {
    SCOPED_TRACE(name);
    optimizers::Sgd sgd_a({.learning_rate = 0.05f, .momentum = 0.9f});
    optimizers::Sgd sgd_b({.learning_rate = 0.05f, .momentum = 0.9f});
    Trained eager = TrainModel(name, sgd_a, /*eager=*/true);
    Trained compiled = TrainModel(name, sgd_b, /*eager=*/false);
    ASSERT_TRUE(eager.model && compiled.model);
    ExpectSameTraining(*eager.model, eager.history, *compiled.model, compiled.history);
    // The loss moved: the steps trained something.
    const std::vector<double>& loss = compiled.history.at("loss");
    ASSERT_EQ(loss.size(), 2u);
    EXPECT_NE(loss.front(), loss.back());
  }
}

// The cnn: an optimizer's update is the same per variable whatever the model (the test above
// covers each model's layers, batch norm included); resnet-small took about 3x as long under ASan.
TEST(CompiledTrainStepTest, EveryOptimizerAsEagerly) {
  for (const auto& [name, make] : EveryOptimizer()) {
    SCOPED_TRACE(name);
    std::unique_ptr<optimizers::Optimizer> a = make(), b = make();
    Trained eager = TrainModel("cnn", *a, /*eager=*/true);
    Trained compiled = TrainModel("cnn", *b, /*eager=*/false);
    ASSERT_TRUE(eager.model && compiled.model);
    ExpectSameTraining(*eager.model, eager.history, *compiled.model, compiled.history);
  }
}

// Saves the optimizer's state after the first step and restores it at the end of the first
// epoch: new slot tensors, holding other values than the ones the traces so far update.
class RewindOptimizer : public callbacks::Callback {
 public:
  RewindOptimizer(optimizers::Optimizer& optimizer, layers::Module& model)
      : optimizer_(optimizer), model_(model) {}
  absl::Status OnBatchEnd(int64_t batch, const callbacks::Logs&) override {
    if (saved_) return absl::OkStatus();
    SLUICE_ASSIGN_OR_RETURN(saved_, optimizer_.SaveState(model_.TrainableVariables()));
    return absl::OkStatus();
  }
  absl::Status OnEpochEnd(int64_t epoch, const callbacks::Logs&) override {
    if (epoch != 0) return absl::OkStatus();
    return optimizer_.RestoreState(*saved_, model_.TrainableVariables());
  }

 private:
  optimizers::Optimizer& optimizer_;
  layers::Module& model_;
  std::optional<optimizers::OptimizerState> saved_;
};

// The compiled step traces the optimizer's update too, and the update follows what changes
// between steps as the eager one does: a schedule's rate (halved every 2 steps), AdamW's bias
// corrections and decay with the biases excluded (they read a step tensor of their own), and a
// state restored mid-training (new slot tensors, so the step traces again). Clipping by global
// norm keeps the update out of the trace (its scale is a host value), and gives the eager
// result too.
TEST(CompiledTrainStepTest, TracedUpdatesFollowSchedulesExclusionsAndRestores) {
  auto adamw = [] {
    auto o = std::make_unique<optimizers::AdamW>(optimizers::StepDecay(0.01, 2, 0.5),
                                                 optimizers::AdamWOptions{.weight_decay = 0.1f});
    o->ExcludeFromWeightDecay({"bias"});
    return o;
  };
  std::unique_ptr<optimizers::Optimizer> a = adamw(), b = adamw();
  std::vector<std::unique_ptr<RewindOptimizer>> rewinds;
  auto rewind = [&](optimizers::Optimizer& o) {
    return [&rewinds, &o](layers::Module& model) {
      rewinds.push_back(std::make_unique<RewindOptimizer>(o, model));
      return std::vector<callbacks::Callback*>{rewinds.back().get()};
    };
  };
  Trained eager = TrainModel("cnn", *a, /*eager=*/true, Device::Cpu(), rewind(*a));
  Trained compiled = TrainModel("cnn", *b, /*eager=*/false, Device::Cpu(), rewind(*b));
  ASSERT_TRUE(eager.model && compiled.model);
  ExpectSameTraining(*eager.model, eager.history, *compiled.model, compiled.history);
  // 6 steps, rewound to 1 after the third: 4.
  EXPECT_EQ(a->iterations(), 4);
  EXPECT_EQ(b->iterations(), 4);

  optimizers::Sgd clip_a({.learning_rate = 0.05f, .momentum = 0.9f}),
      clip_b({.learning_rate = 0.05f, .momentum = 0.9f});
  clip_a.set_clip_global_norm(0.5f);
  clip_b.set_clip_global_norm(0.5f);
  EXPECT_FALSE(clip_b.Traceable());
  Trained eager_clip = TrainModel("cnn", clip_a, /*eager=*/true);
  Trained compiled_clip = TrainModel("cnn", clip_b, /*eager=*/false);
  ASSERT_TRUE(eager_clip.model && compiled_clip.model);
  ExpectSameTraining(*eager_clip.model, eager_clip.history, *compiled_clip.model,
                     compiled_clip.history);
}

// A metric of one's own that reads its batch on the host: a compiled Fit refuses it while
// tracing, before any variable changed, and the optimizer's prepared step is taken back.
class HostReadingMetric : public metrics::PredictionMetric {
 public:
  HostReadingMetric() : PredictionMetric("host_read") {}
  absl::Status Update(const Tensor& y_true, const Tensor& y_pred) override {
    // Waits for the device to read y_pred on the host (on the CPU, a no-op eagerly).
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(y_pred.device()));
    SLUICE_RETURN_IF_ERROR(backend->Synchronize());
    Accumulate(static_cast<double>(y_pred.num_elements()), 1);
    return absl::OkStatus();
  }
};

TEST(CompiledTrainStepTest, ARefusedTraceLeavesTheModelAndOptimizerAsTheyWere) {
  absl::StatusOr<std::unique_ptr<layers::Module>> model =
      models::MakeModel("mlp", {.height = 12, .width = 12, .channels = 1, .classes = 4}, 5);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->Build(Shape{1, 12, 12, 1}).ok());
  std::vector<Tensor> before;
  for (autodiff::Variable* v : (*model)->Variables()) before.push_back(v->value().Clone());
  auto train = [&](optimizers::Optimizer& optimizer, bool eager) {
    fit::Trainer trainer(**model, optimizer,
                         {.metrics = std::vector<fit::MetricSpec>{fit::MetricSpec(
                              "host_read", [] { return std::make_unique<HostReadingMetric>(); })},
                          .run_eagerly = eager});
    return trainer.Fit(Images(3), {.epochs = 1, .verbose = 0});
  };
  optimizers::Nadam nadam;
  absl::StatusOr<fit::History> h = train(nadam, /*eager=*/false);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("cannot trace this step"), std::string::npos) << h.status();
  EXPECT_EQ(nadam.iterations(), 0);
  EXPECT_EQ(nadam.u_product(), 1.0);
  std::vector<autodiff::Variable*> after = (*model)->Variables();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(after[i]->value().Equals(before[i])) << after[i]->name();
  }
  // Eagerly the same metric works.
  optimizers::Nadam eager_nadam;
  absl::StatusOr<fit::History> eager_history = train(eager_nadam, /*eager=*/true);
  ASSERT_TRUE(eager_history.ok()) << eager_history.status();
  EXPECT_EQ(eager_nadam.iterations(), 3);
}

// Under mixed_bfloat16 the trace records the casts and the bfloat16 kernels as the eager step
// runs them: the same training bit for bit. Skipped, visibly, on a CPU without bfloat16.
TEST(CompiledTrainStepTest, MixedBFloat16AsEagerly) {
  if (absl::Status s =
          backend::CheckPrecisionSupported(Device::Cpu(), backend::Precision::kMixedBFloat16);
      !s.ok()) {
    GTEST_SKIP() << s;
  }
  for (const std::string name : {"cnn", "resnet-20"}) {
    SCOPED_TRACE(name);
    Trained runs[2];
    for (int eager = 0; eager < 2; ++eager) {
      absl::StatusOr<std::unique_ptr<layers::Module>> model =
          models::MakeModel(name, {.height = 12, .width = 12, .channels = 1, .classes = 4}, 5);
      ASSERT_TRUE(model.ok()) << model.status();
      runs[eager].model = *std::move(model);
      ASSERT_TRUE(runs[eager].model->Build(Shape{1, 12, 12, 1}).ok());
      optimizers::Sgd sgd({.learning_rate = 0.05f, .momentum = 0.9f});
      fit::Trainer trainer(
          *runs[eager].model, sgd,
          {.precision = backend::Precision::kMixedBFloat16, .run_eagerly = eager == 1});
      absl::StatusOr<fit::History> h = trainer.Fit(Images(3), {.epochs = 2, .verbose = 0});
      ASSERT_TRUE(h.ok()) << h.status();
      runs[eager].history = *h;
    }
    ExpectSameTraining(*runs[1].model, runs[1].history, *runs[0].model, runs[0].history);
  }
}

// On the guarded device a replay runs the kernels there too, as device graphs, and nothing in the
// plan touches device memory from the host (a host touch crashes this test).
TEST(CompiledTrainStepTest, GuardedDeviceReplaysAsCpuEager) {
  RegisterGuardedBackend();
  for (const std::string name : {"cnn", "resnet-20"}) {
    SCOPED_TRACE(name);
    optimizers::Adam adam_a, adam_b;
    Trained eager = TrainModel(name, adam_a, /*eager=*/true);
    const int64_t kernels_before = GuardedKernelCalls();
    const int64_t captured = GuardedGraphsCaptured(), launches = GuardedGraphLaunches();
    Trained compiled = TrainModel(name, adam_b, /*eager=*/false, Device::Guarded());
    EXPECT_GT(GuardedKernelCalls() - kernels_before, 100);
    // The guarded device captures graphs as CUDA does: the replays launched them.
    EXPECT_GT(GuardedGraphsCaptured() - captured, 0);
    EXPECT_GT(GuardedGraphLaunches() - launches, GuardedGraphsCaptured() - captured);
    ASSERT_TRUE(eager.model && compiled.model);
    ExpectSameTraining(*eager.model, eager.history, *compiled.model, compiled.history);
  }
}

// A bad label in a replayed step is still found (the check keeps a copy of each replay's
// count), naming its step.
TEST(CompiledTrainStepTest, BadLabelsInReplayedStepsAreFound) {
  Tensor images = RandomTensor({48, 12, 12, 1}, 2);
  std::vector<int64_t> labels(48, 1);
  labels[40] = 9;  // the third batch, a replay
  auto model = models::MakeModel("mlp", {.height = 12, .width = 12, .channels = 1, .classes = 4});
  ASSERT_TRUE(model.ok());
  optimizers::Sgd sgd;
  fit::Trainer trainer(**model, sgd, {.run_eagerly = false});
  absl::StatusOr<fit::History> h =
      trainer.Fit(Dataset::FromTensorSlices(Element{images, Tensor::FromVector(labels)}).Batch(16),
                  {.epochs = 1, .verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("step 3"), std::string::npos) << h.status();
  EXPECT_NE(h.status().message().find("9"), std::string::npos) << h.status();
}

}  // namespace
}  // namespace sluice::train::testing
