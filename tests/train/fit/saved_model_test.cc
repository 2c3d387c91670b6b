#include "train/fit/saved_model.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/crc32c.h"
#include "tests/file_util.h"
#include "tests/temp_dir.h"
#include "tests/train/fit_test_util.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/depthwise_conv2d.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/layer_config.h"
#include "train/layers/max_pool.h"
#include "train/layers/recompute.h"
#include "train/layers/relu.h"
#include "train/layers/reshape.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/layers/zero_padding2d.h"
#include "train/models/model_zoo.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/sgd.h"
#include "train/proto/saved_model.pb.h"

namespace sluice::train::fit {
namespace {

using ::sluice::testing::ReadFile;
using ::sluice::testing::ScopedTempDir;
using ::testing::HasSubstr;

Tensor RandomImages(const Shape& shape, uint32_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

// The model's inference output on fixed inputs.
std::vector<float> Outputs(layers::Module& model, const Shape& input) {
  auto out = model.Forward(RandomImages(input, 5), /*training=*/false);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  return std::vector<float>(out->flat<float>().begin(), out->flat<float>().end());
}

TEST(SavedModelTest, EveryBuiltInModelLoadsWithoutItsCodeAndPredictsTheSame) {
  for (const std::string& name : models::ModelNames()) {
    for (bool recompute : {false, true}) {
      if (recompute && !models::IsResNet(name)) continue;
      SCOPED_TRACE(name + (recompute ? " with recompute" : ""));
      auto model = models::MakeModel(name, {.height = 28, .width = 28, .channels = 1}, 17,
                                     {.recompute = recompute});
      ASSERT_TRUE(model.ok()) << model.status();
      ASSERT_TRUE((*model)->Build(Shape{1, 28, 28, 1}).ok());
      ScopedTempDir dir;
      ASSERT_TRUE(SaveModel(**model, Shape{32, 28, 28, 1}, dir.path(),
                            {.class_names = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}})
                      .ok());
      auto loaded = LoadModel(dir.path());
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      EXPECT_EQ(loaded->input_shape, (Shape{32, 28, 28, 1}));
      EXPECT_EQ(loaded->class_names.size(), 10u);
      EXPECT_EQ(loaded->class_names[9], "j");
      // The same architecture (config), the same variables, the same predictions.
      auto original_config = (*model)->GetConfig();
      auto loaded_config = loaded->model->GetConfig();
      ASSERT_TRUE(original_config.ok() && loaded_config.ok());
      ASSERT_EQ((*model)->Variables().size(), loaded->model->Variables().size());
      for (size_t i = 0; i < (*model)->Variables().size(); ++i) {
        EXPECT_EQ((*model)->Variables()[i]->name(), loaded->model->Variables()[i]->name());
        EXPECT_TRUE(
            (*model)->Variables()[i]->value().Equals(loaded->model->Variables()[i]->value()));
      }
      EXPECT_EQ(Outputs(**model, Shape{4, 28, 28, 1}),
                Outputs(*loaded->model, Shape{4, 28, 28, 1}));
    }
  }
}

// A layer's config holds maps, which protobuf writes in hash order unless told otherwise: the
// same model saved three times is the same bytes (a process's maps are seeded differently).
TEST(SavedModelTest, SavingTheSameModelGivesTheSameBytes) {
  auto model = models::MakeModel("cnn", {.height = 28, .width = 28, .channels = 1}, 17, {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->Build(Shape{1, 28, 28, 1}).ok());
  std::vector<std::string> models, weights;
  for (int i = 0; i < 3; ++i) {
    ScopedTempDir dir;
    ASSERT_TRUE(SaveModel(**model, Shape{8, 28, 28, 1}, dir.path()).ok());
    models.push_back(ReadFile(dir.path() + "/model.pb"));
    weights.push_back(ReadFile(dir.path() + "/weights.ckpt"));
  }
  for (int i = 1; i < 3; ++i) {
    // Not EXPECT_EQ: gtest's diff of two 13 MB strings runs out of memory.
    EXPECT_TRUE(models[i] == models[0]) << "model.pb of save " << i << " differs from save 0's";
    EXPECT_TRUE(weights[i] == weights[0]) << "weights.ckpt of save " << i << " differs";
  }
}

// Every built-in layer, with options off their defaults, round-trips its config.
TEST(SavedModelTest, EveryBuiltInLayerRoundTripsItsConfig) {
  layers::Sequential model{
      layers::Conv2D(
          6, {3, 2},
          {.conv = {.stride_h = 2, .dilation_w = 2, .padding = train::ops::Padding::kSame},
           .use_bias = false,
           .kernel_initializer = layers::Initializer::kHeNormal,
           .seed = 9,
           .activation = layers::Activation::kTanh,
           .kernel_regularizer = layers::Regularizer::L1L2(0.01f, 0.02f)}),
      layers::BatchNorm({.momentum = 0.9f, .epsilon = 1e-5f}),
      layers::ReLU(),
      layers::MaxPool({.window_h = 3,
                       .window_w = 2,
                       .stride_h = 1,
                       .stride_w = 2,
                       .padding = train::ops::Padding::kSame}),
      layers::ResidualBlock(6, 8, {.stride = 2, .seed = 4}),
      layers::AvgPool(),
      layers::GlobalAvgPool(),
      layers::Dropout(0.25f, 77),
      layers::Dense(5, layers::Activation::kGelu,
                    {.bias_initializer = layers::Initializer::kZeros, .seed = 3}),
      layers::Flatten()};
  ASSERT_TRUE(model.Build(Shape{1, 16, 16, 3}).ok());
  ScopedTempDir dir;
  ASSERT_TRUE(SaveModel(model, Shape{1, 16, 16, 3}, dir.path()).ok());
  auto loaded = LoadModel(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto a = model.GetConfig();
  auto b = loaded->model->GetConfig();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->layers.size(), b->layers.size());
  for (size_t i = 0; i < a->layers.size(); ++i) {
    SCOPED_TRACE(a->layers[i].class_name);
    EXPECT_EQ(a->layers[i].class_name, b->layers[i].class_name);
    EXPECT_EQ(a->layers[i].ints, b->layers[i].ints);
    EXPECT_EQ(a->layers[i].floats, b->layers[i].floats);
    EXPECT_EQ(a->layers[i].strings, b->layers[i].strings);
  }
  EXPECT_EQ(a->layers[0].strings.at("activation"), "tanh");
  EXPECT_EQ(a->layers[0].floats.at("kernel_regularizer_l2"), 0.02f);
  EXPECT_EQ(Outputs(model, Shape{2, 16, 16, 3}), Outputs(*loaded->model, Shape{2, 16, 16, 3}));
}

// Keras' include_optimizer: Adam's iterations and slots saved with the model continue training
// exactly where it stopped; a fresh Adam (no state) trains differently, and an optimizer of
// another kind cannot take the state.
TEST(SavedModelTest, TheOptimizerStateContinuesTrainingExactly) {
  const Dataset data = testing::BlobsDataset(48, 3, 8);
  auto model = testing::TinyModel(9);
  optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.05f});
  {
    Trainer trainer(*model, adam);
    ASSERT_TRUE(trainer.Fit(data, {.epochs = 1, .verbose = 0}).ok());
  }
  ScopedTempDir dir;
  ASSERT_TRUE(
      SaveModel(*model, Shape{1, testing::kFeatures}, dir.path(), {.optimizer = &adam}).ok());
  auto loaded = LoadModel(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->optimizer_state.has_value());
  EXPECT_EQ(loaded->optimizer_state->iterations, 6);

