// CudaBackend's cuDNN ops: convolution forward and backward (NHWC
// activations; filters reordered between Keras' HWIO and cuDNN's OHWI), with
// an algorithm chosen once per geometry and direction, and batch norm.

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cuda/conv_plan.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/cuda_check.h"
#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/strided_index.h"

namespace sluice::train::backend::cuda {
namespace {

float* F(const Tensor& t) { return static_cast<float*>(const_cast<void*>(t.raw_data())); }

cudnnDataType_t CudnnType(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return CUDNN_DATA_HALF;
    case DType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

std::string ConvKey(int direction, DType dtype, const train::backend::ConvGeometry& g) {
  return absl::StrCat(direction, ":", DTypeName(dtype), ":",
                      absl::StrJoin({g.n, g.h, g.w, g.c, g.kh, g.kw, g.o, g.oh, g.ow, g.stride_h,
                                     g.stride_w, g.dilation_h, g.dilation_w, g.pad_top,
                                     g.pad_bottom, g.pad_left, g.pad_right, g.groups},
                                    ","));
}

absl::Status RequireInts(const train::backend::ConvGeometry& g) {
  for (int64_t v : {g.n, g.h + g.pad_top + g.pad_bottom, g.w + g.pad_left + g.pad_right, g.c, g.kh,
                    g.kw, g.o, g.oh, g.ow, g.groups}) {
    if (v > INT_MAX || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Conv2D on CUDA: dimension ", v, " does not fit cuDNN's int sizes"));
    }
  }
  return absl::OkStatus();
}

// Picks the first algorithm (cuDNN sorts them by expected speed) that works,
// fits the workspace limit and, without TF32, multiplies in full fp32.
template <typename Perf>
absl::StatusOr<const Perf*> PickAlgorithm(const std::vector<Perf>& perfs, int returned,
                                          bool allow_tf32, size_t max_workspace,
                                          absl::string_view what) {
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perfs[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > max_workspace) continue;
    if (!allow_tf32 && p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) continue;
    return &p;
  }
  // Why each was passed over: its status (NOT_SUPPORTED for a data type or layout it cannot
  // run), or its workspace.
  std::vector<std::string> why;
  for (int i = 0; i < returned; ++i) {
    why.push_back(perfs[i].status != CUDNN_STATUS_SUCCESS
                      ? cudnnGetErrorString(perfs[i].status)
                      : absl::StrCat(perfs[i].memory, " bytes"));
  }
  return absl::InternalError(absl::StrCat("cuDNN offers no usable ", what, " algorithm (of ",
                                          returned, ": ", absl::StrJoin(why, ", "), ") within a ",
                                          max_workspace, "-byte workspace"));
}

// x [.., C] as the NHWC tensor cuDNN's spatial batch norm reduces over all
// but C: n = the first dim, h = the rest of the rows, w = 1.
struct BnShape {
  int64_t n, h, c;
  int64_t rows() const { return n * h; }
};
BnShape BnShapeOf(const Tensor& x) {
  const int64_t c = x.dim(x.rank() - 1);
  const int64_t rows = c == 0 ? 0 : x.num_elements() / c;
  const int64_t n = x.rank() >= 2 ? x.dim(0) : 1;
  return {n, n == 0 ? 0 : rows / n, c};
}

// Owns the two descriptors a batch norm call needs.
class BnDescriptors {
 public:
  ~BnDescriptors() {
    if (x_ != nullptr) cudnnDestroyTensorDescriptor(x_);
    if (stats_ != nullptr) cudnnDestroyTensorDescriptor(stats_);
  }
  absl::Status Init(const BnShape& s) {
    for (int64_t v : {s.n, s.h, s.c}) {
      if (v > INT_MAX) {
        return absl::InvalidArgumentError(
            absl::StrCat("BatchNorm on CUDA: dimension ", v, " does not fit cuDNN's int sizes"));
      }
    }
    CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&x_));
    CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&stats_));
    CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                                     static_cast<int>(s.n), static_cast<int>(s.c),
                                                     static_cast<int>(s.h), 1));
    CUDNN_RETURN_IF_ERROR(cudnnDeriveBNTensorDescriptor(stats_, x_, CUDNN_BATCHNORM_SPATIAL));
    return absl::OkStatus();
  }
  cudnnTensorDescriptor_t x() const { return x_; }
  cudnnTensorDescriptor_t stats() const { return stats_; }

 private:
  cudnnTensorDescriptor_t x_ = nullptr;
  cudnnTensorDescriptor_t stats_ = nullptr;
};

