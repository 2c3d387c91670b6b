#include "train/models/model_zoo.h"

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"

namespace sluice::train::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int64_t CountParameters(layers::Module& model) {
  int64_t total = 0;
  for (autodiff::Variable* v : model.TrainableVariables()) total += v->shape().num_elements();
  return total;
}

// Parameter counts a Keras user can recompute from the published architectures.
TEST(ModelsTest, MlpHasTheSpecifiedLayers) {
  auto model = MakeModel("mlp", {});
  ASSERT_TRUE(model.ok()) << model.status();
  // 784*256+256 + 256*128+128 + 128*100+100 + 100*10+10
  EXPECT_EQ(CountParameters(**model), 200960 + 32896 + 12900 + 1010);
}

TEST(ModelsTest, CnnIsTheTensorFlowTutorialModel) {
  auto model = MakeModel("cnn", {});
  ASSERT_TRUE(model.ok()) << model.status();
  // conv 5x5x1x32+32, conv 5x5x32x64+64, dense 3136x1024+1024, dense 1024x10+10
  EXPECT_EQ(CountParameters(**model), 832 + 51264 + 3212288 + 10250);
}

// Convolutions without bias (batch norm follows), two batch-norm parameters per channel.
TEST(ModelsTest, ResNetSmallHasOneBlockPerStage) {
  auto model = MakeModel("resnet-small", {});
  ASSERT_TRUE(model.ok()) << model.status();
  // stem 3x3x1x32 + bn; block 32: 2x(3x3x32x32 + bn); block 64/2: 3x3x32x64, 3x3x64x64,
  // projection 1x1x32x64, 3 bn; block 128/2 likewise; dense 128x10+10.
  EXPECT_EQ(CountParameters(**model), (288 + 64) + 2 * (9216 + 64) +
                                          (18432 + 36864 + 2048 + 3 * 128) +
                                          (73728 + 147456 + 8192 + 3 * 256) + 1290);
}

TEST(ModelsTest, ResNet20IsHeEtAlsCifarModel) {
  auto model = MakeModel("resnet-20", {});
  ASSERT_TRUE(model.ok()) << model.status();
  // stem 3x3x1x16 + bn; 3 blocks of 16; 32/2 (with projection) + 2 blocks of 32; 64/2 + 2 of 64;
  // dense 64x10+10: 0.27 M, as the paper's table 6 says.
  const int64_t block16 = 2 * (2304 + 32), block32 = 2 * (9216 + 64), block64 = 2 * (36864 + 128);
  EXPECT_EQ(CountParameters(**model), (144 + 32) + 3 * block16 + (4608 + 9216 + 512 + 3 * 64) +
                                          2 * block32 + (18432 + 36864 + 2048 + 3 * 128) +
                                          2 * block64 + 650);
  EXPECT_EQ(CountParameters(**model), 272186);
  auto* seq = dynamic_cast<layers::Sequential*>(model->get());
  ASSERT_NE(seq, nullptr);
  std::vector<bool> projections;
  for (size_t i = 0; i < seq->size(); ++i) {
    auto* block = dynamic_cast<layers::ResidualBlock*>(&seq->module(i));
    if (block != nullptr) projections.push_back(block->has_projection());
  }
  // Nine blocks (19 convolutions with the stem), projections where the stage starts.
  EXPECT_THAT(projections,
              ElementsAre(false, false, false, true, false, false, true, false, false));
}

TEST(ModelsTest, ModelsMapABatchToLogits) {
  for (const std::string& name : ModelNames()) {
    auto model = MakeModel(name, {.height = 28, .width = 28, .channels = 1, .classes = 10}, 3);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    Tensor images = Tensor::Zeros(DType::kFloat32, Shape{2, 28, 28, 1});
    for (int64_t i = 0; i < images.num_elements(); ++i) images.data<float>()[i] = (i % 7) / 7.0f;
    for (bool training : {true, false}) {
      auto logits = (*model)->Forward(images, training);
      ASSERT_TRUE(logits.ok()) << name << ": " << logits.status();
      EXPECT_EQ(logits->shape(), (Shape{2, 10})) << name;
    }
  }
}

TEST(ModelsTest, SameSeedSameWeights) {
  auto a = MakeModel("cnn", {}, 5), b = MakeModel("cnn", {}, 5), c = MakeModel("cnn", {}, 6);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto va = (*a)->Variables(), vb = (*b)->Variables(), vc = (*c)->Variables();
  ASSERT_EQ(va.size(), vb.size());
  EXPECT_TRUE(va[0]->value().Equals(vb[0]->value()));
  EXPECT_FALSE(va[0]->value().Equals(vc[0]->value()));
}