  // Two more steps each: the original, the loaded model with the restored state, and the loaded
  // model with a fresh optimizer.
  auto fresh = LoadModel(dir.path());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  optimizers::Adam restored(optimizers::AdamOptions{.learning_rate = 0.05f});
  ASSERT_TRUE(
      restored.RestoreState(*loaded->optimizer_state, loaded->model->TrainableVariables()).ok());
  optimizers::Adam stateless(optimizers::AdamOptions{.learning_rate = 0.05f});
  for (auto [m, opt] : std::vector<std::pair<layers::Module*, optimizers::Optimizer*>>{
           {model.get(), &adam},
           {loaded->model.get(), &restored},
           {fresh->model.get(), &stateless}}) {
    Trainer trainer(*m, *opt);
    ASSERT_TRUE(trainer.Fit(data, {.epochs = 1, .steps_per_epoch = 2, .verbose = 0}).ok());
  }
  const std::vector<autodiff::Variable*> a = model->Variables(), b = loaded->model->Variables(),
                                         c = fresh->model->Variables();
  ASSERT_EQ(a.size(), b.size());
  bool any_differs_without_state = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i]->value().Equals(b[i]->value())) << a[i]->name();
    any_differs_without_state |= !a[i]->value().Equals(c[i]->value());
  }
  EXPECT_TRUE(any_differs_without_state);

  // Sgd keeps no m and v.
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 0.1f});
  EXPECT_FALSE(
      sgd.RestoreState(*loaded->optimizer_state, loaded->model->TrainableVariables()).ok());
  // Saved without an optimizer: no state.
  ScopedTempDir plain;
  ASSERT_TRUE(SaveModel(*model, Shape{1, testing::kFeatures}, plain.path()).ok());
  auto without = LoadModel(plain.path());
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->optimizer_state.has_value());
}