// Sets up `plan`'s descriptors for `geo` (input, output, filter and convolution) in `dtype`, with
// the math type TF32 allows (16-bit data: tensor cores, float32 sums), and checks that cuDNN
// computes the output the op expects.
absl::Status DescribeConvolution(const train::backend::ConvGeometry& geo, bool tf32, DType dtype,
                                 ConvPlan& plan) {
  const cudnnDataType_t data = CudnnType(dtype);
  plan.half = data != CUDNN_DATA_FLOAT;
  // cuDNN pads both sides alike: the smaller padding goes to cuDNN, the rest
  // is added to the input explicitly (TF's SAME padding with stride 2).
  const int64_t pad_h = std::min(geo.pad_top, geo.pad_bottom);
  const int64_t pad_w = std::min(geo.pad_left, geo.pad_right);
  plan.extra_top = geo.pad_top - pad_h;
  plan.extra_bottom = geo.pad_bottom - pad_h;
  plan.extra_left = geo.pad_left - pad_w;
  plan.extra_right = geo.pad_right - pad_w;
  const int hp = static_cast<int>(geo.h + plan.extra_top + plan.extra_bottom);
  const int wp = static_cast<int>(geo.w + plan.extra_left + plan.extra_right);

  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&plan.x_desc));
  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&plan.y_desc));
  CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&plan.w_desc));
  CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&plan.conv_desc));
  CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(plan.x_desc, CUDNN_TENSOR_NHWC, data,
                                                   static_cast<int>(geo.n), static_cast<int>(geo.c),
                                                   hp, wp));
  CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(
      plan.y_desc, CUDNN_TENSOR_NHWC, data, static_cast<int>(geo.n), static_cast<int>(geo.o),
      static_cast<int>(geo.oh), static_cast<int>(geo.ow)));
  // NHWC filter format is KRSC: OHWI, with C the channels of one group (cuDNN's grouped
  // convolution takes output channel k from the input channels of group k / (o / groups), as
  // ConvGeometry does).
  CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(
      plan.w_desc, data, CUDNN_TENSOR_NHWC, static_cast<int>(geo.o),
      static_cast<int>(geo.c / geo.groups), static_cast<int>(geo.kh), static_cast<int>(geo.kw)));
  // TF and oneDNN convolutions are cross-correlations.
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(
      plan.conv_desc, static_cast<int>(pad_h), static_cast<int>(pad_w),
      static_cast<int>(geo.stride_h), static_cast<int>(geo.stride_w),
      static_cast<int>(geo.dilation_h), static_cast<int>(geo.dilation_w), CUDNN_CROSS_CORRELATION,
      CUDNN_DATA_FLOAT));
  CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolutionGroupCount(plan.conv_desc, static_cast<int>(geo.groups)));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(
      plan.conv_desc,
      plan.half ? CUDNN_TENSOR_OP_MATH : (tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)));

  int on = 0, oc = 0, oh = 0, ow = 0;
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolution2dForwardOutputDim(plan.conv_desc, plan.x_desc,
                                                              plan.w_desc, &on, &oc, &oh, &ow));
  if (on != geo.n || oc != geo.o || oh != geo.oh || ow != geo.ow) {
    return absl::InvalidArgumentError(absl::StrCat("Conv2D on CUDA: cuDNN computes an output of [",
                                                   on, ", ", oh, ", ", ow, ", ", oc,
                                                   "] for this geometry, the op expects [", geo.n,
                                                   ", ", geo.oh, ", ", geo.ow, ", ", geo.o, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

DType CudaBackend::ConvDType() const {
  switch (train::backend::CurrentPrecision()) {
    case train::backend::Precision::kMixedBFloat16:
      return DType::kBFloat16;
    case train::backend::Precision::kMixedFloat16:
      return DType::kFloat16;
    case train::backend::Precision::kFloat32:
      break;
  }
  return DType::kFloat32;
}

absl::StatusOr<Tensor> CudaBackend::ConvOperand(const Tensor& t, DType dtype) {
  if (dtype == DType::kFloat32) return t;
  SLUICE_ASSIGN_OR_RETURN(Tensor converted, Allocate(dtype, t.shape()));
  SLUICE_RETURN_IF_ERROR(Cast(t, converted));
  return converted;
}

absl::StatusOr<const ConvPlan*> CudaBackend::GetConvPlan(ConvDirection direction,
                                                         const train::backend::ConvGeometry& geo,
                                                         DType dtype, const std::string& key) {
  auto it = conv_plans_.find(key);
  if (it != conv_plans_.end()) return it->second.get();
  SLUICE_RETURN_IF_ERROR(RequireInts(geo));
  auto plan = std::make_unique<ConvPlan>();
  SLUICE_RETURN_IF_ERROR(DescribeConvolution(geo, options_.tf32_convolution, dtype, *plan));
  SLUICE_RETURN_IF_ERROR(ChooseConvAlgorithm(direction, *plan));
  SLUICE_ASSIGN_OR_RETURN(plan->workspace_bytes, ConvWorkspaceSize(direction, *plan));
  const ConvPlan* raw = plan.get();
  conv_plans_.emplace(key, std::move(plan));
  return raw;
}

absl::StatusOr<const ConvPlan*> CudaBackend::ConvPlanFor(ConvDirection direction,
                                                         const train::backend::ConvGeometry& geo,
                                                         DType& dtype) {
  dtype = ConvDType();
  const std::string key = ConvKey(static_cast<int>(direction), dtype, geo);
  if (dtype == DType::kFloat32) return GetConvPlan(direction, geo, dtype, key);
  if (!no_half_plan_.contains(key)) {
    absl::StatusOr<const ConvPlan*> half = GetConvPlan(direction, geo, dtype, key);
    if (half.ok()) return half;
    // cuDNN has no 16-bit algorithm for this geometry (a layout or channel count it cannot run
    // in 16 bits): float32 it is, said once.
    no_half_plan_.insert(key);
    const std::string note =
        absl::StrCat("CudaBackend: no ", DTypeName(dtype), " convolution for ", key, " (",
                     half.status().message(), "); running it in float32\n");
    std::fputs(note.c_str(), stderr);
  }
  dtype = DType::kFloat32;
  return GetConvPlan(direction, geo, dtype, ConvKey(static_cast<int>(direction), dtype, geo));
}

absl::Status CudaBackend::ChooseConvAlgorithm(ConvDirection direction, ConvPlan& plan) {
  // 16-bit data runs on the tensor cores whatever TF32 says: every math type is allowed.
  const bool tf32 = options_.tf32_convolution || plan.half;
  const size_t max_ws = options_.max_convolution_workspace_bytes;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  switch (direction) {
    case ConvDirection::kForward: {
      int count = 0, returned = 0;
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_, &count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(std::max(count, 1));
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, plan.x_desc, plan.w_desc,
                                                                   plan.conv_desc, plan.y_desc,
                                                                   count, &returned, perfs.data()));
      SLUICE_ASSIGN_OR_RETURN(const cudnnConvolutionFwdAlgoPerf_t* p,
                              PickAlgorithm(perfs, returned, tf32, max_ws, "forward convolution"));
      plan.algorithm = static_cast<int>(p->algo);
      math = p->mathType;
      break;
    }
    case ConvDirection::kBackwardData: {
      int count = 0, returned = 0;
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn_, &count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(std::max(count, 1));
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          cudnn_, plan.w_desc, plan.y_desc, plan.conv_desc, plan.x_desc, count, &returned,
          perfs.data()));
      SLUICE_ASSIGN_OR_RETURN(
          const cudnnConvolutionBwdDataAlgoPerf_t* p,
          PickAlgorithm(perfs, returned, tf32, max_ws, "backward-data convolution"));
      plan.algorithm = static_cast<int>(p->algo);
      math = p->mathType;
      break;
    }
    case ConvDirection::kBackwardFilter: {
      int count = 0, returned = 0;
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnn_, &count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(std::max(count, 1));
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          cudnn_, plan.x_desc, plan.y_desc, plan.conv_desc, plan.w_desc, count, &returned,
          perfs.data()));
      SLUICE_ASSIGN_OR_RETURN(
          const cudnnConvolutionBwdFilterAlgoPerf_t* p,
          PickAlgorithm(perfs, returned, tf32, max_ws, "backward-filter convolution"));
      plan.algorithm = static_cast<int>(p->algo);
      math = p->mathType;
      break;
    }
  }
  // The algorithm runs with the math type it was listed with (FMA only when
  // TF32 is off).
  if (!tf32) math = CUDNN_FMA_MATH;
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(plan.conv_desc, math));
  return absl::OkStatus();
}

