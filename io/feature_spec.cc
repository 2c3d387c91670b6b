#include "io/feature_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

bool IsFeatureDType(DType dtype) {
  return dtype == DType::kInt64 || dtype == DType::kFloat32 || dtype == DType::kBytes;
}

absl::Status CheckDType(absl::string_view name, DType dtype) {
  if (IsFeatureDType(dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "feature '%s': dtype %s is not one of int64, float32, bytes (the tf.train.Feature kinds)",
      name, DTypeName(dtype)));
}

absl::Status CheckShape(absl::string_view name, const Shape& shape) {
  // Bounded so that element counts (and byte sizes) cannot overflow.
  constexpr int64_t kMaxElements = int64_t{1} << 48;
  int64_t n = 1;
  for (int64_t d : shape.dims()) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s': shape %s has a negative dimension", name, shape.DebugString()));
    }
    if (d > 0 && n > kMaxElements / d) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s': shape %s has too many elements", name, shape.DebugString()));
    }
    n *= d;
  }
  return absl::OkStatus();
}

absl::Status CheckEntry(absl::string_view name, const FeatureConfig& config, bool sequence) {
  if (const auto* var = std::get_if<VarLenFeature>(&config)) return CheckDType(name, var->dtype);
  const auto& fixed = std::get<FixedLenFeature>(config);
  SLUICE_RETURN_IF_ERROR(CheckDType(name, fixed.dtype));
  SLUICE_RETURN_IF_ERROR(CheckShape(name, fixed.shape));
  if (!sequence && fixed.allow_missing) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "feature '%s': allow_missing applies to sequence features only; use default_value", name));
  }
  if (!fixed.default_value.has_value()) return absl::OkStatus();
  if (sequence) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sequence feature '%s': default_value is not supported for sequence features "
        "(use allow_missing for an absent feature_list)",
        name));
  }
  const Tensor& d = *fixed.default_value;
  if (d.dtype() != fixed.dtype || d.shape() != fixed.shape) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "feature '%s': default value is %s%s, the spec wants %s%s", name, DTypeName(d.dtype()),
        d.shape().DebugString(), DTypeName(fixed.dtype), fixed.shape.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

DType ConfigDType(const FeatureConfig& config) {
  return std::visit([](const auto& c) { return c.dtype; }, config);
}

absl::Status ValidateSpec(const FeatureSpec& spec) {
  return internal::IndexSpec(spec, /*sequence=*/false).status();
}

absl::Status ValidateSequenceSpec(const FeatureSpec& spec) {
  return internal::IndexSpec(spec, /*sequence=*/true).status();
}

namespace internal {

absl::StatusOr<FeatureIndex> IndexSpec(const FeatureSpec& spec, bool sequence) {
  for (const auto& [name, config] : spec.features) {
    SLUICE_RETURN_IF_ERROR(CheckEntry(name, config, sequence));
  }
  return FeatureIndex::Build(spec);  // Also finds duplicate names.
}

absl::StatusOr<FeatureIndex> FeatureIndex::Build(const FeatureSpec& spec) {
  FeatureIndex index;
  index.sorted_.reserve(spec.features.size());
  for (size_t i = 0; i < spec.features.size(); ++i) {
    index.sorted_.emplace_back(spec.features[i].first, static_cast<int>(i));
  }
  std::sort(index.sorted_.begin(), index.sorted_.end());
  for (size_t i = 1; i < index.sorted_.size(); ++i) {
    if (index.sorted_[i].first == index.sorted_[i - 1].first) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' appears twice in the spec (entries %d and %d)", index.sorted_[i].first,
          index.sorted_[i - 1].second, index.sorted_[i].second));
    }
  }
  if (index.sorted_.size() > kLinearMax) {
    index.by_name_.reserve(index.sorted_.size());
    for (size_t i = 0; i < index.sorted_.size(); ++i) index.by_name_[index.sorted_[i].first] = i;
  }
  return index;
}

int FeatureIndex::FindSlow(absl::string_view name, size_t* hint) const {
  if (sorted_.size() <= kLinearMax) {
    for (size_t i = 0; i < sorted_.size(); ++i) {
      if (sorted_[i].first == name) {
        *hint = i + 1;
        return sorted_[i].second;
      }
    }
    return -1;
  }
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return -1;
  *hint = it->second + 1;
  return sorted_[it->second].second;
}

}  // namespace internal
}  // namespace sluice
