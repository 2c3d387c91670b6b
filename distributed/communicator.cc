#include "distributed/communicator.h"

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

absl::Status Communicator::AllReduce(std::vector<Tensor> tensors, ReduceOp op) {
  SLUICE_ASSIGN_OR_RETURN(PendingCollective pending, StartAllReduce(std::move(tensors), op));
  return pending.Wait();
}

}  // namespace sluice::distributed
