// Trainer (train/trainer.h): Fit learns a separable problem, Evaluate and Predict agree, a
// checkpointed run resumes exactly, gradient accumulation equals a bigger batch.
#include "train/fit/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/train/fit_test_util.h"
#include "train/callbacks/model_checkpoint.h"
#include "train/fit/training_checkpoint.h"
#include "train/optimizers/adadelta.h"
#include "train/optimizers/adagrad.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamax.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/rmsprop.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::fit {
namespace {

using ::sluice::train::testing::Blobs;
using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::RecordingCallback;
using ::sluice::train::testing::TinyModel;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/trainer_test_" + name + "_" + std::to_string(getpid());
}

std::vector<std::vector<float>> VariableValues(layers::Module& model) {
  std::vector<std::vector<float>> out;
  for (autodiff::Variable* v : model.Variables()) out.push_back(testing::Values(v->value()));
  return out;
}

TEST(TrainerTest, FitLearnsASeparableProblem) {
  auto model = TinyModel(1);
  optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.02f});
  Trainer trainer(*model, adam, {.top_k = 2});
  absl::StatusOr<History> h = trainer.Fit(BlobsDataset(384, 7, 32), {.epochs = 8, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(h->epochs, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  for (const char* key : {"loss", "accuracy", "top_2_accuracy", "learning_rate", "input_wait_share",
                          "images_per_second"}) {
    ASSERT_EQ(h->history.count(key), 1u) << key;
    EXPECT_EQ(h->at(key).size(), 8u) << key;
  }
  EXPECT_LT(h->at("loss").back(), h->at("loss").front() / 4);
  EXPECT_GE(h->at("accuracy").back(), 0.97);
  EXPECT_EQ(h->at("learning_rate").back(), 0.02f);
  EXPECT_GE(h->at("top_2_accuracy").back(), h->at("accuracy").back());
  EXPECT_EQ(trainer.global_step(), 8 * 12);
  EXPECT_EQ(adam.iterations(), 8 * 12);
  // Unseen points from the same distribution.
  absl::StatusOr<callbacks::Logs> eval = trainer.Evaluate(BlobsDataset(300, 99, 50));
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_GE(eval->at("accuracy"), 0.97);
  EXPECT_LT(eval->at("loss"), 0.2);
}

TEST(TrainerTest, EvaluateAndPredictAgree) {
  auto model = TinyModel(2);
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 0.1f});
  Trainer trainer(*model, sgd);
  ASSERT_TRUE(trainer.Fit(BlobsDataset(96, 3, 16), {.epochs = 2, .verbose = 0}).ok());

  const Element test = Blobs(70, 5);
  const Dataset ds = Dataset::FromTensorSlices(test).Batch(32);  // a last partial batch of 6
  absl::StatusOr<callbacks::Logs> eval = trainer.Evaluate(ds);
  ASSERT_TRUE(eval.ok()) << eval.status();
  absl::StatusOr<Tensor> logits = trainer.Predict(ds);
  ASSERT_TRUE(logits.ok()) << logits.status();
  ASSERT_EQ(logits->shape(), Shape({70, 3}));
  // Accuracy and mean cross-entropy by hand from the predicted logits.
  const float* z = logits->data<float>();
  const int64_t* y = test[1].data<int64_t>();
  int correct = 0;
  double loss = 0;
  for (int i = 0; i < 70; ++i) {
    const float* row = z + i * 3;
    const int arg = static_cast<int>(std::max_element(row, row + 3) - row);
    correct += arg == y[i];
    const double m = *std::max_element(row, row + 3);
    double sum = 0;
    for (int j = 0; j < 3; ++j) sum += std::exp(row[j] - m);
    loss += m + std::log(sum) - row[y[i]];
  }
  EXPECT_DOUBLE_EQ(eval->at("accuracy"), correct / 70.0);
  EXPECT_NEAR(eval->at("loss"), loss / 70, 1e-5);
  // Predict takes images alone, too. Batched as before: oneDNN's matrix products may sum in
  // another order for another batch size (an AVX2 EPYC's did for 64 against 32), so only the
  // same batches give the same bits.
  absl::StatusOr<Tensor> again =
      trainer.Predict(Dataset::FromTensorSlices(Element{test[0]}).Batch(32));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->Equals(*logits));
}

