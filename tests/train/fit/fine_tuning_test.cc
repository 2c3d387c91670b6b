// The Keras workflow around Fit that issue #18 adds: lazily built models, freezing for
// fine-tuning, regularisation losses, weights-only saves and ModelCheckpoint's folder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/train/fit_test_util.h"
#include "train/callbacks/model_checkpoint.h"
#include "train/fit/trainer.h"
#include "train/layers/conv2d.h"
#include "train/layers/depthwise_conv2d.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/relu.h"
#include "train/layers/reshape.h"
#include "train/layers/summary.h"
#include "train/layers/zero_padding2d.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::fit {
namespace {

using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::kClasses;
using ::sluice::train::testing::kFeatures;
using ::sluice::train::testing::TinyModel;
using ::testing::HasSubstr;

std::string FineTuningTempPath(const std::string& name) {
  return ::testing::TempDir() + "/fine_tuning_test_" + name + "_" + std::to_string(getpid());
}

std::vector<std::vector<float>> Values(const std::vector<autodiff::Variable*>& vars) {
  std::vector<std::vector<float>> out;
  for (autodiff::Variable* v : vars) out.push_back(testing::Values(v->value()));
  return out;
}

TEST(FineTuningTest, LazyModelTrainsLikeTheExplicitOneWithTheSameSeeds) {
  // TinyModel: Dense(4 -> 16, seed 1), ReLU, Dense(16 -> 3, seed 101).
  auto eager = TinyModel(1);
  layers::Sequential lazy{layers::Dense(16, layers::Activation::kLinear, {.seed = 1}),
                          layers::ReLU(),
                          layers::Dense(kClasses, layers::Activation::kLinear, {.seed = 101})};
  optimizers::Sgd sgd_a(optimizers::SgdOptions{.learning_rate = 0.1f});
  optimizers::Sgd sgd_b(optimizers::SgdOptions{.learning_rate = 0.1f});
  Trainer a(*eager, sgd_a), b(lazy, sgd_b);
  absl::StatusOr<History> ha = a.Fit(BlobsDataset(96, 7, 32), {.epochs = 2, .verbose = 0});
  absl::StatusOr<History> hb = b.Fit(BlobsDataset(96, 7, 32), {.epochs = 2, .verbose = 0});
  ASSERT_TRUE(ha.ok()) << ha.status();
  ASSERT_TRUE(hb.ok()) << hb.status();
  // The first step updated the lazily built variables too (they existed before it).
  EXPECT_EQ(ha->at("loss"), hb->at("loss"));
  EXPECT_EQ(Values(eager->Variables()), Values(lazy.Variables()));
  EXPECT_EQ(lazy.Variables()[0]->name(), "0/dense/kernel");
}

TEST(FineTuningTest, FrozenBaseStaysBitIdenticalThenUnfreezesAtALowerRate) {
  auto model = TinyModel(3);
  layers::Module& base = model->module(0);
  const auto base_before = Values(base.Variables());
  const auto head_before = Values(model->module(2).Variables());
  base.set_trainable(false);
  optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.02f});
  Trainer trainer(*model, adam);
  ASSERT_TRUE(trainer.Fit(BlobsDataset(96, 7, 32), {.epochs = 2, .verbose = 0}).ok());
  EXPECT_EQ(Values(base.Variables()), base_before);
  EXPECT_NE(Values(model->module(2).Variables()), head_before);
  // No slots for frozen variables: a full checkpoint holds the head's m and v only.
  const std::string path = FineTuningTempPath("frozen.ckpt");
  ASSERT_TRUE(trainer.SaveCheckpoint(path).ok());
  absl::StatusOr<TrainingCheckpoint> ckpt = ReadCheckpoint(path);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->optimizer.slots.size(), 4u);  // {m, v} x {kernel, bias} of the head
  EXPECT_EQ(ckpt->frozen_variables, (std::vector<std::string>{"0/dense/kernel", "0/dense/bias"}));

  // A fresh model loading it comes back frozen the same way.
  auto fresh = TinyModel(3);
  optimizers::Adam adam2(optimizers::AdamOptions{.learning_rate = 0.02f});
  Trainer resumed(*fresh, adam2);
  ASSERT_TRUE(resumed.LoadCheckpoint(path).ok());
  EXPECT_FALSE(fresh->module(0).trainable());
  EXPECT_EQ(fresh->TrainableVariables().size(), 2u);

  // Unfreeze and go on at a lower rate: the base now moves.
  base.set_trainable(true);
  adam.set_learning_rate(0.002f);
  ASSERT_TRUE(trainer.Fit(BlobsDataset(96, 7, 32), {.epochs = 3, .verbose = 0}).ok());
  EXPECT_NE(Values(base.Variables()), base_before);
  std::filesystem::remove(path);
}

