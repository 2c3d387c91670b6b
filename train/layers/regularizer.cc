#include "train/layers/regularizer.h"

#include "core/status_macros.h"
#include "train/ops/arithmetic.h"
#include "train/ops/reduce.h"
#include "train/ops/scalar.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> Regularizer::Penalty(const Tensor& weight) const {
  std::optional<Tensor> total;
  if (l2 != 0) {
    SLUICE_ASSIGN_OR_RETURN(Tensor sq, ops::Square(weight));
    SLUICE_ASSIGN_OR_RETURN(Tensor sum, ops::Sum(sq));
    SLUICE_ASSIGN_OR_RETURN(total, ops::Scale(sum, l2));
  }
  if (l1 != 0) {
    SLUICE_ASSIGN_OR_RETURN(Tensor abs, ops::Abs(weight));
    SLUICE_ASSIGN_OR_RETURN(Tensor sum, ops::Sum(abs));
    SLUICE_ASSIGN_OR_RETURN(Tensor term, ops::Scale(sum, l1));
    if (total) {
      SLUICE_ASSIGN_OR_RETURN(total, ops::Add(*total, term));
    } else {
      total = std::move(term);
    }
  }
  if (!total) {
    return absl::FailedPreconditionError("Regularizer::Penalty: l1 and l2 are both 0");
  }
  return *std::move(total);
}

}  // namespace sluice::train::layers
