#include "train/ops/conv2d.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/require_float32.h"
#include "train/ops/unary_op.h"

namespace sluice::train::ops {

namespace {

// `relu`: max(., 0) after the bias, in the convolution's kernel (a bias is then required).
absl::StatusOr<Tensor> Convolve(const Tensor& input, const Tensor& filter, const Tensor* bias,
                                bool relu, const Conv2DOptions& options) {
  const char* const op = relu ? "Conv2DBiasRelu" : "Conv2D";
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          bias != nullptr ? backend::BackendFor(op, {&input, &filter, bias})
                                          : backend::BackendFor(op, {&input, &filter}));
  // A bfloat16 input is already in the form a backend that reads bfloat16 operands computes from
  // (a batch norm's output under mixed_bfloat16); its gradient is bfloat16 too.
  if (input.dtype() != DType::kBFloat16 || !backend->ReadsBFloat16Operands()) {
    SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(input, "Conv2D", "input"));
  }
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(filter, "Conv2D", "filter"));
  if (options.groups < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Conv2D: groups must be at least 1, not ", options.groups));
  }
  if (input.rank() != 4 || filter.rank() != 4 || input.dim(3) != filter.dim(2) * options.groups) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Conv2D: want input NHWC and filter HWIO with matching channels (the input's = the "
        "filter's third dim times groups, ",
        options.groups, "), got input ", input.shape().DebugString(), " and filter ",
        filter.shape().DebugString()));
  }
  if (filter.dim(3) % options.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Conv2D: the filter's ", filter.dim(3),
                                                   " output channels do not split into ",
                                                   options.groups, " groups"));
  }
  if (bias != nullptr) {
    SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(*bias, "Conv2D", "bias"));
    if (bias->shape() != Shape{filter.dim(3)}) {
      return absl::InvalidArgumentError(
          absl::StrCat("Conv2D: want a bias of shape [", filter.dim(3),
                       "] (the filter's outputs), got ", bias->shape().DebugString()));
    }
  }
  backend::ConvGeometry geo;
  geo.n = input.dim(0), geo.h = input.dim(1), geo.w = input.dim(2), geo.c = input.dim(3);
  geo.kh = filter.dim(0), geo.kw = filter.dim(1), geo.o = filter.dim(3);
  geo.stride_h = options.stride_h, geo.stride_w = options.stride_w;
  geo.dilation_h = options.dilation_h, geo.dilation_w = options.dilation_w;
  geo.groups = options.groups;
  SLUICE_ASSIGN_OR_RETURN(
      Window wh, ComputeWindow(geo.h, geo.kh, geo.stride_h, geo.dilation_h, options.padding,
                               options.pads.top, options.pads.bottom));
  SLUICE_ASSIGN_OR_RETURN(
      Window ww, ComputeWindow(geo.w, geo.kw, geo.stride_w, geo.dilation_w, options.padding,
                               options.pads.left, options.pads.right));
  geo.oh = wh.out, geo.ow = ww.out;
  geo.pad_top = wh.pad_before, geo.pad_bottom = wh.pad_after;
  geo.pad_left = ww.pad_before, geo.pad_right = ww.pad_after;
  const bool bf16 = backend->ReadsBFloat16Operands();
  if (relu && options.keep_compute_dtype && bf16) {
    return absl::InvalidArgumentError(
        "Conv2DBiasRelu: writes float32 (keep_compute_dtype is for a convolution feeding a batch "
        "norm)");
  }
  SLUICE_ASSIGN_OR_RETURN(
      Tensor out,
      backend->Allocate(options.keep_compute_dtype && bf16 ? DType::kBFloat16 : DType::kFloat32,
                        Shape{geo.n, geo.oh, geo.ow, geo.o}));
  if (out.num_elements() == 0) return out;
  // Under mixed_bfloat16 the input is converted once: the forward and the filter gradient read
  // the copy, and the backward keeps it instead of the float32 input.
  SLUICE_ASSIGN_OR_RETURN(Tensor x, backend->ComputeOperand(input));
  if (relu) {
    SLUICE_RETURN_IF_ERROR(backend->Conv2DBiasReluForward(geo, x, filter, *bias, out));
  } else if (bias != nullptr) {
    SLUICE_RETURN_IF_ERROR(backend->Conv2DBiasForward(geo, x, filter, *bias, out));
  } else {
    SLUICE_RETURN_IF_ERROR(backend->Conv2DForward(geo, x, filter, out));
  }
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(op, out));
  std::vector<Tensor> inputs = {input, filter};
  if (bias != nullptr) inputs.push_back(*bias);
  if (autodiff::ShouldRecord(inputs)) {
    // The first layer's input (the images) needs no gradient: skip that pass.
    const bool input_grad = autodiff::ShouldRecord({input});
    autodiff::RecordOperation(
        inputs, out,
        [backend, x, filter, geo, input_grad, input_type = input.dtype(),
         with_bias = bias != nullptr, relu, out = relu ? out : Tensor(),
         precision = backend::CurrentPrecision()](
            const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          // The gradients' kernels run under the forward pass's precision policy, and both read
          // one converted copy of the output gradient.
          backend::ScopedPrecision scope(precision);
          // The gradient before the ReLU: g where out > 0 (relu's backward from its output).
          Tensor gz = g;
          if (relu) {
            SLUICE_ASSIGN_OR_RETURN(gz, internal::ReluGradientFromOutput(*backend, out, g));
          }
          SLUICE_ASSIGN_OR_RETURN(const Tensor gc, backend->ComputeOperand(gz));
          std::vector<std::optional<Tensor>> grads(with_bias ? 3 : 2);
          if (input_grad) {
            SLUICE_ASSIGN_OR_RETURN(grads[0], backend->Allocate(input_type, x.shape()));
            SLUICE_RETURN_IF_ERROR(backend->Conv2DBackwardData(geo, gc, filter, *grads[0]));
          }
          SLUICE_ASSIGN_OR_RETURN(grads[1], backend->Allocate(DType::kFloat32, filter.shape()));
          if (!with_bias) {
            SLUICE_RETURN_IF_ERROR(backend->Conv2DBackwardFilter(geo, x, gc, *grads[1]));
            return grads;
          }
          SLUICE_ASSIGN_OR_RETURN(grads[2], backend->Allocate(DType::kFloat32, Shape{geo.o}));
          SLUICE_RETURN_IF_ERROR(
              backend->Conv2DBackwardFilterBias(geo, x, gc, *grads[1], *grads[2]));
          return grads;
        });
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> Conv2D(const Tensor& input, const Tensor& filter, Conv2DOptions options) {
  return Convolve(input, filter, nullptr, /*relu=*/false, options);
}

absl::StatusOr<Tensor> Conv2D(const Tensor& input, const Tensor& filter, const Tensor& bias,
                              Conv2DOptions options) {
  return Convolve(input, filter, &bias, /*relu=*/false, options);
}

absl::StatusOr<Tensor> Conv2DBiasRelu(const Tensor& input, const Tensor& filter, const Tensor& bias,
                                      Conv2DOptions options) {
  return Convolve(input, filter, &bias, /*relu=*/true, options);
}

}  // namespace sluice::train::ops