TEST(FineTuningTest, RegularisationIsAddedToTheLossAndShrinksTheWeights) {
  auto make = [](std::optional<layers::Regularizer> r) {
    return layers::Sequential{layers::Dense(kFeatures, 16, {.seed = 5, .kernel_regularizer = r}),
                              layers::ReLU(),
                              layers::Dense(16, kClasses, {.seed = 6, .kernel_regularizer = r})};
  };
  layers::Sequential plain = make(std::nullopt);
  layers::Sequential l2 = make(layers::Regularizer::L2(0.05f));
  // Before training, the penalty is 0.05 * sum(w^2) over both kernels.
  double sum_sq = 0;
  for (autodiff::Variable* v : l2.Variables()) {
    if (v->name().ends_with("kernel")) {
      for (float w : testing::Values(v->value())) sum_sq += double{w} * w;
    }
  }
  std::vector<Tensor> penalties;
  ASSERT_TRUE(l2.AddLosses(penalties).ok());
  ASSERT_EQ(penalties.size(), 2u);
  const double total = penalties[0].scalar<float>() + penalties[1].scalar<float>();
  EXPECT_NEAR(total, 0.05 * sum_sq, 1e-4 * total);

  optimizers::Sgd sgd_a(optimizers::SgdOptions{.learning_rate = 0.1f});
  optimizers::Sgd sgd_b(optimizers::SgdOptions{.learning_rate = 0.1f});
  Trainer a(plain, sgd_a), b(l2, sgd_b);
  absl::StatusOr<callbacks::Logs> ea = a.Evaluate(BlobsDataset(96, 7, 32));
  absl::StatusOr<callbacks::Logs> eb = b.Evaluate(BlobsDataset(96, 7, 32));
  ASSERT_TRUE(ea.ok() && eb.ok());
  // Same weights, so the reported losses differ by exactly the penalty (as Keras reports).
  EXPECT_NEAR(eb->at("loss") - ea->at("loss"), total, 1e-4);
  ASSERT_TRUE(a.Fit(BlobsDataset(96, 7, 32), {.epochs = 4, .verbose = 0}).ok());
  ASSERT_TRUE(b.Fit(BlobsDataset(96, 7, 32), {.epochs = 4, .verbose = 0}).ok());
  auto norm = [](layers::Module& m) {
    double s = 0;
    for (float w : testing::Values(m.Variables()[0]->value())) s += double{w} * w;
    return s;
  };
  EXPECT_LT(norm(l2), norm(plain));

  // A frozen layer's penalty is left out, as Keras 3 does (only trainable weights regularise).
  l2.module(0).set_trainable(false);
  std::vector<Tensor> unfrozen_only;
  ASSERT_TRUE(l2.AddLosses(unfrozen_only).ok());
  ASSERT_EQ(unfrozen_only.size(), 1u);
  double head_sq = 0;
  for (float w : testing::Values(l2.module(2).Variables()[0]->value())) head_sq += double{w} * w;
  EXPECT_NEAR(unfrozen_only[0].scalar<float>(), 0.05 * head_sq, 1e-4 * 0.05 * head_sq);
}