TEST(ModelsTest, VariableNamesAreUniqueForCheckpoints) {
  auto model = MakeModel("resnet-small", {});
  ASSERT_TRUE(model.ok());
  std::set<std::string> names;
  for (autodiff::Variable* v : (*model)->Variables())
    EXPECT_TRUE(names.insert(v->name()).second) << v->name();
  EXPECT_GT((*model)->Variables().size(),
            (*model)->TrainableVariables().size());  // BN moving stats
}

TEST(ModelsTest, UnknownNameListsTheKnownOnes) {
  auto model = MakeModel("vgg", {});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("unknown model 'vgg'"));
  EXPECT_THAT(model.status().message(), HasSubstr("mlp, cnn, resnet-small"));
}

class RecomputeTest : public ::testing::TestWithParam<std::pair<const char*, int>> {};

TEST_P(RecomputeTest, CoversTheStemAndEveryResidualBlockAndTrainsTheSame) {
  const auto [name, expected_blocks] = GetParam();
  const ModelShape shape{.height = 8, .width = 8, .channels = 1, .classes = 3};
  auto plain = MakeModel(name, shape, 5);
  auto recomputed = MakeModel(name, shape, 5, {.recompute = true});
  ASSERT_TRUE(plain.ok() && recomputed.ok());
  auto* seq = dynamic_cast<layers::Sequential*>(recomputed->get());
  ASSERT_NE(seq, nullptr);
  // The stem's conv and batch norm are one recomputed segment; each block recomputes inside.
  EXPECT_THAT(seq->recomputed_segments(), ElementsAre(std::pair<size_t, size_t>{0, 2}));
  int blocks = 0;
  for (size_t i = 0; i < seq->size(); ++i) {
    auto* block = dynamic_cast<layers::ResidualBlock*>(&seq->module(i));
    if (block != nullptr) blocks += block->recompute();
  }
  EXPECT_EQ(blocks, expected_blocks);
  // The same variables under the same names: checkpoints are interchangeable.
  std::vector<autodiff::Variable*> a = (*plain)->Variables(), b = (*recomputed)->Variables();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]->name(), b[i]->name());
    EXPECT_TRUE(a[i]->mutable_value().Equals(b[i]->mutable_value())) << a[i]->name();
  }
  // Two steps of the same gradients, bit for bit (the moving statistics move alike).
  const Tensor images = testing::RandomTensor({4, 8, 8, 1}, 2);
  for (int step = 0; step < 2; ++step) {
    std::vector<std::vector<std::optional<Tensor>>> grads;
    for (auto* model : {&*plain, &*recomputed}) {
      autodiff::Tape tape;
      absl::StatusOr<Tensor> logits = (*model)->Forward(images, /*training=*/true);
      ASSERT_TRUE(logits.ok()) << logits.status();
      auto g = tape.Gradient(*logits, (*model)->TrainableVariables());
      ASSERT_TRUE(g.ok()) << g.status();
      grads.push_back(*std::move(g));
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (size_t i = 0; i < grads[0].size(); ++i) {
      ASSERT_TRUE(grads[0][i] && grads[1][i]) << i;
      EXPECT_TRUE(grads[0][i]->Equals(*grads[1][i])) << step << ": " << a[i]->name();
    }
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i]->mutable_value().Equals(b[i]->mutable_value())) << a[i]->name();
  }
}

INSTANTIATE_TEST_SUITE_P(ResNets, RecomputeTest,
                         ::testing::Values(std::pair<const char*, int>{"resnet-small", 3},
                                           std::pair<const char*, int>{"resnet-20", 9}));

TEST(ModelsTest, RecomputeNeedsResidualBlocks) {
  EXPECT_TRUE(IsResNet("resnet-small") && IsResNet("resnet-20"));
  EXPECT_THAT(ResNetNames(), ElementsAre("resnet-small", "resnet-20"));
  for (const char* name : {"mlp", "cnn"}) {
    EXPECT_FALSE(IsResNet(name));
    auto model = MakeModel(name, {}, 0, {.recompute = true});
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(model.status().message(), HasSubstr("resnet-small")) << name;
  }
}

}  // namespace
}  // namespace sluice::train::models
