#include "train/autodiff/variable.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"

namespace sluice::train::autodiff {

Variable::Variable(const Tensor& initial, std::string name, bool trainable)
    : value_(initial.Clone()), name_(std::move(name)), trainable_(trainable) {}

const Tensor& Variable::value() const {
  if (trainable_) internal::NotifyVariableRead(value_);
  return value_;
}

absl::Status Variable::Assign(const Tensor& values) {
  if (values.dtype() != value_.dtype() || values.shape() != value_.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Variable::Assign: variable '", name_, "' is ", DTypeName(value_.dtype()),
                     value_.shape().DebugString(), ", got ", DTypeName(values.dtype()),
                     values.shape().DebugString()));
  }
  std::memcpy(value_.raw_data(), values.raw_data(), value_.byte_size());
  return absl::OkStatus();
}

std::vector<std::pair<std::string, Tensor>> SnapshotVariables(const std::vector<Variable*>& vars) {
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(vars.size());
  // mutable_value(): a snapshot is not a use the tape should record.
  for (Variable* v : vars) out.emplace_back(v->name(), v->mutable_value().Clone());
  return out;
}

absl::Status AssignVariables(const std::vector<std::pair<std::string, Tensor>>& saved,
                             const std::vector<Variable*>& vars, absl::string_view source) {
  const size_t common = std::min(saved.size(), vars.size());
  for (size_t i = 0; i < common; ++i) {
    const std::string& found_name = saved[i].first;
    const Variable& v = *vars[i];
    if (found_name != v.name()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": variable ", i, ": expected '", v.name(), "' (the model's), found '",
          found_name, "' in the checkpoint: not this model's checkpoint"));
    }
    if (saved[i].second.shape() != v.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": variable ", i, " '", v.name(), "': expected shape ", v.shape().DebugString(),
          " (the model's), found ", saved[i].second.shape().DebugString(), " in the checkpoint"));
    }
  }
  if (saved.size() != vars.size()) {
    const bool model_has_more = vars.size() > saved.size();
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected ", vars.size(), " variables (the model's), found ",
                     saved.size(), " in the checkpoint; the first unmatched is ",
                     model_has_more ? "the model's '" : "the checkpoint's '",
                     model_has_more ? vars[common]->name() : saved[common].first, "'"));
  }
  for (size_t i = 0; i < vars.size(); ++i) SLUICE_RETURN_IF_ERROR(vars[i]->Assign(saved[i].second));
  return absl::OkStatus();
}

}  // namespace sluice::train::autodiff
