// Elementwise kernels: fill, broadcast binary ops, gathers, activations, casts,
// dropout and the pointwise parts of batch norm and max backward. All are
// grid-stride loops over the output.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cmath>
#include <type_traits>

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"
#include "train/backend/dropout_draw.h"

namespace sluice::train::backend::cuda::kernels {
namespace {

__global__ void FillKernel(float* p, int64_t n, float value) {
  SLUICE_GRID_LOOP(i, n) { p[i] = value; }
}

__global__ void AxpbyKernel(float alpha, const float* x, float beta, float* y, int64_t n) {
  SLUICE_GRID_LOOP(i, n) { y[i] = alpha * x[i] + beta * y[i]; }
}

// Whether maximum (minimum) picks x: on ties and when x is NaN, as on the CPU.
__device__ inline bool PicksA(bool maximum, float x, float y) {
  return (maximum ? x >= y : x <= y) || x != x;
}

template <BinaryKind kOp>
__device__ inline float Apply(float x, float y) {
  if constexpr (kOp == BinaryKind::kAdd) return x + y;
  if constexpr (kOp == BinaryKind::kSub) return x - y;
  if constexpr (kOp == BinaryKind::kMul) return x * y;
  if constexpr (kOp == BinaryKind::kDiv) return x / y;
  if constexpr (kOp == BinaryKind::kMaximum) return PicksA(true, x, y) ? x : y;
  if constexpr (kOp == BinaryKind::kMinimum) return PicksA(false, x, y) ? x : y;
  if constexpr (kOp == BinaryKind::kGreater) return x > y ? 1.0f : 0.0f;
  return x == y ? 1.0f : 0.0f;
}

template <BinaryKind kOp>
__global__ void BinaryContiguousKernel(const float* a, const float* b, float* out, int64_t n) {
  SLUICE_GRID_LOOP(i, n) { out[i] = Apply<kOp>(a[i], b[i]); }
}

template <BinaryKind kOp>
__global__ void BinaryStridedKernel(const float* a, const float* b, float* out, int64_t n,
                                    StridedIndex ix) {
  SLUICE_GRID_LOOP(i, n) {
    int64_t oa, ob;
    OffsetsAB(ix, i, oa, ob);
    out[i] = Apply<kOp>(a[oa], b[ob]);
  }
}

template <BinaryKind kOp>
void LaunchBinary(const float* a, const float* b, float* out, int64_t n, const StridedIndex& ix,
                  bool contiguous, cudaStream_t stream) {
  if (contiguous) {
    BinaryContiguousKernel<kOp><<<GridFor(n), kThreads, 0, stream>>>(a, b, out, n);
  } else {
    BinaryStridedKernel<kOp><<<GridFor(n), kThreads, 0, stream>>>(a, b, out, n, ix);
  }
}

template <bool kContiguous>
__global__ void SelectBackwardKernel(bool maximum, const float* a, const float* b, const float* g,
                                     float* ga, float* gb, int64_t n, StridedIndex ix) {
  SLUICE_GRID_LOOP(i, n) {
    int64_t oa = i, ob = i;
    if constexpr (!kContiguous) OffsetsAB(ix, i, oa, ob);
    const bool to_a = PicksA(maximum, a[oa], b[ob]);
    if (ga != nullptr) ga[i] = to_a ? g[i] : 0.0f;
    if (gb != nullptr) gb[i] = to_a ? 0.0f : g[i];
  }
}

__global__ void GatherKernel(const float* in, int64_t base, float* out, int64_t n, StridedIndex ix,
                             float scale) {
  SLUICE_GRID_LOOP(i, n) { out[i] = scale * in[base + OffsetA(ix, i)]; }
}

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

__global__ void UnaryKernel(UnaryKind op, const float* x, float* y, int64_t n) {
  SLUICE_GRID_LOOP(i, n) {
    const float v = x[i];
    switch (op) {
      case UnaryKind::kRelu:
        y[i] = ReluOf(v);
        break;
      case UnaryKind::kSigmoid:
        y[i] = 1.0f / (1.0f + expf(-v));
        break;
      case UnaryKind::kTanh:
        y[i] = tanhf(v);
        break;
      case UnaryKind::kGelu:
        y[i] = 0.5f * v * (1.0f + erff(v * kInvSqrt2));
        break;
      case UnaryKind::kExp:
        y[i] = expf(v);
        break;
      case UnaryKind::kLog:
        y[i] = logf(v);
        break;
      case UnaryKind::kAbs:
        y[i] = fabsf(v);
        break;
      case UnaryKind::kSoftplus:  // log1p(e^-|x|) + max(x, 0): no overflow, as on the CPU
        y[i] = log1pf(expf(-fabsf(v))) + fmaxf(v, 0.0f);
        break;
      case UnaryKind::kSquare:
        y[i] = v * v;
        break;
    }
  }
}

__global__ void UnaryBackwardKernel(UnaryKind op, const float* x, const float* y, const float* g,
                                    float* gx, int64_t n) {
  SLUICE_GRID_LOOP(i, n) {
    switch (op) {
      case UnaryKind::kRelu:  // gradient 0 at x == 0, as on the CPU; from y (> 0 where x is)
        gx[i] = y[i] > 0.0f ? g[i] : 0.0f;
        break;
      case UnaryKind::kSigmoid:
        gx[i] = g[i] * y[i] * (1.0f - y[i]);
        break;
      case UnaryKind::kTanh:
        gx[i] = g[i] * (1.0f - y[i] * y[i]);
        break;
      case UnaryKind::kGelu: {
        const float v = x[i];
        gx[i] =
            g[i] * (0.5f * (1.0f + erff(v * kInvSqrt2)) + v * kInvSqrt2Pi * expf(-0.5f * v * v));
        break;
      }
      case UnaryKind::kExp:
        gx[i] = g[i] * y[i];
        break;
      case UnaryKind::kLog:
        gx[i] = g[i] / x[i];
        break;
      case UnaryKind::kAbs:  // sign(x), 0 at 0
        gx[i] = x[i] > 0.0f ? g[i] : x[i] < 0.0f ? -g[i] : 0.0f;
        break;
      case UnaryKind::kSoftplus: {  // sigmoid(x) from e^-|x|
        const float z = expf(-fabsf(x[i]));
        gx[i] = g[i] * (x[i] >= 0.0f ? 1.0f / (1.0f + z) : z / (1.0f + z));
        break;
      }
      case UnaryKind::kSquare:
        gx[i] = g[i] * 2.0f * x[i];
        break;
    }
  }
}

// Float to integer as the CPU backend: truncated, saturated, NaN to 0, spelled out because
// __float2ll_rz gives INT64_MIN for NaN (seen on an H200). The limits as floats round up (2^31,
// 2^63): anything at or past them saturates. Float to the 16-bit floats of the mixed-precision
// convolutions: rounded to nearest even.
template <typename To>
__device__ inline To Convert(float v) {
  if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    // static_cast, not braces: the width not taken is narrowed without being used.
    constexpr To kMax = sizeof(To) == 4 ? static_cast<To>(INT_MAX) : static_cast<To>(LLONG_MAX);
    constexpr To kMin = sizeof(To) == 4 ? static_cast<To>(INT_MIN) : static_cast<To>(LLONG_MIN);
    if (v != v) return 0;
    if (v >= static_cast<float>(kMax)) return kMax;
    if (v <= static_cast<float>(kMin)) return kMin;
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t n) {
  SLUICE_GRID_LOOP(i, n) {
    if constexpr (std::is_same_v<From, float> && !std::is_same_v<To, float>) {
      y[i] = Convert<To>(x[i]);
    } else {
      y[i] = static_cast<To>(x[i]);
    }
  }
}

template <typename From>
cudaError_t LaunchCast(const From* x, void* y, CastType to, int64_t n, cudaStream_t stream) {
  switch (to) {
    case CastType::kFloat16:
    case CastType::kBFloat16:
      return cudaErrorInvalidValue;  // Cast converts float32 to these itself
    case CastType::kFloat32:
      CastKernel<<<GridFor(n), kThreads, 0, stream>>>(x, static_cast<float*>(y), n);
      break;
    case CastType::kInt32:
      CastKernel<<<GridFor(n), kThreads, 0, stream>>>(x, static_cast<int32_t*>(y), n);
      break;
    case CastType::kInt64:
      CastKernel<<<GridFor(n), kThreads, 0, stream>>>(x, static_cast<long long*>(y), n);
      break;
  }
  return cudaGetLastError();
}

__global__ void DropoutKernel(const float* x, float* mask, float* out, int64_t n, float rate,
                              float scale, uint64_t seed) {
  // The CPU's draw (train/backend/dropout_draw.h): a seed drops the same elements on both.
  const uint64_t key = train::backend::DropoutKey(seed);
  SLUICE_GRID_LOOP(i, n) {
    const float m = train::backend::DropoutUniform(key, i) >= rate ? scale : 0.0f;
    mask[i] = m;
    out[i] = x[i] * m;
  }
}

__global__ void MaxBackwardKernel(const float* mask, const float* g, const float* ties, float* gx,
                                  int64_t n, StridedIndex ix) {
  SLUICE_GRID_LOOP(i, n) {
    const int64_t p = OffsetA(ix, i);
    gx[i] = mask[i] != 0.0f ? g[p] / ties[p] : 0.0f;
  }
}

__global__ void ScaleKernel(const float* src, float factor, float* dst, int64_t n) {
  SLUICE_GRID_LOOP(i, n) { dst[i] = src[i] * factor; }
}

// out[i] += bias[i's channel], then max(out, 0) with `relu`: the same additions and comparisons
// as Binary's kAdd and Unary's kRelu one after the other, in one pass.
__global__ void BiasActivationKernel(float* out, const float* bias, int64_t n, int64_t c,
                                     bool relu) {
  ForChannelElements(
      n, c, [&](int64_t k) { return bias[k]; },
      [&](int64_t i, float b) {
        const float v = out[i] + b;
        out[i] = relu ? ReluOf(v) : v;
      });
}

}  // namespace

cudaError_t Fill(float* p, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FillKernel<<<GridFor(n), kThreads, 0, stream>>>(p, n, value);
  return cudaGetLastError();
}

cudaError_t Axpby(float alpha, const float* x, float beta, float* y, int64_t n,
                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AxpbyKernel<<<GridFor(n), kThreads, 0, stream>>>(alpha, x, beta, y, n);
  return cudaGetLastError();
}

cudaError_t Binary(BinaryKind op, const float* a, const float* b, float* out, int64_t n,
                   const StridedIndex& index, bool contiguous, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (op) {
    case BinaryKind::kAdd:
      LaunchBinary<BinaryKind::kAdd>(a, b, out, n, index, contiguous, stream);
      break;
    case BinaryKind::kSub:
      LaunchBinary<BinaryKind::kSub>(a, b, out, n, index, contiguous, stream);
      break;
    case BinaryKind::kMul:
      LaunchBinary<BinaryKind::kMul>(a, b, out, n, index, contiguous, stream);
      break;
    case BinaryKind::kDiv:
      LaunchBinary<BinaryKind::kDiv>(a, b, out, n, index, contiguous, stream);
      break;
    case BinaryKind::kEqualMask:
      LaunchBinary<BinaryKind::kEqualMask>(a, b, out, n, index, contiguous, stream);
      break;
    case BinaryKind::kMaximum:
      LaunchBinary<BinaryKind::kMaximum>(a, b, out, n, index, contiguous, stream);
      break;
    case BinaryKind::kMinimum:
      LaunchBinary<BinaryKind::kMinimum>(a, b, out, n, index, contiguous, stream);
      break;
    case BinaryKind::kGreater:
      LaunchBinary<BinaryKind::kGreater>(a, b, out, n, index, contiguous, stream);
      break;
  }
  return cudaGetLastError();
}

cudaError_t SelectBackward(bool maximum, const float* a, const float* b, const float* g,
                           float* grad_a, float* grad_b, int64_t n, const StridedIndex& index,
                           bool contiguous, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (contiguous) {
    SelectBackwardKernel<true>
        <<<GridFor(n), kThreads, 0, stream>>>(maximum, a, b, g, grad_a, grad_b, n, index);
  } else {
    SelectBackwardKernel<false>
        <<<GridFor(n), kThreads, 0, stream>>>(maximum, a, b, g, grad_a, grad_b, n, index);
  }
  return cudaGetLastError();
}

cudaError_t Cast(const void* x, CastType from, void* y, CastType to, int64_t n,
                 cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const bool half_from = from == CastType::kFloat16 || from == CastType::kBFloat16;
  const bool half_to = to == CastType::kFloat16 || to == CastType::kBFloat16;
  if (half_from || half_to) {
    if (half_from == half_to || (half_from ? to : from) != CastType::kFloat32) {
      return cudaErrorInvalidValue;
    }
    // CastKernel: Convert to them, their exact conversion to float32 from them.
    const float* f = static_cast<const float*>(x);
    float* to_f = static_cast<float*>(y);
    if (to == CastType::kFloat16) {
      CastKernel<<<GridFor(n), kThreads, 0, stream>>>(f, static_cast<__half*>(y), n);
    } else if (to == CastType::kBFloat16) {
      CastKernel<<<GridFor(n), kThreads, 0, stream>>>(f, static_cast<__nv_bfloat16*>(y), n);
    } else if (from == CastType::kFloat16) {
      CastKernel<<<GridFor(n), kThreads, 0, stream>>>(static_cast<const __half*>(x), to_f, n);
    } else {
      CastKernel<<<GridFor(n), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), to_f,
                                                      n);
    }
    return cudaGetLastError();
  }
  switch (from) {
    case CastType::kFloat32:
      return LaunchCast(static_cast<const float*>(x), y, to, n, stream);
    case CastType::kInt32:
      return LaunchCast(static_cast<const int32_t*>(x), y, to, n, stream);
    case CastType::kInt64:
      break;
    case CastType::kFloat16:
    case CastType::kBFloat16:
      return cudaErrorInvalidValue;  // handled above
  }
  return LaunchCast(static_cast<const long long*>(x), y, to, n, stream);
}