absl::StatusOr<size_t> CudaBackend::ConvWorkspaceSize(ConvDirection direction,
                                                      const ConvPlan& plan) {
  size_t ws = 0;
  switch (direction) {
    case ConvDirection::kForward:
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardWorkspaceSize(
          cudnn_, plan.x_desc, plan.w_desc, plan.conv_desc, plan.y_desc,
          static_cast<cudnnConvolutionFwdAlgo_t>(plan.algorithm), &ws));
      break;
    case ConvDirection::kBackwardData:
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataWorkspaceSize(
          cudnn_, plan.w_desc, plan.y_desc, plan.conv_desc, plan.x_desc,
          static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algorithm), &ws));
      break;
    case ConvDirection::kBackwardFilter:
      CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterWorkspaceSize(
          cudnn_, plan.x_desc, plan.y_desc, plan.conv_desc, plan.w_desc,
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algorithm), &ws));
      break;
  }
  return ws;
}

absl::StatusOr<Tensor> CudaBackend::ConvInput(const ConvPlan& plan,
                                              const train::backend::ConvGeometry& geo,
                                              const Tensor& input, DType dtype) {
  if (plan.extra_top == 0 && plan.extra_bottom == 0 && plan.extra_left == 0 &&
      plan.extra_right == 0) {
    return ConvOperand(input, dtype);
  }
  SLUICE_ASSIGN_OR_RETURN(
      Tensor padded,
      Allocate(DType::kFloat32, Shape{geo.n, geo.h + plan.extra_top + plan.extra_bottom,
                                      geo.w + plan.extra_left + plan.extra_right, geo.c}));
  CUDA_RETURN_IF_ERROR(kernels::PadNhwc(F(input), F(padded), geo.n, geo.h, geo.w, geo.c,
                                        plan.extra_top, plan.extra_bottom, plan.extra_left,
                                        plan.extra_right, stream()));
  return ConvOperand(padded, dtype);
}

