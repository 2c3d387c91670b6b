#include "train/recipes/image_model.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/iterator.h"
#include "train/models/model_zoo.h"

namespace sluice::train::recipes {

absl::StatusOr<ImageModel> MakeImageModel(const ImageModelOptions& options,
                                          const LabeledImages& data) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> first, data.test.MakeIterator()->GetNext());
  if (!first) return absl::NotFoundError(absl::StrCat("no test records in ", data.test_source));
  const Shape& shape = (*first)[0].shape();
  ImageModel model{.input_shape = Shape{1, shape[1], shape[2], shape[3]}};
  SLUICE_ASSIGN_OR_RETURN(
      model.module,
      models::MakeModel(
          options.name,
          {.height = shape[1], .width = shape[2], .channels = shape[3], .classes = data.classes},
          options.seed, {.recompute = options.recompute}));
  return model;
}

}  // namespace sluice::train::recipes
