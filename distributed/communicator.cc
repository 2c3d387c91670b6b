#include "distributed/communicator.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::distributed {

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

absl::StatusOr<AllReduceShape> CheckAllReduceTensors(const std::vector<Tensor>& tensors,
                                                     ReduceOp op) {
  AllReduceShape shape;
  if (tensors.empty()) return shape;
  shape.dtype = tensors[0].dtype();
  if (shape.dtype != DType::kFloat32 && shape.dtype != DType::kInt32 &&
      shape.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all-reduce takes float32, int32 or int64 tensors, got ", DTypeName(shape.dtype)));
  }
  if (op == ReduceOp::kMean && shape.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat("all-reduce (mean) takes float32 tensors, got ", DTypeName(shape.dtype)));
  }
  for (const Tensor& t : tensors) {
    if (t.dtype() != shape.dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("all-reduce: the tensors of one call share a dtype, got ",
                       DTypeName(shape.dtype), " and ", DTypeName(t.dtype())));
    }
    shape.elements += t.num_elements();
  }
  shape.bytes = shape.elements * static_cast<int64_t>(DTypeSize(shape.dtype));
  return shape;
}

absl::Status Communicator::AllReduce(std::vector<Tensor> tensors, ReduceOp op) {
  SLUICE_ASSIGN_OR_RETURN(PendingCollective pending, StartAllReduce(std::move(tensors), op));
  return pending.Wait();
}

}  // namespace sluice::distributed