TEST(FineTuningTest, WeightsOnlySavesInACreatedFolderAndLoadBack) {
  auto model = TinyModel(4);
  optimizers::Adam adam;
  Trainer trainer(*model, adam);
  const std::string dir = FineTuningTempPath("weights") + "/nested/folder";
  callbacks::ModelCheckpoint weights({.path = dir + "/w-{epoch}", .save_weights_only = true});
  callbacks::ModelCheckpoint full({.path = dir + "/full-{epoch}"});
  // A large shuffle buffer: a full checkpoint saves it, a weights-only one does not.
  Dataset data =
      Dataset::FromTensorSlices(testing::Blobs(256, 1)).Shuffle(256, {.seed = 3}).Batch(16);
  ASSERT_TRUE(trainer.Fit(data, {.epochs = 1, .callbacks = {&weights, &full}, .verbose = 0}).ok());
  ASSERT_TRUE(std::filesystem::exists(dir + "/w-1"));
  const auto weights_size = std::filesystem::file_size(dir + "/w-1");
  const auto full_size = std::filesystem::file_size(dir + "/full-1");
  // 4*16 + 16 + 16*3 + 3 = 131 floats = 524 bytes of values, plus names and framing.
  EXPECT_LT(weights_size, 1000u);
  EXPECT_GT(full_size, 2 * weights_size);

  auto fresh = TinyModel(99);
  optimizers::Adam adam2;
  Trainer loader(*fresh, adam2);
  ASSERT_TRUE(loader.LoadCheckpoint(dir + "/w-1").ok());
  EXPECT_EQ(Values(fresh->Variables()), Values(model->Variables()));
  EXPECT_EQ(adam2.iterations(), 0);  // no optimizer state in a weights-only file
  std::filesystem::remove_all(FineTuningTempPath("weights"));
}

TEST(FineTuningTest, LoadingIntoAnUnbuiltModelSaysToBuildIt) {
  layers::Sequential lazy{layers::Dense(3)};
  optimizers::Adam adam;
  Trainer trainer(lazy, adam);
  absl::Status s = trainer.LoadCheckpoint("/nonexistent");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("Build(input_shape)"));
}

TEST(FineTuningTest, SummaryListsLayersShapesAndCounts) {
  layers::Sequential model{layers::Dense(16, layers::Activation::kRelu), layers::Dense(3)};
  EXPECT_THAT(layers::Summary(model), HasSubstr("unbuilt"));
  ASSERT_TRUE(model.Build(Shape{8, 4}).ok());
  model.module(0).set_trainable(false);
  const std::string s = layers::Summary(model);
  // Dense 4->16: 64 + 16 = 80 parameters; Dense 16->3: 48 + 3 = 51.
  EXPECT_THAT(s, HasSubstr("0/dense (frozen)"));
  EXPECT_THAT(s, HasSubstr("(None, 16)"));
  EXPECT_THAT(s, HasSubstr("(None, 3)"));
  EXPECT_THAT(s, HasSubstr("Total params: 131\n"));
  EXPECT_THAT(s, HasSubstr("Trainable params: 51\n"));
  EXPECT_THAT(s, HasSubstr("Non-trainable params: 80\n"));
}

// The layers functional graphs need print as every layer does: names, shapes, counts.
TEST(FineTuningTest, SummaryListsTheFunctionalGraphLayers) {
  layers::Sequential model{
      layers::ZeroPadding2D(1),       layers::DepthwiseConv2D(3, {.depth_multiplier = 2}),
      layers::ReLU({.max_value = 6}), layers::Conv2D(4, 1, {.conv = {.groups = 2}}),
      layers::GlobalMaxPool(),        layers::Reshape({2, 2})};
  ASSERT_TRUE(model.Build(Shape{1, 5, 5, 2}).ok());
  const std::string s = layers::Summary(model);
  EXPECT_THAT(s, HasSubstr("0/zero_padding2d"));
  EXPECT_THAT(s, HasSubstr("(None, 7, 7, 2)"));
  // 3 x 3 x 2 x 2 + 4 and 1 x 1 x (2 / 2) x 4 + 4.
  EXPECT_THAT(s, HasSubstr("1/depthwise_conv2d"));
  EXPECT_THAT(s, HasSubstr("(None, 5, 5, 4)"));
  EXPECT_THAT(s, HasSubstr("2/relu"));
  EXPECT_THAT(s, HasSubstr("4/global_max_pool"));
  EXPECT_THAT(s, HasSubstr("5/reshape"));
  EXPECT_THAT(s, HasSubstr("(None, 2, 2)"));
  EXPECT_THAT(s, HasSubstr("Total params: 52\n"));
}

}  // namespace
}  // namespace sluice::train::fit