TEST(TrainerTest, ValidationMetricsAreEvaluatesAtEpochEnd) {
  auto model = TinyModel(3);
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 0.1f});
  Trainer trainer(*model, sgd);
  const Dataset val = BlobsDataset(60, 11, 20);
  absl::StatusOr<History> h =
      trainer.Fit(BlobsDataset(96, 3, 16), {.epochs = 2, .validation_data = val, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->at("val_loss").size(), 2u);
  absl::StatusOr<callbacks::Logs> eval = trainer.Evaluate(val);
  EXPECT_EQ(h->at("val_loss").back(), eval->at("loss"));
  EXPECT_EQ(h->at("val_accuracy").back(), eval->at("accuracy"));
  EXPECT_NE(h->at("val_loss").front(), h->at("val_loss").back());
}

TEST(TrainerTest, CallbacksSeeEveryStepInOrder) {
  auto model = TinyModel(4);
  optimizers::Sgd sgd;
  Trainer trainer(*model, sgd);
  RecordingCallback rec;
  ASSERT_TRUE(
      trainer.Fit(BlobsDataset(20, 3, 10), {.epochs = 2, .callbacks = {&rec}, .verbose = 0}).ok());
  EXPECT_THAT(rec.events,
              ElementsAre("train_begin", "epoch_begin 0", "batch 0", "batch 1", "epoch_end 0",
                          "epoch_begin 1", "batch 0", "batch 1", "epoch_end 1", "train_end"));
  EXPECT_EQ(rec.trainer(), &trainer);
  // Batch logs hold the epoch's running mean: the epoch's last one is the epoch's loss.
  EXPECT_EQ(rec.batch_logs[1].at("loss"), rec.epoch_logs[0].at("loss"));
  EXPECT_EQ(rec.batch_logs[1].count("learning_rate"), 1u);
}

TEST(TrainerTest, StepsPerEpochReadsOnAcrossEpochs) {
  auto model = TinyModel(5);
  optimizers::Sgd sgd;
  Trainer trainer(*model, sgd);
  RecordingCallback rec;
  // 3 batches per pass, 2 steps per epoch: epoch 1 takes the pass's last batch, then the next
  // pass's first.
  ASSERT_TRUE(trainer
                  .Fit(BlobsDataset(30, 3, 10),
                       {.epochs = 3, .steps_per_epoch = 2, .callbacks = {&rec}, .verbose = 0})
                  .ok());
  EXPECT_EQ(trainer.global_step(), 6);
  int batches = 0;
  for (const std::string& e : rec.events) batches += e.starts_with("batch");
  EXPECT_EQ(batches, 6);
}

TEST(TrainerTest, UnknownCardinalityEpochIsOnePass) {
  auto model = TinyModel(6);
  optimizers::Sgd sgd;
  Trainer trainer(*model, sgd);
  RecordingCallback rec;
  // Filter hides the cardinality; the pass boundary is found from the element counter.
  Dataset ds = Dataset::FromTensorSlices(Blobs(50, 3))
                   .Filter([](const Element&) -> absl::StatusOr<bool> { return true; })
                   .Batch(10);
  ASSERT_EQ(ds.Cardinality(), kUnknownCardinality);
  ASSERT_TRUE(trainer.Fit(ds, {.epochs = 3, .callbacks = {&rec}, .verbose = 0}).ok());
  EXPECT_EQ(trainer.global_step(), 15);
  EXPECT_EQ(rec.epoch_logs.size(), 3u);
}

