#include "train/arithmetic.h"

#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

const char* Name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "Add";
    case BinaryOp::kSub:
      return "Sub";
    case BinaryOp::kMul:
      return "Mul";
    case BinaryOp::kDiv:
      return "Div";
  }
  return "";
}

absl::StatusOr<Tensor> Binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  RETURN_IF_ERROR(RequireFloat32(a, Name(op), "a"));
  RETURN_IF_ERROR(RequireFloat32(b, Name(op), "b"));
  ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(a.shape(), b.shape()));
  const std::vector<int64_t> sa = BroadcastStrides(a.shape(), shape);
  const std::vector<int64_t> sb = BroadcastStrides(b.shape(), shape);
  Tensor out(DType::kFloat32, shape);
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out.data<float>();
  switch (op) {
    case BinaryOp::kAdd:
      ForEachBroadcast(shape, sa, sb, [&](int64_t i, int64_t p, int64_t q) { z[i] = x[p] + y[q]; });
      break;
    case BinaryOp::kSub:
      ForEachBroadcast(shape, sa, sb, [&](int64_t i, int64_t p, int64_t q) { z[i] = x[p] - y[q]; });
      break;
    case BinaryOp::kMul:
      ForEachBroadcast(shape, sa, sb, [&](int64_t i, int64_t p, int64_t q) { z[i] = x[p] * y[q]; });
      break;
    case BinaryOp::kDiv:
      ForEachBroadcast(shape, sa, sb, [&](int64_t i, int64_t p, int64_t q) { z[i] = x[p] / y[q]; });
      break;
  }
  if (ShouldRecord({a, b})) {
    RecordOperation({a, b}, out,
                    [op, a, b, shape, sa,
                     sb](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      Tensor ga = Tensor::Zeros(DType::kFloat32, a.shape());
                      Tensor gb = Tensor::Zeros(DType::kFloat32, b.shape());
                      const float* x = a.data<float>();
                      const float* y = b.data<float>();
                      const float* d = g.data<float>();
                      float* dx = ga.data<float>();
                      float* dy = gb.data<float>();
                      ForEachBroadcast(shape, sa, sb, [&](int64_t i, int64_t p, int64_t q) {
                        switch (op) {
                          case BinaryOp::kAdd:
                            dx[p] += d[i];
                            dy[q] += d[i];
                            break;
                          case BinaryOp::kSub:
                            dx[p] += d[i];
                            dy[q] -= d[i];
                            break;
                          case BinaryOp::kMul:
                            dx[p] += d[i] * y[q];
                            dy[q] += d[i] * x[p];
                            break;
                          case BinaryOp::kDiv:
                            dx[p] += d[i] / y[q];
                            dy[q] -= d[i] * x[p] / (y[q] * y[q]);
                            break;
                        }
                      });
                      return std::vector<std::optional<Tensor>>{ga, gb};
                    });
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kAdd, a, b);
}
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kSub, a, b);
}
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kMul, a, b);
}
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kDiv, a, b);
}

}  // namespace sluice::train