// The layers functional graphs need save and load without their code: the same configs, the
// same weights, the same predictions; trained with Nadam, whose state (slots and u_product)
// saved with the model continues training exactly.
TEST(SavedModelTest, FunctionalGraphLayersAndNadamStateRoundTrip) {
  auto make = [] {
    auto model = std::make_unique<layers::Sequential>();
    model->Add(std::make_unique<layers::Reshape>(std::vector<int64_t>{2, 2, 1}));
    model->Add(std::make_unique<layers::ZeroPadding2D>(std::pair<int64_t, int64_t>{1, 0},
                                                       std::pair<int64_t, int64_t>{2, 1}));
    model->Add(std::make_unique<layers::Conv2D>(4, layers::KernelSize(2),
                                                layers::Conv2DLayerOptions{.seed = 1}));
    model->Add(std::make_unique<layers::DepthwiseConv2D>(
        layers::KernelSize(2, 3),
        layers::DepthwiseConv2DOptions{.padding = train::ops::Padding::kSame,
                                       .depth_multiplier = 3,
                                       .seed = 2,
                                       .activation = layers::Activation::kTanh}));
    model->Add(std::make_unique<layers::Conv2D>(
        6, layers::KernelSize(1), layers::Conv2DLayerOptions{.conv = {.groups = 3}, .seed = 3}));
    model->Add(std::make_unique<layers::ReLU>(layers::ReLUOptions{.max_value = 6}));
    model->Add(std::make_unique<layers::ReLU>(
        layers::ReLUOptions{.negative_slope = 0.2f, .threshold = 0.01f}));
    model->Add(
        std::make_unique<layers::GlobalMaxPool>(layers::GlobalMaxPoolOptions{.keepdims = true}));
    model->Add(std::make_unique<layers::Flatten>());
    model->Add(std::make_unique<layers::Dense>(3, layers::Activation::kLinear,
                                               layers::DenseOptions{.seed = 4}));
    return model;
  };
  const Dataset data = testing::BlobsDataset(48, 3, 8);
  auto model = make();
  optimizers::Nadam nadam(0.02f);
  {
    Trainer trainer(*model, nadam);
    ASSERT_TRUE(trainer.Fit(data, {.epochs = 1, .verbose = 0}).ok());
  }
  ScopedTempDir dir;
  ASSERT_TRUE(
      SaveModel(*model, Shape{1, testing::kFeatures}, dir.path(), {.optimizer = &nadam}).ok());
  auto loaded = LoadModel(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto a = model->GetConfig();
  auto b = loaded->model->GetConfig();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->layers.size(), b->layers.size());
  for (size_t i = 0; i < a->layers.size(); ++i) {
    SCOPED_TRACE(a->layers[i].class_name);
    EXPECT_EQ(a->layers[i].class_name, b->layers[i].class_name);
    EXPECT_EQ(a->layers[i].ints, b->layers[i].ints);
    EXPECT_EQ(a->layers[i].floats, b->layers[i].floats);
    EXPECT_EQ(a->layers[i].strings, b->layers[i].strings);
  }
  EXPECT_EQ(Outputs(*model, Shape{5, testing::kFeatures}),
            Outputs(*loaded->model, Shape{5, testing::kFeatures}));

  ASSERT_TRUE(loaded->optimizer_state.has_value());
  ASSERT_EQ(loaded->optimizer_state->scalars.size(), 1u);
  EXPECT_EQ(loaded->optimizer_state->scalars[0].second, nadam.u_product());
  optimizers::Nadam restored(0.02f);
  ASSERT_TRUE(
      restored.RestoreState(*loaded->optimizer_state, loaded->model->TrainableVariables()).ok());
  for (auto [m, opt] : std::vector<std::pair<layers::Module*, optimizers::Optimizer*>>{
           {model.get(), &nadam}, {loaded->model.get(), &restored}}) {
    Trainer trainer(*m, *opt);
    ASSERT_TRUE(trainer.Fit(data, {.epochs = 1, .steps_per_epoch = 3, .verbose = 0}).ok());
  }
  const std::vector<autodiff::Variable*> va = model->Variables(), vb = loaded->model->Variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_TRUE(va[i]->value().Equals(vb[i]->value())) << va[i]->name();
  }
}