absl::StatusOr<Tensor> CudaBackend::ConvWorkspace(const ConvPlan& plan) {
  return Allocate(DType::kUint8, Shape{static_cast<int64_t>(plan.workspace_bytes)});
}

absl::StatusOr<Tensor> CudaBackend::FilterToOhwi(const Tensor& filter) {
  SLUICE_ASSIGN_OR_RETURN(
      Tensor ohwi,
      Allocate(DType::kFloat32, Shape{filter.dim(3), filter.dim(0), filter.dim(1), filter.dim(2)}));
  SLUICE_RETURN_IF_ERROR(Transpose(filter, {3, 0, 1, 2}, ohwi));
  return ohwi;
}

absl::Status CudaBackend::Conv2DForward(const train::backend::ConvGeometry& geo,
                                        const Tensor& input, const Tensor& filter, Tensor& output) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("Conv2DForward", {&input, &filter, &output}));
  if (output.num_elements() == 0) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(Tensor w, FilterToOhwi(filter));
  Tensor y = output;
  DType dtype = DType::kFloat32;
  {
    MutexLock lock(&library_mu_);
    SLUICE_RETURN_IF_ERROR(BindLibrariesLocked());
    SLUICE_ASSIGN_OR_RETURN(const ConvPlan* plan, ConvPlanFor(ConvDirection::kForward, geo, dtype));
    SLUICE_ASSIGN_OR_RETURN(w, ConvOperand(w, dtype));
    if (dtype != DType::kFloat32) {
      SLUICE_ASSIGN_OR_RETURN(y, Allocate(dtype, output.shape()));
    }
    SLUICE_ASSIGN_OR_RETURN(const Tensor x, ConvInput(*plan, geo, input, dtype));
    SLUICE_ASSIGN_OR_RETURN(Tensor ws, ConvWorkspace(*plan));
    const float one = 1.0f, zero = 0.0f;
    CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(
        cudnn_, &one, plan->x_desc, x.raw_data(), plan->w_desc, w.raw_data(), plan->conv_desc,
        static_cast<cudnnConvolutionFwdAlgo_t>(plan->algorithm), ws.raw_data(),
        plan->workspace_bytes, &zero, plan->y_desc, y.raw_data()));
  }
  if (dtype != DType::kFloat32) SLUICE_RETURN_IF_ERROR(Cast(y, output));
  return absl::OkStatus();
}

