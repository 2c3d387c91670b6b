#include "train/recipes/image_model.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/iterator.h"
#include "train/import/onnx_import.h"
#include "train/layers/dense.h"
#include "train/layers/dropout.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/model.h"
#include "train/models/model_zoo.h"

namespace sluice::train::recipes {
namespace {

// The base of options.base_onnx cut at its last global average pooling, and the guide's head.
absl::Status MakeTransferModel(const ImageModelOptions& options, const Shape& images,
                               int64_t classes, ImageModel& out) {
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<layers::Model> imported,
      importing::ImportOnnx(options.base_onnx, {.height = images[1], .width = images[2]}));
  const Shape& takes = imported->inputs()[0].shape();
  if (takes.rank() != 4 || takes.dim(3) != images[3]) {
    return absl::InvalidArgumentError(absl::StrCat(options.base_onnx, ": the base takes inputs ",
                                                   takes.DebugString(), "; the images have ",
                                                   images[3], " channel(s)"));
  }
  const layers::Model::Step* pool = nullptr;
  for (const layers::Model::Step& step : imported->steps()) {
    if (dynamic_cast<layers::GlobalAvgPool*>(step.layer) != nullptr) pool = &step;
  }
  if (pool == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.base_onnx, ": the base has no global average pooling to cut its top at"));
  }
  SLUICE_ASSIGN_OR_RETURN(layers::SymbolicTensor features, imported->LayerOutput(pool->name));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<layers::Model> base,
                          layers::Model::Make(imported->inputs(), {features}, "base"));
  // Keras' transfer-learning guide's head.
  const uint64_t seed = options.seed;
  layers::SymbolicTensor x = layers::Apply(
      layers::Dense(256, layers::Activation::kRelu, {.seed = seed}), features, "head_dense");
  x = layers::Apply(layers::Dropout(0.5f, seed + 2), x, "head_dropout");
  x = layers::Apply(layers::Dense(classes, layers::DenseOptions{.seed = seed + 3}), x, "logits");
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<layers::Model> model,
                          layers::Model::Make(imported->inputs(), {x}, "transfer"));
  out.module = std::move(model);
  out.base = std::move(base);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImageModel> MakeImageModel(const ImageModelOptions& options,
                                          const LabeledImages& data) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> first, data.test.MakeIterator()->GetNext());
  if (!first) return absl::NotFoundError(absl::StrCat(kNoTestRecords, data.test_source));
  const Shape& shape = (*first)[0].shape();
  ImageModel model{.input_shape = Shape{1, shape[1], shape[2], shape[3]}};
  if (!options.base_onnx.empty()) {
    SLUICE_RETURN_IF_ERROR(MakeTransferModel(options, shape, data.classes, model));
    return model;
  }
  SLUICE_ASSIGN_OR_RETURN(
      model.module,
      models::MakeModel(
          options.name,
          {.height = shape[1], .width = shape[2], .channels = shape[3], .classes = data.classes},
          options.seed, {.recompute = options.recompute}));
  return model;
}

}  // namespace sluice::train::recipes