TEST(SavedModelTest, FrozenVariablesStayFrozen) {
  layers::Sequential model{layers::Dense(4), layers::Dense(2)};
  ASSERT_TRUE(model.Build(Shape{1, 3}).ok());
  model.module(0).set_trainable(false);
  ScopedTempDir dir;
  ASSERT_TRUE(SaveModel(model, Shape{1, 3}, dir.path()).ok());
  auto loaded = LoadModel(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  for (auto* v : loaded->model->Variables()) {
    EXPECT_EQ(v->frozen(), v->name().starts_with("0/")) << v->name();
  }
  EXPECT_EQ(loaded->model->TrainableVariables().size(), 2u);
}

// A user's own layer: saved once it has a config and a registered factory.
class Scale : public layers::Module {
 public:
  explicit Scale(float factor) : factor_(factor) {}
  std::string name() const override { return "scale"; }
  absl::StatusOr<Tensor> Forward(const Tensor& x, bool) override {
    Tensor out(DType::kFloat32, x.shape());
    for (int64_t i = 0; i < x.num_elements(); ++i)
      out.data<float>()[i] = x.data<float>()[i] * factor_;
    return out;
  }
  absl::StatusOr<layers::LayerConfig> GetConfig() override {
    return layers::LayerConfig{.class_name = "TestScale", .floats = {{"factor", factor_}}};
  }

 private:
  float factor_;
};

class Unsaveable : public layers::Module {
 public:
  std::string name() const override { return "unsaveable"; }
  absl::StatusOr<Tensor> Forward(const Tensor& x, bool) override { return x; }
};

TEST(SavedModelTest, ACustomLayerNeedsAConfigAndARegisteredFactory) {
  ScopedTempDir dir;
  layers::Sequential without{Unsaveable(), layers::Dense(2)};
  ASSERT_TRUE(without.Build(Shape{1, 3}).ok());
  absl::Status s = SaveModel(without, Shape{1, 3}, dir.path());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("layer 0: layer 'unsaveable' has no config"));

  layers::Sequential with{Scale(2.5f), layers::Dense(2)};
  ASSERT_TRUE(with.Build(Shape{1, 3}).ok());
  ASSERT_TRUE(SaveModel(with, Shape{1, 3}, dir.path()).ok());
  auto unknown = LoadModel(dir.path());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("no layer factory for 'TestScale'"));
  ASSERT_TRUE(
      layers::RegisterLayer(
          "TestScale",
          [](const layers::LayerConfig& c) -> absl::StatusOr<std::unique_ptr<layers::Module>> {
            auto factor = c.Float("factor");
            if (!factor.ok()) return factor.status();
            return std::make_unique<Scale>(static_cast<float>(*factor));
          })
          .ok());
  EXPECT_EQ(layers::RegisterLayer("TestScale", nullptr).code(), absl::StatusCode::kAlreadyExists);
  auto loaded = LoadModel(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Outputs(with, Shape{2, 3}), Outputs(*loaded->model, Shape{2, 3}));
}