absl::Status CudaBackend::Conv2DBackwardData(const train::backend::ConvGeometry& geo,
                                             const Tensor& grad_output, const Tensor& filter,
                                             Tensor& grad_input) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("Conv2DBackwardData", {&grad_output, &filter, &grad_input}));
  if (grad_input.num_elements() == 0) return absl::OkStatus();
  if (grad_output.num_elements() == 0) return Fill(grad_input, 0.0f);
  SLUICE_ASSIGN_OR_RETURN(Tensor w, FilterToOhwi(filter));
  MutexLock lock(&library_mu_);
  SLUICE_RETURN_IF_ERROR(BindLibrariesLocked());
  DType dtype = DType::kFloat32;
  SLUICE_ASSIGN_OR_RETURN(const ConvPlan* plan,
                          ConvPlanFor(ConvDirection::kBackwardData, geo, dtype));
  SLUICE_ASSIGN_OR_RETURN(w, ConvOperand(w, dtype));
  SLUICE_ASSIGN_OR_RETURN(const Tensor dy, ConvOperand(grad_output, dtype));
  const bool padded =
      plan->extra_top + plan->extra_bottom + plan->extra_left + plan->extra_right > 0;
  const int64_t hp = geo.h + plan->extra_top + plan->extra_bottom;
  const int64_t wp = geo.w + plan->extra_left + plan->extra_right;
  // What cuDNN writes: grad_input itself, or the padded and/or 16-bit gradient made into it below.
  Tensor dx = grad_input;
  if (padded || dtype != DType::kFloat32) {
    SLUICE_ASSIGN_OR_RETURN(
        dx, Allocate(dtype, padded ? Shape{geo.n, hp, wp, geo.c} : grad_input.shape()));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor ws, ConvWorkspace(*plan));
  const float one = 1.0f, zero = 0.0f;
  CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardData(
      cudnn_, &one, plan->w_desc, w.raw_data(), plan->y_desc, dy.raw_data(), plan->conv_desc,
      static_cast<cudnnConvolutionBwdDataAlgo_t>(plan->algorithm), ws.raw_data(),
      plan->workspace_bytes, &zero, plan->x_desc, dx.raw_data()));
  if (dtype != DType::kFloat32) {
    Tensor dx32 = grad_input;
    if (padded) {
      SLUICE_ASSIGN_OR_RETURN(dx32, Allocate(DType::kFloat32, dx.shape()));
    }
    SLUICE_RETURN_IF_ERROR(Cast(dx, dx32));
    dx = dx32;
  }
  if (padded) {
    // The gradient of the explicit padding is dropped: crop back to [n, h, w, c].
    SLUICE_ASSIGN_OR_RETURN(
        kernels::StridedIndex index,
        MakeStridedIndex(grad_input.shape(), {hp * wp * geo.c, wp * geo.c, geo.c, 1},
                         {0, 0, 0, 0}));
    const int64_t base = (plan->extra_top * wp + plan->extra_left) * geo.c;
    CUDA_RETURN_IF_ERROR(kernels::Gather(F(dx), base, F(grad_input), grad_input.num_elements(),
                                         index, 1.0f, stream()));
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::Conv2DBackwardFilter(const train::backend::ConvGeometry& geo,
                                               const Tensor& input, const Tensor& grad_output,
                                               Tensor& grad_filter) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("Conv2DBackwardFilter", {&input, &grad_output, &grad_filter}));
  if (grad_filter.num_elements() == 0) return absl::OkStatus();
  if (grad_output.num_elements() == 0) return Fill(grad_filter, 0.0f);
  DType dtype = DType::kFloat32;
  Tensor dw;
  {
    MutexLock lock(&library_mu_);
    SLUICE_RETURN_IF_ERROR(BindLibrariesLocked());
    SLUICE_ASSIGN_OR_RETURN(const ConvPlan* plan,
                            ConvPlanFor(ConvDirection::kBackwardFilter, geo, dtype));
    SLUICE_ASSIGN_OR_RETURN(const Tensor dy, ConvOperand(grad_output, dtype));
    SLUICE_ASSIGN_OR_RETURN(dw, Allocate(dtype, Shape{geo.o, geo.kh, geo.kw, geo.c / geo.groups}));
    SLUICE_ASSIGN_OR_RETURN(const Tensor x, ConvInput(*plan, geo, input, dtype));
    SLUICE_ASSIGN_OR_RETURN(Tensor ws, ConvWorkspace(*plan));
    const float one = 1.0f, zero = 0.0f;
    CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(
        cudnn_, &one, plan->x_desc, x.raw_data(), plan->y_desc, dy.raw_data(), plan->conv_desc,
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan->algorithm), ws.raw_data(),
        plan->workspace_bytes, &zero, plan->w_desc, dw.raw_data()));
  }
  if (dtype != DType::kFloat32) {
    SLUICE_ASSIGN_OR_RETURN(Tensor dw32, Allocate(DType::kFloat32, dw.shape()));
    SLUICE_RETURN_IF_ERROR(Cast(dw, dw32));
    dw = dw32;
  }
  return Transpose(dw, {1, 2, 3, 0}, grad_filter);  // OHWI -> HWIO
}