cudaError_t Gather(const float* in, int64_t base, float* out, int64_t n, const StridedIndex& index,
                   float scale, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  GatherKernel<<<GridFor(n), kThreads, 0, stream>>>(in, base, out, n, index, scale);
  return cudaGetLastError();
}

cudaError_t Unary(UnaryKind op, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  UnaryKernel<<<GridFor(n), kThreads, 0, stream>>>(op, x, y, n);
  return cudaGetLastError();
}

cudaError_t UnaryBackward(UnaryKind op, const float* x, const float* y, const float* grad_y,
                          float* grad_x, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  UnaryBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(op, x, y, grad_y, grad_x, n);
  return cudaGetLastError();
}

cudaError_t Dropout(const float* x, float* mask, float* out, int64_t n, float rate, uint64_t seed,
                    cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  DropoutKernel<<<GridFor(n), kThreads, 0, stream>>>(x, mask, out, n, rate, 1.0f / (1.0f - rate),
                                                     seed);
  return cudaGetLastError();
}

cudaError_t MaxBackward(const float* mask, const float* grad_max, const float* ties, float* grad_x,
                        int64_t n, const StridedIndex& index, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MaxBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(mask, grad_max, ties, grad_x, n, index);
  return cudaGetLastError();
}

cudaError_t Scale(const float* src, float factor, float* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ScaleKernel<<<GridFor(n), kThreads, 0, stream>>>(src, factor, dst, n);
  return cudaGetLastError();
}

cudaError_t BiasActivation(float* out, const float* bias, int64_t n, int64_t c, bool relu,
                           cudaStream_t stream) {
  if (n == 0 || c == 0) return cudaSuccess;
  BiasActivationKernel<<<GridFor(n), kThreads, 0, stream>>>(out, bias, n, c, relu);
  return cudaGetLastError();
}

}  // namespace sluice::train::backend::cuda::kernels
