#include "train/matmul.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "train/broadcast.h"
#include "train/dnnl_engine.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

using dnnl::memory;

// A [rows, cols] view of a row-major tensor stored as [cols, rows] when
// `transposed`.
memory::desc Desc(int64_t rows, int64_t cols, bool transposed) {
  return memory::desc({rows, cols}, memory::data_type::f32,
                      transposed ? memory::dims{1, rows} : memory::dims{cols, 1});
}

}  // namespace

absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b, MatMulOptions options) {
  RETURN_IF_ERROR(RequireFloat32(a, "MatMul", "a"));
  RETURN_IF_ERROR(RequireFloat32(b, "MatMul", "b"));
  if (a.rank() != 2 || b.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("MatMul: want rank-2 operands, got ",
                                                   a.shape().DebugString(), " and ",
                                                   b.shape().DebugString()));
  }
  const bool ta = options.transpose_a, tb = options.transpose_b;
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  if (k != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("MatMul: inner dimensions differ: ", a.shape().DebugString(), (ta ? "^T" : ""),
                     " x ", b.shape().DebugString(), (tb ? "^T" : "")));
  }
  Tensor out(DType::kFloat32, Shape{m, n});
  if (m * n > 0) {
    if (k == 0) {
      std::fill_n(out.data<float>(), m * n, 0.0f);
    } else {
      const dnnl::engine& engine = CpuEngine();
      memory::desc a_md = Desc(m, k, ta), b_md = Desc(k, n, tb), c_md = Desc(m, n, false);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
      memory a_mem(a_md, engine, const_cast<void*>(a.raw_data()));
      memory b_mem(b_md, engine, const_cast<void*>(b.raw_data()));
      memory c_mem(c_md, engine, out.raw_data());
      dnnl::stream stream(engine);
      dnnl::matmul(pd).execute(
          stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
      stream.wait();
    }
  }
  if (ShouldRecord({a, b})) {
    RecordOperation(
        {a, b}, out,
        [a, b, ta, tb](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          // dA = g op(b)^T, dB = op(a)^T g, each laid out like its operand.
          ASSIGN_OR_RETURN(Tensor ga, ta ? MatMul(b, g, {tb, true}) : MatMul(g, b, {false, !tb}));
          ASSIGN_OR_RETURN(Tensor gb, tb ? MatMul(g, a, {true, ta}) : MatMul(a, g, {!ta, false}));
          return std::vector<std::optional<Tensor>>{ga, gb};
        });
  }
  return out;
}

}  // namespace sluice::train