// An input shape the model was not built for is refused when saving, naming both: it was saved,
// and LoadModel then blamed the files ("do the files belong together?").
TEST(SavedModelTest, AnInputShapeThatDoesNotFitTheModelIsRefusedWhenSaving) {
  ScopedTempDir dir;
  layers::Sequential model{layers::Dense(4), layers::Dense(2)};
  ASSERT_TRUE(model.Build(Shape{1, 8}).ok());
  absl::Status saved = SaveModel(model, Shape{1, 5}, dir.path());
  EXPECT_EQ(saved.code(), absl::StatusCode::kInvalidArgument) << saved;
  EXPECT_THAT(saved.message(), HasSubstr("the input shape [1, 5] does not fit the model"));
  EXPECT_THAT(saved.message(), HasSubstr("8"));
  EXPECT_FALSE(std::filesystem::exists(dir.File("model.pb")));
  ASSERT_TRUE(SaveModel(model, Shape{1, 8}, dir.path()).ok());
  EXPECT_TRUE(LoadModel(dir.path()).ok());
}

TEST(SavedModelTest, MissingForeignCorruptAndMismatchedFilesAreClearErrors) {
  ScopedTempDir dir;
  EXPECT_EQ(LoadModel(dir.File("nothing")).status().code(), absl::StatusCode::kNotFound);

  layers::Sequential model{layers::Dense(4), layers::Dense(2)};
  ASSERT_TRUE(model.Build(Shape{1, 3}).ok());
  ASSERT_TRUE(SaveModel(model, Shape{1, 3}, dir.path()).ok());
  const std::string pb = dir.File("model.pb");
  const std::string good = ReadFile(pb);
  // A file of another kind.
  dir.Write("model.pb", "{\"class_name\": \"Sequential\"}");
  auto foreign = LoadModel(dir.path());
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(foreign.status().message(), HasSubstr("not a sluice saved model"));
  // One flipped bit in the architecture.
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  dir.Write("model.pb", flipped);
  auto corrupt = LoadModel(dir.path());
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss) << corrupt.status();
  EXPECT_THAT(corrupt.status().message(), HasSubstr(pb));
  // Weights of another architecture beside it.
  dir.Write("model.pb", good);
  layers::Sequential other{layers::Dense(5), layers::Dense(2)};
  ASSERT_TRUE(other.Build(Shape{1, 3}).ok());
  ScopedTempDir other_dir;
  ASSERT_TRUE(SaveModel(other, Shape{1, 3}, other_dir.path()).ok());
  std::filesystem::copy_file(other_dir.File("weights.ckpt"), dir.File("weights.ckpt"),
                             std::filesystem::copy_options::overwrite_existing);
  auto mismatched = LoadModel(dir.path());
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(mismatched.status().message(),
              HasSubstr(pb + ": layer 0 (Dense) has 16 variable elements by its config, but " +
                        dir.File("weights.ckpt") + " holds 20 for it"));
  // Saving an unbuilt model says so.
  layers::Sequential unbuilt{layers::Dense(2)};
  EXPECT_EQ(SaveModel(unbuilt, Shape{1, 3}, dir.path()).code(),
            absl::StatusCode::kFailedPrecondition);
}

// Rewrites DIR/model.pb with its architecture changed by `edit` (and a valid CRC), as a crafted
// file would be.
void EditArchitecture(ScopedTempDir& dir,
                      const std::function<void(proto::LayerConfigProto&)>& edit) {
  proto::SavedModelProto saved;
  ASSERT_TRUE(saved.ParseFromString(ReadFile(dir.File("model.pb"))));
  proto::LayerConfigProto config;
  ASSERT_TRUE(config.ParseFromString(saved.config()));
  edit(config);
  saved.set_config(config.SerializeAsString());
  saved.set_config_crc32c(MaskCrc32c(Crc32c(saved.config())));
  dir.Write("model.pb", saved.SerializeAsString());
}