TEST(TrainerTest, GradientAccumulationEqualsTheBiggerBatch) {
  // The mean of two 16-example mean gradients is the 32-example mean gradient: plain SGD steps
  // agree (up to rounding).
  auto a = TinyModel(7);
  auto b = TinyModel(7);
  optimizers::Sgd sgd_a(optimizers::SgdOptions{.learning_rate = 0.1f});
  optimizers::Sgd sgd_b(optimizers::SgdOptions{.learning_rate = 0.1f});
  Trainer ta(*a, sgd_a);
  Trainer tb(*b, sgd_b);
  ASSERT_TRUE(
      ta.Fit(BlobsDataset(128, 3, 16), {.epochs = 2, .accumulation_steps = 2, .verbose = 0}).ok());
  ASSERT_TRUE(tb.Fit(BlobsDataset(128, 3, 32), {.epochs = 2, .verbose = 0}).ok());
  EXPECT_EQ(sgd_a.iterations(), 8);  // 16 micro-batches
  EXPECT_EQ(sgd_b.iterations(), 8);
  const auto va = VariableValues(*a);
  const auto vb = VariableValues(*b);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    for (size_t j = 0; j < va[i].size(); ++j) EXPECT_NEAR(va[i][j], vb[i][j], 1e-5) << i;
  }
  // Not fooled by one model doing nothing: training moved the weights.
  EXPECT_NE(va, VariableValues(*TinyModel(7)));
}