// --- batch norm ------------------------------------------------------------------------------

absl::Status CudaBackend::BatchNormForwardTraining(const Tensor& x, const Tensor& gamma,
                                                   const Tensor& beta, float epsilon, Tensor& y,
                                                   Tensor& mean, Tensor& variance) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormForwardTraining", {&x, &gamma, &beta, &y, &mean, &variance}));
  const BnShape s = BnShapeOf(x);
  if (s.c == 0) return absl::OkStatus();
  if (s.rows() <= 1) {
    // One row: the mean is the row, the variance 0, and y = beta. cuDNN's
    // unbiased running variance would divide by zero.
    if (s.rows() == 1) {
      SLUICE_RETURN_IF_ERROR(Copy(x, mean));
      SLUICE_RETURN_IF_ERROR(Copy(beta, y));
      return Fill(variance, 0.0f);
    }
    SLUICE_RETURN_IF_ERROR(Fill(mean, 0.0f));
    return Fill(variance, 0.0f);
  }
  BnDescriptors d;
  MutexLock lock(&library_mu_);
  SLUICE_RETURN_IF_ERROR(BindLibrariesLocked());
  SLUICE_RETURN_IF_ERROR(d.Init(s));
  // With an averaging factor of 1 the "running" statistics are the batch's;
  // they are read before written (times 1 - factor = 0), so must not hold NaN.
  CUDA_RETURN_IF_ERROR(kernels::Fill(F(mean), s.c, 0.0f, stream()));
  CUDA_RETURN_IF_ERROR(kernels::Fill(F(variance), s.c, 0.0f, stream()));
  const float one = 1.0f, zero = 0.0f;
  CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardTraining(
      cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x(), x.raw_data(), d.x(), y.raw_data(),
      d.stats(), gamma.raw_data(), beta.raw_data(), 1.0, mean.raw_data(), variance.raw_data(),
      static_cast<double>(epsilon), nullptr, nullptr));
  // cuDNN's running variance is unbiased (divides by m - 1); the contract's is
  // the biased one y was normalised with.
  const float m = static_cast<float>(s.rows());
  CUDA_RETURN_IF_ERROR(kernels::Scale(F(variance), (m - 1.0f) / m, F(variance), s.c, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::BatchNormForwardInference(const Tensor& x, const Tensor& gamma,
                                                    const Tensor& beta, const Tensor& mean,
                                                    const Tensor& variance, float epsilon,
                                                    Tensor& y) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormForwardInference", {&x, &gamma, &beta, &mean, &variance, &y}));
  const BnShape s = BnShapeOf(x);
  if (s.c == 0 || s.rows() == 0) return absl::OkStatus();
  BnDescriptors d;
  MutexLock lock(&library_mu_);
  SLUICE_RETURN_IF_ERROR(BindLibrariesLocked());
  SLUICE_RETURN_IF_ERROR(d.Init(s));
  const float one = 1.0f, zero = 0.0f;
  CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardInference(
      cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x(), x.raw_data(), d.x(), y.raw_data(),
      d.stats(), gamma.raw_data(), beta.raw_data(), mean.raw_data(), variance.raw_data(),
      static_cast<double>(epsilon)));
  return absl::OkStatus();
}