// Noticed in review: LoadModel built the architecture model.pb describes before it read the
// weights, so a file asking for a Dense of 2^40 units, or a ResidualBlock of 2^20 channels (which
// builds as it is made), allocated terabytes before any check. Then the weights bounded what
// Build could reserve; now each layer's size is computed from its config and checked against
// the limits and against the weights before anything is made.
TEST(SavedModelTest, AnArchitectureThatDoesNotFitItsWeightsIsRefusedBeforeAllocating) {
  ScopedTempDir dir;
  layers::Sequential model{layers::Dense(4), layers::Dense(2)};
  ASSERT_TRUE(model.Build(Shape{1, 3}).ok());
  ASSERT_TRUE(SaveModel(model, Shape{1, 3}, dir.path()).ok());
  ASSERT_TRUE(LoadModel(dir.path()).ok());  // as saved
  const std::string pb = dir.File("model.pb");
  const std::string weights = dir.File("weights.ckpt");
  EditArchitecture(dir, [](proto::LayerConfigProto& c) {
    ASSERT_EQ(c.layers(0).class_name(), "Dense");
    (*c.mutable_layers(0)->mutable_ints())["units"] = int64_t{1} << 40;
  });
  auto huge = LoadModel(dir.path());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_THAT(huge.status().message(),
              HasSubstr(pb + ": the architecture has 6597069766658 variable elements, over "
                             "LoadModelOptions::max_parameters (4294967296)"));
  // Under the limit, the counts must match the weights' layer by layer: one unit more or less
  // is DataLoss naming both files, the layer and both counts.
  for (int64_t units : {int64_t{1} << 20, int64_t{5}, int64_t{3}}) {
    EditArchitecture(dir, [units](proto::LayerConfigProto& c) {
      (*c.mutable_layers(0)->mutable_ints())["units"] = units;
    });
    auto wrong = LoadModel(dir.path());
    EXPECT_EQ(wrong.status().code(), absl::StatusCode::kDataLoss) << wrong.status();
    EXPECT_THAT(wrong.status().message(),
                HasSubstr(absl::StrCat(pb, ": layer 0 (Dense) has ", 4 * units,
                                       " variable "
                                       "elements by its config, but ",
                                       weights, " holds 16")));
  }
  // A layer more than the weights hold (the first layers all fit), and one less.
  EditArchitecture(dir, [](proto::LayerConfigProto& c) {
    (*c.mutable_layers(0)->mutable_ints())["units"] = 4;
    proto::LayerConfigProto* extra = c.add_layers();
    extra->set_class_name("Dense");
    (*extra->mutable_ints())["units"] = 2;
  });
  auto more = LoadModel(dir.path());
  EXPECT_EQ(more.status().code(), absl::StatusCode::kDataLoss) << more.status();
  EXPECT_THAT(more.status().message(), HasSubstr("layer 2 (Dense) has 6 variable elements by its "
                                                 "config, but " +
                                                 weights + " holds 0"));
  EditArchitecture(dir, [](proto::LayerConfigProto& c) {
    c.mutable_layers()->RemoveLast();
    c.mutable_layers()->RemoveLast();
  });
  auto fewer = LoadModel(dir.path());
  EXPECT_EQ(fewer.status().code(), absl::StatusCode::kDataLoss) << fewer.status();
  EXPECT_THAT(fewer.status().message(),
              HasSubstr("the model (Sequential) has 16 variable elements by its config, but " +
                        weights + " holds 26"));

  // A block that builds as it is made: over the limit, or of the wrong size.
  ScopedTempDir res_dir;
  layers::Sequential res{layers::ResidualBlock(3, 4), layers::GlobalAvgPool(), layers::Dense(2)};
  ASSERT_TRUE(res.Build(Shape{1, 8, 8, 3}).ok());
  ASSERT_TRUE(SaveModel(res, Shape{1, 8, 8, 3}, res_dir.path()).ok());
  ASSERT_TRUE(LoadModel(res_dir.path()).ok());
  EditArchitecture(res_dir, [](proto::LayerConfigProto& c) {
    ASSERT_EQ(c.layers(0).class_name(), "ResidualBlock");
    (*c.mutable_layers(0)->mutable_ints())["filters"] = int64_t{1} << 20;
  });
  auto block = LoadModel(res_dir.path());
  EXPECT_EQ(block.status().code(), absl::StatusCode::kResourceExhausted) << block.status();
  EditArchitecture(res_dir, [](proto::LayerConfigProto& c) {
    (*c.mutable_layers(0)->mutable_ints())["filters"] = 5;
    (*c.mutable_layers(2)->mutable_ints())["units"] = 2;
  });
  block = LoadModel(res_dir.path());
  EXPECT_EQ(block.status().code(), absl::StatusCode::kDataLoss) << block.status();
  EXPECT_THAT(block.status().message(), HasSubstr("layer 0 (ResidualBlock) has"));
}

