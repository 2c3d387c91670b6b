// CudaBackend's cuDNN ops: convolution forward and backward (NHWC
// activations; filters reordered between Keras' HWIO and cuDNN's OHWI), with
// an algorithm chosen once per geometry and direction.

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
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

// The operands and workspace that cudnnFind*Ex times the algorithms on, made with cudaMalloc
// outside the caching allocator (a find is once per geometry; the workspace may be large) and
// freed when the find is done.
class FindScratch {
 public:
  FindScratch() = default;
  FindScratch(const FindScratch&) = delete;
  FindScratch& operator=(const FindScratch&) = delete;
  ~FindScratch() {
    for (void* p : blocks_) cudaFree(p);
  }
  absl::StatusOr<void*> Get(size_t bytes) {
    void* p = nullptr;
    CUDA_RETURN_IF_ERROR(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
    blocks_.push_back(p);
    return p;
  }

 private:
  std::vector<void*> blocks_;
};

// SLUICE_CUDNN_LOG=1: each convolution plan's candidates and choice on stderr, to compare the
// timed choice with the heuristic's (SLUICE_CUDNN_BENCHMARK=0) on a device.
bool LogConvolutionChoices() {
  static const bool log = [] {
    const char* v = std::getenv("SLUICE_CUDNN_LOG");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return log;
}

// Picks the first algorithm (cuDNN sorts them by measured time when timed, else by expected
// speed) that works, fits the workspace limit and, without TF32, multiplies in full fp32.
template <typename Perf>
absl::StatusOr<const Perf*> PickAlgorithm(const std::vector<Perf>& perfs, int returned,
                                          bool allow_tf32, size_t max_workspace,
                                          absl::string_view what) {
  if (LogConvolutionChoices()) {
    std::vector<std::string> listed;
    for (int i = 0; i < returned; ++i) {
      const Perf& p = perfs[i];
      listed.push_back(absl::StrCat(static_cast<int>(p.algo), ":", p.time, "ms:", p.memory,
                                    "B:", static_cast<int>(p.mathType), ":",
                                    p.status == CUDNN_STATUS_SUCCESS ? "ok" : "unusable"));
    }
    std::fputs(
        absl::StrCat("sluice cudnn: ", what, " candidates (algo:time:workspace:math:status) ",
                     absl::StrJoin(listed, " "), "\n")
            .c_str(),
        stderr);
  }
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
  SLUICE_RETURN_IF_ERROR(CastUntimed(t, converted));
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
  if (LogConvolutionChoices()) {
    std::fputs(absl::StrCat("sluice cudnn: plan ", key, ": algorithm ", plan->algorithm, ", ",
                            plan->workspace_bytes, " bytes of workspace\n")
                   .c_str(),
               stderr);
  }
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
  const size_t workspace_limit = options_.max_convolution_workspace_bytes;
  // Timing the algorithms (cudnnFind*Ex) runs them, which a stream being captured into a graph
  // must not: there cuDNN's heuristic picks.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream(), &capturing));
  const bool time_them =
      options_.benchmark_convolutions && capturing == cudaStreamCaptureStatusNone;
  const auto choose = [&](bool find) -> absl::Status {
    size_t max_ws = workspace_limit;
    FindScratch scratch;
    void *x = nullptr, *w = nullptr, *y = nullptr, *ws = nullptr;
    size_t ws_bytes = 0;
    if (find) {
      size_t x_bytes = 0, w_bytes = 0, y_bytes = 0;
      CUDNN_RETURN_IF_ERROR(cudnnGetTensorSizeInBytes(plan.x_desc, &x_bytes));
      CUDNN_RETURN_IF_ERROR(cudnnGetFilterSizeInBytes(plan.w_desc, &w_bytes));
      CUDNN_RETURN_IF_ERROR(cudnnGetTensorSizeInBytes(plan.y_desc, &y_bytes));
      SLUICE_ASSIGN_OR_RETURN(x, scratch.Get(x_bytes));
      SLUICE_ASSIGN_OR_RETURN(w, scratch.Get(w_bytes));
      SLUICE_ASSIGN_OR_RETURN(y, scratch.Get(y_bytes));
      // A constant non-zero pattern, not zeros (which some algorithms run faster on).
      for (auto [p, n] : {std::pair{x, x_bytes}, std::pair{w, w_bytes}, std::pair{y, y_bytes}}) {
        CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0x3c, n, stream()));
      }
      // The timing offers at most Options::max_find_workspace_bytes (256 MiB unless set): the
      // allocation is made for the find alone.
      ws_bytes = std::min(max_ws, options_.max_find_workspace_bytes);
      SLUICE_ASSIGN_OR_RETURN(ws, scratch.Get(ws_bytes));
      max_ws = ws_bytes;
    }
    cudnnMathType_t math = CUDNN_FMA_MATH;
    switch (direction) {
      case ConvDirection::kForward: {
        int count = 0, returned = 0;
        CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_, &count));
        std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(std::max(count, 1));
        if (find) {
          CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionForwardAlgorithmEx(
              cudnn_, plan.x_desc, x, plan.w_desc, w, plan.conv_desc, plan.y_desc, y, count,
              &returned, perfs.data(), ws, ws_bytes));
        } else {
          CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(
              cudnn_, plan.x_desc, plan.w_desc, plan.conv_desc, plan.y_desc, count, &returned,
              perfs.data()));
        }
        SLUICE_ASSIGN_OR_RETURN(
            const cudnnConvolutionFwdAlgoPerf_t* p,
            PickAlgorithm(perfs, returned, tf32, max_ws, "forward convolution"));
        plan.algorithm = static_cast<int>(p->algo);
        math = p->mathType;
        break;
      }
      case ConvDirection::kBackwardData: {
        int count = 0, returned = 0;
        CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn_, &count));
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(std::max(count, 1));
        if (find) {
          CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionBackwardDataAlgorithmEx(
              cudnn_, plan.w_desc, w, plan.y_desc, y, plan.conv_desc, plan.x_desc, x, count,
              &returned, perfs.data(), ws, ws_bytes));
        } else {
          CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
              cudnn_, plan.w_desc, plan.y_desc, plan.conv_desc, plan.x_desc, count, &returned,
              perfs.data()));
        }
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
        if (find) {
          CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionBackwardFilterAlgorithmEx(
              cudnn_, plan.x_desc, x, plan.y_desc, y, plan.conv_desc, plan.w_desc, w, count,
              &returned, perfs.data(), ws, ws_bytes));
        } else {
          CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              cudnn_, plan.x_desc, plan.y_desc, plan.conv_desc, plan.w_desc, count, &returned,
              perfs.data()));
        }
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
  };
  if (time_them) {
    const absl::Status timed = choose(true);
    if (timed.ok()) return timed;
    // Timing takes scratch memory and runs every algorithm; where it fails (out of memory, say),
    // cuDNN's heuristic picks, and the failed call's error is cleared so that the next launch's
    // check does not report it. A sticky error (a kernel faulted) is not cleared by that: it is
    // the error to report, not under the next op's name.
    cudaGetLastError();
    if (const cudaError_t sticky = cudaPeekAtLastError(); sticky != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("timing convolution algorithms failed (", timed.message(),
                       ") with the device in error: ", cudaGetErrorString(sticky)));
    }
    std::fputs(absl::StrCat("CudaBackend: timing convolution algorithms failed (", timed.message(),
                            "); cuDNN's heuristic picks instead\n")
                   .c_str(),
               stderr);
  }
  return choose(false);
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

absl::Status CudaBackend::Conv2DBiasForward(const train::backend::ConvGeometry& geo,
                                            const Tensor& input, const Tensor& filter,
                                            const Tensor& bias, Tensor& output) {
  SLUICE_RETURN_IF_ERROR(Conv2DForward(geo, input, filter, output));
  return AddBias("Conv2DBiasForward", bias, /*relu=*/false, output);
}

absl::Status CudaBackend::Conv2DBiasReluForward(const train::backend::ConvGeometry& geo,
                                                const Tensor& input, const Tensor& filter,
                                                const Tensor& bias, Tensor& output) {
  SLUICE_RETURN_IF_ERROR(Conv2DForward(geo, input, filter, output));
  return AddBias("Conv2DBiasReluForward", bias, /*relu=*/true, output);
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
    SLUICE_RETURN_IF_ERROR(CastUntimed(dx, dx32));
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

}  // namespace sluice::train::backend::cuda
