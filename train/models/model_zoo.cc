#include "train/models/model_zoo.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/max_pool.h"
#include "train/layers/relu.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"

namespace sluice::train::models {
namespace {

using layers::Sequential;

std::unique_ptr<layers::Module> Mlp(const ModelShape& shape, uint64_t seed) {
  auto model = std::make_unique<Sequential>();
  model->Add(std::make_unique<layers::Flatten>());
  int64_t in = shape.height * shape.width * shape.channels;
  uint64_t layer_seed = seed;
  for (int64_t units : {256, 128, 100}) {
    model->Add(
        std::make_unique<layers::Dense>(in, units, layers::DenseOptions{.seed = ++layer_seed}));
    model->Add(std::make_unique<layers::ReLU>());
    in = units;
  }
  model->Add(std::make_unique<layers::Dense>(in, shape.classes,
                                             layers::DenseOptions{.seed = ++layer_seed}));
  return model;
}

std::unique_ptr<layers::Module> Cnn(const ModelShape& shape, uint64_t seed) {
  auto model = std::make_unique<Sequential>();
  layers::Conv2DLayerOptions conv{.conv = {.padding = ops::Padding::kSame}};
  conv.seed = seed + 1;
  model->Add(std::make_unique<layers::Conv2D>(shape.channels, 32, 5, 5, conv));
  model->Add(std::make_unique<layers::ReLU>());
  model->Add(std::make_unique<layers::MaxPool>());
  conv.seed = seed + 2;
  model->Add(std::make_unique<layers::Conv2D>(32, 64, 5, 5, conv));
  model->Add(std::make_unique<layers::ReLU>());
  model->Add(std::make_unique<layers::MaxPool>());
  model->Add(std::make_unique<layers::Flatten>());
  // Two 2x2 max pools of valid padding: floor twice.
  const int64_t flat = (shape.height / 2 / 2) * (shape.width / 2 / 2) * 64;
  model->Add(std::make_unique<layers::Dense>(flat, 1024, layers::DenseOptions{.seed = seed + 3}));
  model->Add(std::make_unique<layers::ReLU>());
  model->Add(std::make_unique<layers::Dropout>(0.4f, seed + 4));
  model->Add(
      std::make_unique<layers::Dense>(1024, shape.classes, layers::DenseOptions{.seed = seed + 5}));
  return model;
}

// One stage of a ResNet: `blocks` basic blocks of `filters` channels, the first with `stride`.
struct ResNetStage {
  int64_t filters;
  int64_t stride;
  int blocks;
};

// A ResNet of the zoo: a 3x3 stem of `stem_filters`, then its stages. IsResNet, MakeModel and
// their messages all read this table, so a new ResNet is one row.
struct ResNetArchitecture {
  absl::string_view name;
  int64_t stem_filters;
  std::array<ResNetStage, 3> stages;
};

constexpr ResNetArchitecture kResNets[] = {
    {"resnet-small", 32, {{{32, 1, 1}, {64, 2, 1}, {128, 2, 1}}}},
    // He et al. 2016's CIFAR ResNet-20 (section 4.2: 6n+2 layers, n = 3), with projection
    // shortcuts where the shape changes.
    {"resnet-20", 16, {{{16, 1, 3}, {32, 2, 3}, {64, 2, 3}}}},
};

const ResNetArchitecture* FindResNet(absl::string_view name) {
  for (const ResNetArchitecture& resnet : kResNets) {
    if (resnet.name == name) return &resnet;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<layers::Module>> ResNet(const ModelShape& shape, uint64_t seed,
                                                       bool recompute,
                                                       const ResNetArchitecture& architecture) {
  const int64_t stem_filters = architecture.stem_filters;
  auto model = std::make_unique<Sequential>();
  // Its output in bfloat16 under mixed_bfloat16, as the blocks' convolutions: the batch norm and
  // ReLU after it then read and write bfloat16 too, and so does the first block.
  layers::Conv2DLayerOptions stem{
      .conv = {.padding = ops::Padding::kSame, .keep_compute_dtype = true}, .use_bias = false};
  stem.kernel_initializer = layers::Initializer::kHeNormal;
  stem.seed = seed + 1;
  model->Add(std::make_unique<layers::Conv2D>(shape.channels, stem_filters, 3, 3, stem));
  model->Add(std::make_unique<layers::BatchNorm>(stem_filters));
  model->Add(std::make_unique<layers::ReLU>());
  // The stem's conv and batch norm, recomputed as one segment (their variables keep their names):
  // its input, the image, is small, and the relu keeps only its output, the first block's input.
  if (recompute) SLUICE_RETURN_IF_ERROR(model->RecomputeLayers(0, 2));
  int64_t in = stem_filters;
  uint64_t block_seed = seed + 100;
  for (const ResNetStage& stage : architecture.stages) {
    for (int b = 0; b < stage.blocks; ++b) {
      // Recomputing inside the block keeps its variables (and their names): checkpoints are the
      // same with and without.
      model->Add(std::make_unique<layers::ResidualBlock>(
          in, stage.filters,
          layers::ResidualBlockOptions{
              .stride = b == 0 ? stage.stride : 1, .seed = block_seed, .recompute = recompute}));
      block_seed += 100;
      in = stage.filters;
    }
  }
  model->Add(std::make_unique<layers::GlobalAvgPool>());
  model->Add(
      std::make_unique<layers::Dense>(in, shape.classes, layers::DenseOptions{.seed = seed + 2}));
  return std::unique_ptr<layers::Module>(std::move(model));
}

}  // namespace

std::vector<std::string> ResNetNames() {
  std::vector<std::string> names;
  for (const ResNetArchitecture& resnet : kResNets) names.emplace_back(resnet.name);
  return names;
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names = {"mlp", "cnn"};
  for (std::string& resnet : ResNetNames()) names.push_back(std::move(resnet));
  return names;
}

bool IsResNet(absl::string_view name) { return FindResNet(name) != nullptr; }

absl::StatusOr<std::unique_ptr<layers::Module>> MakeModel(absl::string_view name,
                                                          const ModelShape& shape, uint64_t seed,
                                                          const ModelOptions& options) {
  if (shape.height < 1 || shape.width < 1 || shape.channels < 1 || shape.classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("model input must be at least 1x1x1 with 2 classes, not ", shape.height, "x",
                     shape.width, "x", shape.channels, " with ", shape.classes));
  }
  if (options.recompute && !IsResNet(name)) {
    return absl::InvalidArgumentError(absl::StrCat("recompute wraps residual blocks, and only ",
                                                   absl::StrJoin(ResNetNames(), " and "),
                                                   " have them, not '", name, "'"));
  }
  if (name == "mlp") return Mlp(shape, seed);
  if (name == "cnn") {
    if (shape.height < 4 || shape.width < 4) {
      return absl::InvalidArgumentError("the cnn model needs images of at least 4x4");
    }
    return Cnn(shape, seed);
  }
  if (const ResNetArchitecture* resnet = FindResNet(name); resnet != nullptr) {
    return ResNet(shape, seed, options.recompute, *resnet);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown model '", name, "'; known models: ", absl::StrJoin(ModelNames(), ", ")));
}

}  // namespace sluice::train::models