// The input, and every layer's output for one example, are bounded too: LoadModel builds the
// model by running it once on zeros.
TEST(SavedModelTest, ActivationsOverTheLimitAreRefusedBeforeBuilding) {
  ScopedTempDir dir;
  layers::Sequential model{layers::Conv2D(2, 3), layers::Flatten(), layers::Dense(2)};
  ASSERT_TRUE(model.Build(Shape{1, 6, 6, 1}).ok());
  ASSERT_TRUE(SaveModel(model, Shape{4, 6, 6, 1}, dir.path()).ok());
  EXPECT_TRUE(LoadModel(dir.path(), {.max_activation_elements = 36}).ok());
  auto over = LoadModel(dir.path(), {.max_activation_elements = 35});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("the input [4, 6, 6, 1] is over"));
  // 3*3*1*2 + 2 and 32*2 + 2 variable elements.
  EXPECT_TRUE(LoadModel(dir.path(), {.max_parameters = 86}).ok());
  EXPECT_EQ(LoadModel(dir.path(), {.max_parameters = 85}).status().code(),
            absl::StatusCode::kResourceExhausted);
  proto::SavedModelProto saved;
  ASSERT_TRUE(saved.ParseFromString(ReadFile(dir.File("model.pb"))));
  saved.set_input_shape(1, int64_t{1} << 20);
  saved.set_input_shape(2, int64_t{1} << 20);
  dir.Write("model.pb", saved.SerializeAsString());
  over = LoadModel(dir.path());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("max_activation_elements"));
}

// Weights of the right sizes in a nested container name the inner layer; a user's layer with a
// size function is checked like a built-in one, and one without is still bounded when built.
TEST(SavedModelTest, MismatchesNameTheInnermostLayerAndUsersLayersAreChecked) {
  ScopedTempDir dir;
  layers::Sequential model{layers::Dense(4), layers::Sequential{layers::ReLU(), layers::Dense(3)}};
  ASSERT_TRUE(model.Build(Shape{1, 2}).ok());
  ASSERT_TRUE(SaveModel(model, Shape{1, 2}, dir.path()).ok());
  ASSERT_TRUE(LoadModel(dir.path()).ok());
  EditArchitecture(dir, [](proto::LayerConfigProto& c) {
    (*c.mutable_layers(1)->mutable_layers(1)->mutable_ints())["units"] = 7;
  });
  auto nested = LoadModel(dir.path());
  EXPECT_EQ(nested.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(nested.status().message(),
              HasSubstr("layer 1/1 (Dense) has 35 variable elements by its config"));

  ASSERT_TRUE(
      layers::RegisterLayer(
          "TestSizedScale",
          [](const layers::LayerConfig& c) -> absl::StatusOr<std::unique_ptr<layers::Module>> {
            return std::make_unique<Scale>(static_cast<float>(c.floats.at("factor")));
          },
          [](const layers::LayerConfig&, const Shape& input) -> absl::StatusOr<layers::LayerSize> {
            return layers::LayerSize{.parameters = 0, .output_shape = input};
          })
          .ok());
  ScopedTempDir user_dir;
  layers::Sequential with{Scale(2.5f), layers::Dense(2)};
  ASSERT_TRUE(with.Build(Shape{1, 3}).ok());
  ASSERT_TRUE(SaveModel(with, Shape{1, 3}, user_dir.path()).ok());
  EditArchitecture(user_dir, [](proto::LayerConfigProto& c) {
    c.mutable_layers(0)->set_class_name("TestSizedScale");
  });
  auto loaded = LoadModel(user_dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Outputs(with, Shape{2, 3}), Outputs(*loaded->model, Shape{2, 3}));
  EditArchitecture(user_dir, [](proto::LayerConfigProto& c) {
    (*c.mutable_layers(1)->mutable_ints())["units"] = 3;
  });
  EXPECT_EQ(LoadModel(user_dir.path()).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace sluice::train::fit
