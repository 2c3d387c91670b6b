#include "train/ops/pool.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {
namespace {

absl::StatusOr<Tensor> Pool(backend::PoolAlgorithm algorithm, const char* name,
                            const Tensor& input_in, const Pool2DOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor input, AutoCast(input_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(input, name, "input"));
  if (input.rank() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": want NHWC input, got ", input.shape().DebugString()));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(name, {&input}));
  backend::PoolGeometry geo;
  geo.algorithm = algorithm;
  geo.n = input.dim(0), geo.h = input.dim(1), geo.w = input.dim(2), geo.c = input.dim(3);
  geo.window_h = options.window_h, geo.window_w = options.window_w;
  geo.stride_h = options.stride_h, geo.stride_w = options.stride_w;
  SLUICE_ASSIGN_OR_RETURN(
      Window wh, ComputeWindow(geo.h, options.window_h, options.stride_h, 1, options.padding,
                               options.pads.top, options.pads.bottom));
  SLUICE_ASSIGN_OR_RETURN(
      Window ww, ComputeWindow(geo.w, options.window_w, options.stride_w, 1, options.padding,
                               options.pads.left, options.pads.right));
  geo.oh = wh.out, geo.ow = ww.out;
  geo.pad_top = wh.pad_before, geo.pad_bottom = wh.pad_after;
  geo.pad_left = ww.pad_before, geo.pad_right = ww.pad_after;
  SLUICE_ASSIGN_OR_RETURN(Tensor out,
                          backend->Allocate(DType::kFloat32, Shape{geo.n, geo.oh, geo.ow, geo.c}));
  if (out.num_elements() == 0) return out;
  SLUICE_ASSIGN_OR_RETURN(Tensor workspace, backend->Pool2DForward(geo, input, out));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(name, out));
  if (autodiff::ShouldRecord({input})) {
    autodiff::RecordOperation(
        {input}, out,
        [backend, geo, input, out,
         workspace](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor g_in, backend->Allocate(DType::kFloat32, input.shape()));
          SLUICE_RETURN_IF_ERROR(backend->Pool2DBackward(geo, input, out, workspace, g, g_in));
          return std::vector<std::optional<Tensor>>{g_in};
        });
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> MaxPool2D(const Tensor& input, Pool2DOptions options) {
  return Pool(backend::PoolAlgorithm::kMax, "MaxPool2D", input, options);
}

absl::StatusOr<Tensor> AvgPool2D(const Tensor& input, Pool2DOptions options) {
  return Pool(backend::PoolAlgorithm::kAvgExcludePadding, "AvgPool2D", input, options);
}

}  // namespace sluice::train::ops
