#include "train/recipes/augmentation.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/random_flip.h"
#include "ops/random_translation.h"
#include "ops/random_zoom.h"
#include "ops/rescaling.h"

namespace sluice::train::recipes {

std::string AugmentationName(Augmentation augmentation) {
  switch (augmentation) {
    case Augmentation::kNone:
      return "none";
    case Augmentation::kPadCrop:
      return "pad-crop";
    case Augmentation::kKeras:
      return "keras";
  }
  return "?";
}

absl::StatusOr<Augmentation> AugmentationFromName(absl::string_view name) {
  for (Augmentation a : {Augmentation::kNone, Augmentation::kPadCrop, Augmentation::kKeras}) {
    if (name == AugmentationName(a)) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("augmentation takes none, pad-crop or keras, not '", name, "'"));
}

absl::StatusOr<Dataset> KerasAugmentation(Dataset batches, KerasAugmentationOptions options) {
  const Rescaling rescaling(options.rescale);
  const RandomFlip flip(RandomFlip::Mode::kHorizontal);
  SLUICE_ASSIGN_OR_RETURN(const RandomTranslation translate, RandomTranslation::Create(0.1, 0.1));
  SLUICE_ASSIGN_OR_RETURN(const RandomZoom zoom, RandomZoom::Create(0.1));
  return batches
      .Map(
          [=](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
            if (options.augment) {
              SLUICE_ASSIGN_OR_RETURN(e[0], flip.Apply(e[0], c.seed));
              SLUICE_ASSIGN_OR_RETURN(e[0], translate.Apply(e[0], c.seed));
              SLUICE_ASSIGN_OR_RETURN(e[0], zoom.Apply(e[0], c.seed));
            }
            if (options.rescale != 1) {
              SLUICE_ASSIGN_OR_RETURN(e[0], rescaling.Apply(e[0]));
            }
            return e;
          },
          {.num_parallel_calls = kAutotune})
      .Prefetch();
}

}  // namespace sluice::train::recipes