absl::Status CudaBackend::BatchNormBackward(const Tensor& x, const Tensor& gamma,
                                            const Tensor& mean, const Tensor& variance,
                                            const Tensor& grad_y, float epsilon,
                                            bool statistics_are_constant, Tensor& grad_x,
                                            Tensor& grad_gamma, Tensor& grad_beta) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("BatchNormBackward", {&x, &gamma, &mean, &variance, &grad_y,
                                                      &grad_x, &grad_gamma, &grad_beta}));
  const BnShape s = BnShapeOf(x);
  if (s.c == 0) return absl::OkStatus();
  if (s.rows() == 0) {
    SLUICE_RETURN_IF_ERROR(Fill(grad_gamma, 0.0f));
    return Fill(grad_beta, 0.0f);
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor inv_std, Allocate(DType::kFloat32, Shape{s.c}));
  CUDA_RETURN_IF_ERROR(kernels::InvStd(F(variance), epsilon, F(inv_std), s.c, stream()));
  SLUICE_ASSIGN_OR_RETURN(Tensor g2, grad_y.Reshape(Shape{s.rows(), s.c}));
  SLUICE_ASSIGN_OR_RETURN(Tensor beta_view, grad_beta.Reshape(Shape{1, s.c}));
  if (statistics_are_constant || s.rows() == 1) {
    // mean and variance are inputs (or, for one row, x - mean is 0 whatever
    // x is): grad_x = g gamma inv_std, grad_gamma = sum g (x - mean) inv_std.
    SLUICE_ASSIGN_OR_RETURN(Tensor xhat_g, Allocate(DType::kFloat32, Shape{s.rows(), s.c}));
    CUDA_RETURN_IF_ERROR(kernels::BatchNormConstantBackward(F(x), F(grad_y), F(gamma), F(mean),
                                                            F(inv_std), F(grad_x), F(xhat_g),
                                                            s.rows(), s.c, stream()));
    // One row in training: x_i moves its mean with it, so grad_x is 0.
    if (!statistics_are_constant) SLUICE_RETURN_IF_ERROR(Fill(grad_x, 0.0f));
    SLUICE_ASSIGN_OR_RETURN(Tensor gamma_view, grad_gamma.Reshape(Shape{1, s.c}));
    SLUICE_RETURN_IF_ERROR(
        Reduce(train::backend::ReduceOp::kSum, xhat_g, {true, false}, 1.0f, gamma_view));
    return Reduce(train::backend::ReduceOp::kSum, g2, {true, false}, 1.0f, beta_view);
  }
  BnDescriptors d;
  MutexLock lock(&library_mu_);
  SLUICE_RETURN_IF_ERROR(BindLibrariesLocked());
  SLUICE_RETURN_IF_ERROR(d.Init(s));
  const float one = 1.0f, zero = 0.0f;
  CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationBackward(
      cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d.x(), x.raw_data(), d.x(),
      grad_y.raw_data(), d.x(), grad_x.raw_data(), d.stats(), gamma.raw_data(),
      grad_gamma.raw_data(), grad_beta.raw_data(), static_cast<double>(epsilon), mean.raw_data(),
      inv_std.raw_data()));
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cuda
