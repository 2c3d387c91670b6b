#include "train/layers/reshape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/layers/parameter_limit.h"
#include "train/ops/reshape.h"

namespace sluice::train::layers {

absl::StatusOr<Shape> Reshape::OutputShape(const std::vector<int64_t>& target_shape,
                                           const Shape& input_shape) {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("Reshape: cannot reshape input ",
                                                   input_shape.DebugString(), " to [batch, ",
                                                   absl::StrJoin(target_shape, ", "), "]: ", why));
  };
  if (input_shape.rank() < 1) return refuse("the input has no batch dimension");
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target_shape.size(); ++i) {
    if (target_shape[i] == -1) {
      if (inferred >= 0) return refuse("more than one -1");
      inferred = static_cast<int>(i);
    } else if (target_shape[i] < 1) {
      return refuse("its entries are -1 or at least 1");
    } else {
      known = SaturatingProduct({known, target_shape[i]});
    }
  }
  const int64_t per_example = SaturatingProduct(input_shape.dims().subspan(1));
  std::vector<int64_t> dims = {input_shape.dim(0)};
  dims.insert(dims.end(), target_shape.begin(), target_shape.end());
  if (inferred >= 0) {
    if (per_example % known != 0) {
      return refuse(absl::StrCat(per_example, " values per example do not divide by ", known));
    }
    dims[inferred + 1] = per_example / known;
  } else if (known != per_example) {
    return refuse(absl::StrCat(per_example, " values per example, not ", known));
  }
  absl::StatusOr<Shape> shape = Shape::FromUntrustedDims(dims);
  if (!shape.ok()) return refuse(shape.status().message());
  return shape;
}

absl::StatusOr<Tensor> Reshape::Forward(const Tensor& input, bool) {
  SLUICE_ASSIGN_OR_RETURN(const Shape shape, OutputShape(target_shape_, input.shape()));
  return ops::Reshape(input, std::vector<int64_t>(shape.dims().begin(), shape.dims().end()));
}

absl::StatusOr<LayerConfig> Reshape::GetConfig() {
  LayerConfig config{.class_name = "Reshape",
                     .ints = {{"rank", static_cast<int64_t>(target_shape_.size())}}};
  for (size_t i = 0; i < target_shape_.size(); ++i) {
    config.ints[absl::StrCat("dim_", i)] = target_shape_[i];
  }
  return config;
}

}  // namespace sluice::train::layers
