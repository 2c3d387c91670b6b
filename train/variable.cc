#include "train/variable.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "train/tape.h"

namespace sluice::train {

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

}  // namespace sluice::train