// A checkpoint inside an accumulation keeps the micro-batches' partial sums (it was refused
// before); BackupAndRestoreTest resumes such runs exactly.
TEST(TrainerTest, CheckpointInsideAnAccumulationKeepsItsPartialSums) {
  auto model = TinyModel(8);
  optimizers::Sgd sgd;
  Trainer trainer(*model, sgd);
  RecordingCallback rec;
  const std::string path = TempPath("accumulating");
  rec.on_batch_end = [&](int64_t batch, const callbacks::Logs&) -> absl::Status {
    return batch == 0 ? trainer.SaveCheckpoint(path) : absl::OkStatus();
  };
  absl::StatusOr<History> h =
      trainer.Fit(BlobsDataset(40, 3, 10),
                  {.epochs = 1, .callbacks = {&rec}, .accumulation_steps = 2, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  absl::StatusOr<TrainingCheckpoint> saved = ReadCheckpoint(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->global_step, 1);
  EXPECT_EQ(saved->accumulated_steps, 1);
  EXPECT_EQ(saved->accumulation_steps, 2);
  std::vector<std::string> names;
  for (const auto& [name, sum] : saved->accumulated_gradients) names.push_back(name);
  std::vector<std::string> trained;
  for (const autodiff::Variable* v : model->TrainableVariables()) trained.push_back(v->name());
  EXPECT_EQ(names, trained);
}

TEST(TrainerTest, ReportsInputWaitShare) {
  auto model = TinyModel(9);
  optimizers::Sgd sgd;
  // Eager: a compiled Fit's first step traces and plans, which under ASan on a loaded machine took
  // longer than the input's waits of a 4-step epoch (a share of 0.63 in CI). And 10 steps, as the
  // first batch, read to build the model, is not waited for inside a step.
  Trainer trainer(*model, sgd, {.run_eagerly = true});
  // Each batch takes 20 ms to produce, far more than a step of this tiny model.
  Dataset slow = BlobsDataset(100, 3, 10).Map([](Element e) -> absl::StatusOr<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return e;
  });
  absl::StatusOr<History> h = trainer.Fit(slow, {.epochs = 1, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_GT(h->at("input_wait_share")[0], 0.7);
  EXPECT_LE(h->at("input_wait_share")[0], 1.0);
  EXPECT_LT(h->at("images_per_second")[0], 10 / 0.02);  // at most 10 images per 20 ms
}

TEST(TrainerTest, BadElementsAreClearErrors) {
  auto model = TinyModel(10);
  optimizers::Sgd sgd;
  Trainer trainer(*model, sgd);
  Dataset images_only = Dataset::FromTensorSlices(Element{Blobs(10, 3)[0]}).Batch(5);
  absl::StatusOr<History> h = trainer.Fit(images_only, {.verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("targets [B, ...]"));
  // What the user gave, not Fit's own pass index before it.
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("got (float32[5, 4]"));
  // A third component (Keras' sample weights) was ignored: training ran unweighted.
  Element blobs = Blobs(10, 3);
  Tensor weights(DType::kFloat32, Shape{10});
  Dataset weighted = Dataset::FromTensorSlices(Element{blobs[0], blobs[1], weights}).Batch(5);
  h = trainer.Fit(weighted, {.verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("got 3 components: per-example weights (Keras' third component"));
  EXPECT_EQ(trainer.Evaluate(weighted).status().code(), absl::StatusCode::kInvalidArgument);
  // A pipeline without its Batch: a lazy model is built for inputs [4], and the error says why.
  layers::Sequential lazy{layers::Dense(3)};
  Trainer lazy_trainer(lazy, sgd);
  h = lazy_trainer.Fit(Dataset::FromTensorSlices(Element{blobs[0], blobs[1]}), {.verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("the inputs [4] have one dimension: is the dataset batched"));
  Dataset empty = BlobsDataset(10, 3, 5).Take(0);
  h = trainer.Fit(empty, {.verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("yielded no element"));
}

// Resume: run A trains 3 epochs straight through; run B saves a checkpoint and stops; run C, a
// fresh model (other initial weights) and optimizer, loads it and finishes. B's steps then C's
// must give A's losses exactly, and the same final weights. The pipeline shuffles with the fit
// seed, so resuming at the wrong input position would change the batches and the losses.
struct ResumeCase {
  std::string name;
  bool unknown_cardinality;
  int64_t stop_after_step;  // global steps before the checkpoint; a multiple of 8: epoch end
};

void PrintTo(const ResumeCase& c, std::ostream* os) { *os << c.name; }

class ResumeTest : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(ResumeTest, ResumedRunMatchesUninterruptedRun) {
  const ResumeCase& param = GetParam();
  const std::string path = TempPath("resume_" + param.name);
  auto dataset = [&] {
    Dataset ds = Dataset::FromTensorSlices(Blobs(64, 3)).Shuffle(64);
    if (param.unknown_cardinality) {
      ds = ds.Filter([](const Element&) -> absl::StatusOr<bool> { return true; });
    }
    return ds.Batch(8).Prefetch(2);  // 8 steps per epoch
  };
  const FitOptions base{.epochs = 3, .seed = 1234, .verbose = 0};

  auto model_a = TinyModel(11);
  optimizers::Adam adam_a(optimizers::AdamOptions{.learning_rate = 0.01f});
  Trainer a(*model_a, adam_a);
  RecordingCallback rec_a;
  FitOptions options_a = base;
  options_a.callbacks = {&rec_a};
  absl::StatusOr<History> ha = a.Fit(dataset(), options_a);
  ASSERT_TRUE(ha.ok()) << ha.status();
  ASSERT_EQ(rec_a.batch_losses.size(), 24u);

  auto model_b = TinyModel(11);
  optimizers::Adam adam_b(optimizers::AdamOptions{.learning_rate = 0.01f});
  Trainer b(*model_b, adam_b);
  RecordingCallback rec_b;
  const bool at_epoch_end = param.stop_after_step % 8 == 0;
  callbacks::ModelCheckpoint checkpoint({.path = path});  // at each epoch end
  if (at_epoch_end) {
    rec_b.on_epoch_end = [&](int64_t epoch, const callbacks::Logs&) {
      if (b.global_step() == param.stop_after_step) b.StopTraining();
      return absl::OkStatus();
    };
  } else {
    rec_b.on_batch_end = [&](int64_t, const callbacks::Logs&) -> absl::Status {
      if (b.global_step() != param.stop_after_step) return absl::OkStatus();
      b.StopTraining();
      return b.SaveCheckpoint(path);
    };
  }
  FitOptions options_b = base;
  options_b.callbacks = {&rec_b};
  if (at_epoch_end) options_b.callbacks.insert(options_b.callbacks.begin(), &checkpoint);
  ASSERT_TRUE(b.Fit(dataset(), options_b).ok());
  ASSERT_EQ(rec_b.batch_losses.size(), static_cast<size_t>(param.stop_after_step));

  auto model_c = TinyModel(99);  // other initial weights: the checkpoint must replace them
  optimizers::Adam adam_c(optimizers::AdamOptions{.learning_rate = 0.01f});
  Trainer c(*model_c, adam_c);
  ASSERT_TRUE(c.LoadCheckpoint(path).ok());
  EXPECT_EQ(c.global_step(), param.stop_after_step);
  RecordingCallback rec_c;
  FitOptions options_c = base;
  options_c.callbacks = {&rec_c};
  absl::StatusOr<History> hc = c.Fit(dataset(), options_c);
  ASSERT_TRUE(hc.ok()) << hc.status();

  std::vector<double> resumed = rec_b.batch_losses;
  resumed.insert(resumed.end(), rec_c.batch_losses.begin(), rec_c.batch_losses.end());
  EXPECT_EQ(resumed, rec_a.batch_losses);
  EXPECT_EQ(VariableValues(*model_c), VariableValues(*model_a));
  EXPECT_EQ(adam_c.iterations(), adam_a.iterations());
  EXPECT_EQ(hc->at("loss").back(), ha->at("loss").back());
  EXPECT_EQ(hc->at("accuracy").back(), ha->at("accuracy").back());
  EXPECT_EQ(hc->epochs.back(), 2);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Positions, ResumeTest,
                         ::testing::Values(ResumeCase{"mid_epoch", false, 5},
                                           ResumeCase{"epoch_end", false, 8},
                                           ResumeCase{"mid_epoch_unknown_cardinality", true, 11},
                                           ResumeCase{"epoch_end_unknown_cardinality", true, 8}),
                         [](const ::testing::TestParamInfo<ResumeCase>& info) {
                           return info.param.name;
                         });

// Each of Keras' other optimizers resumes exactly from a checkpoint file saved mid-epoch: its
// slots, and Nadam's u_product, go through the file.
TEST(TrainerTest, KerasOptimizersResumeExactlyFromACheckpointFile) {
  using MakeOptimizer = std::function<std::unique_ptr<optimizers::Optimizer>()>;
  const std::vector<std::pair<std::string, MakeOptimizer>> makers = {
      {"rmsprop",
       [] {
         return std::make_unique<optimizers::Rmsprop>(
             0.01f, optimizers::RmspropOptions{.momentum = 0.5f, .centered = true});
       }},
      {"adagrad", [] { return std::make_unique<optimizers::Adagrad>(0.05f); }},
      {"adadelta", [] { return std::make_unique<optimizers::Adadelta>(1.0f); }},
      {"adamax", [] { return std::make_unique<optimizers::Adamax>(0.01f); }},
      {"nadam", [] { return std::make_unique<optimizers::Nadam>(0.01f); }},
  };
  auto dataset = [] { return Dataset::FromTensorSlices(Blobs(64, 3)).Shuffle(64).Batch(8); };
  const FitOptions options{.epochs = 2, .seed = 77, .verbose = 0};
  for (const auto& [name, make] : makers) {
    SCOPED_TRACE(name);
    const std::string path = TempPath("keras_optimizer_" + name);
    auto model_a = TinyModel(5);
    std::unique_ptr<optimizers::Optimizer> opt_a = make();
    Trainer a(*model_a, *opt_a);
    RecordingCallback rec_a;
    FitOptions options_a = options;
    options_a.callbacks = {&rec_a};
    ASSERT_TRUE(a.Fit(dataset(), options_a).ok());

    auto model_b = TinyModel(5);
    std::unique_ptr<optimizers::Optimizer> opt_b = make();
    Trainer b(*model_b, *opt_b);
    RecordingCallback rec_b;
    rec_b.on_batch_end = [&](int64_t, const callbacks::Logs&) -> absl::Status {
      if (b.global_step() != 11) return absl::OkStatus();
      b.StopTraining();
      return b.SaveCheckpoint(path);
    };
    FitOptions options_b = options;
    options_b.callbacks = {&rec_b};
    ASSERT_TRUE(b.Fit(dataset(), options_b).ok());

    auto model_c = TinyModel(6);
    std::unique_ptr<optimizers::Optimizer> opt_c = make();
    Trainer c(*model_c, *opt_c);
    ASSERT_TRUE(c.LoadCheckpoint(path).ok());
    RecordingCallback rec_c;
    FitOptions options_c = options;
    options_c.callbacks = {&rec_c};
    ASSERT_TRUE(c.Fit(dataset(), options_c).ok());
    std::vector<double> resumed = rec_b.batch_losses;
    resumed.insert(resumed.end(), rec_c.batch_losses.begin(), rec_c.batch_losses.end());
    EXPECT_EQ(resumed, rec_a.batch_losses);
    EXPECT_EQ(VariableValues(*model_c), VariableValues(*model_a));
    EXPECT_EQ(opt_c->iterations(), opt_a->iterations());
    std::filesystem::remove(path);
  }
}

// Found by training_checkpoint_fuzzer: a checkpoint whose element held for the next step lacked
// the pass index Fit reads first (an empty element), and Fit indexed past its end. Now the
// resume fails, naming the file and the element.
TEST(TrainerTest, ResumingWithAHeldElementWithoutItsPassIndexIsDataLoss) {
  const std::string path = TempPath("held_element");
  auto dataset = [] { return Dataset::FromTensorSlices(Blobs(64, 3)).Batch(8); };
  auto model_b = TinyModel(11);
  optimizers::Sgd sgd_b;
  Trainer b(*model_b, sgd_b);
  RecordingCallback stop;
  stop.on_batch_end = [&](int64_t, const callbacks::Logs&) -> absl::Status {
    if (b.global_step() != 3) return absl::OkStatus();
    b.StopTraining();
    return b.SaveCheckpoint(path);
  };
  ASSERT_TRUE(b.Fit(dataset(), {.epochs = 1, .callbacks = {&stop}, .verbose = 0}).ok());
  for (Element held : {Element{}, Element{Tensor::Scalar<std::string>("x"), Tensor()}}) {
    absl::StatusOr<TrainingCheckpoint> ckpt = ReadCheckpoint(path);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    ckpt->pending_element = held;
    ASSERT_TRUE(WriteCheckpoint(path, *ckpt).ok());
    auto model_c = TinyModel(11);
    optimizers::Sgd sgd_c;
    Trainer c(*model_c, sgd_c);
    ASSERT_TRUE(c.LoadCheckpoint(path).ok());
    absl::StatusOr<History> h = c.Fit(dataset(), {.epochs = 1, .verbose = 0});
    ASSERT_EQ(h.status().code(), absl::StatusCode::kDataLoss) << h.status();
    EXPECT_THAT(std::string(h.status().message()), HasSubstr(path));
    EXPECT_THAT(std::string(h.status().message()), HasSubstr("without its pass index"));
  }
  std::filesystem::remove(path);
}

TEST(TrainerTest, LoadingAMismatchedCheckpointNamesTheVariable) {
  const std::string path = TempPath("mismatch");
  auto small = TinyModel(1, /*hidden=*/8);
  optimizers::Sgd sgd;
  Trainer saver(*small, sgd);
  ASSERT_TRUE(saver.SaveCheckpoint(path).ok());

  auto model = TinyModel(1, /*hidden=*/16);
  optimizers::Sgd sgd2;
  Trainer loader(*model, sgd2);
  const auto before = VariableValues(*model);
  absl::Status s = loader.LoadCheckpoint(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(path + ": variable 0 '0/dense/kernel': expected shape [4, 16] (the "
                               "model's), found [4, 8] in the checkpoint"));
  EXPECT_EQ(VariableValues(*model), before);

  // A corrupt file is DataLoss naming it.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  s = loader.LoadCheckpoint(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace sluice::train::fit
