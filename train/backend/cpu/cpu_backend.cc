#include "train/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "train/backend/batch_norm_rows.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/bfloat16_convert.h"
#include "train/backend/cpu/cpu_allocator.h"
#include "train/backend/cpu/cpu_batch_norm_kernels.h"
#include "train/backend/cpu/cpu_max_pool_kernels.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/backend/cpu/dnnl_engine.h"
#include "train/backend/cpu/dnnl_primitive_cache.h"

namespace sluice::train::backend::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

// mixed_bfloat16 (compute_precision.h): matmul and convolution read bfloat16 operands and write
// float32, oneDNN's bf16 kernels summing in float32. oneDNN 2.6's fpmath_mode attribute is
// accepted but ignored on AVX512-BF16 (measured: the same f32 kernel, bit-identical results), so
// the copies are explicit: made here from float32 operands, or once by the op
// (Backend::ComputeOperand) and passed in as bfloat16. A bfloat16 operand selects the bf16 kernels
// whatever the policy.
bool Bf16(std::initializer_list<const Tensor*> operands) {
  if (CurrentPrecision() == Precision::kMixedBFloat16) return true;
  for (const Tensor* t : operands) {
    if (t->dtype() == DType::kBFloat16) return true;
  }
  return false;
}

// `md` with its element type changed (same dims and strides or format).
memory::desc AsBf16(const memory::desc& md) {
  memory::desc out = md;
  out.data.data_type = dnnl_bf16;
  return out;
}

void* Ptr(const Tensor& t) { return const_cast<void*>(t.raw_data()); }
// A float32 tensor's data, for our own loop kernels.
const float* In(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }
float* Out(const Tensor& t) { return static_cast<float*>(const_cast<void*>(t.raw_data())); }

// Streams are not thread-safe; one per thread, made once.
dnnl::stream& ThreadStream() {
  ApplyCpuThreadsToOpenMp();
  thread_local dnnl::stream stream(CpuEngine());
  return stream;
}

// oneDNN reports errors by exception; no exception crosses our API.
template <typename Fn>
absl::Status Guard(absl::string_view op, Fn fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat(op, ": oneDNN failed: ", e.what()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(op, ": out of memory"));
  }
  return absl::OkStatus();
}

void Execute(const dnnl::primitive& p, const std::unordered_map<int, memory>& args) {
  dnnl::stream& stream = ThreadStream();
  p.execute(stream, args);
  stream.wait();
}

// A reorder of at most this many bytes runs on the calling thread (a filter's layout change:
// resnet-20's 64x64x3x3 filter, 147 KB, took 34 us on two threads, most of it waking the second).
constexpr size_t kOneThreadReorderBytes = size_t{256} << 10;

// A reorder primitive from `from` to `to`; a small one is planned for one thread (oneDNN bakes
// the team size into it), to run under Reorder's OneOpenMpThread.
dnnl::reorder MakeReorder(const memory::desc& from, const memory::desc& to) {
  OneOpenMpThread single(from.get_size() <= kOneThreadReorderBytes);
  return dnnl::reorder(memory(from, CpuEngine()), memory(to, CpuEngine()));
}

// Runs a reorder made by MakeReorder.
void Reorder(const dnnl::reorder& reorder, const memory& from, const memory& to) {
  OneOpenMpThread single(from.get_desc().get_size() <= kOneThreadReorderBytes);
  Execute(reorder, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

// --- matmul -------------------------------------------------------------------

// Products of at most this many multiply-adds (m * n * k) run on one thread: about 20 us of
// work on one core, less than waking the OpenMP team costs on a VM (measured on the mlp's
// matmuls, 2-core AMD EPYC VM, passive OpenMP waiting: a 64x128x256 product took 46 us on two
// threads and 22 us on one; 64x100x10, 24 and 2 us). OpenBLAS runs GEMMs below 2^18 on one
// thread for the same reason.
constexpr int64_t kOneThreadMatMulMacs = int64_t{1} << 21;

struct MatMulEntry {
  memory::desc a, b, c;
  dnnl::matmul primitive;
};

// A [rows, cols] view of a row-major tensor stored as [cols, rows] when
// `transposed`.
memory::desc MatrixDesc(int64_t rows, int64_t cols, bool transposed) {
  return memory::desc({rows, cols}, kF32,
                      transposed ? memory::dims{1, rows} : memory::dims{cols, 1});
}

// --- convolution ----------------------------------------------------------------

// A primitive cache key: the geometry, and whether a bias is fused.
std::string ConvKey(absl::string_view kind, const ConvGeometry& g, bool bias) {
  return absl::StrCat(kind, bias ? "_bias:" : ":",
                      absl::StrJoin({g.n, g.h, g.w, g.c, g.kh, g.kw, g.o, g.oh, g.ow, g.stride_h,
                                     g.stride_w, g.dilation_h, g.dilation_w, g.pad_top,
                                     g.pad_bottom, g.pad_left, g.pad_right, g.groups},
                                    ","));
}

struct ConvDescs {
  memory::desc src, user_weights, any_weights, dst, bias;
  memory::dims strides, dilates, pad_l, pad_r;
};

// A grouped filter [kh, kw, c / groups, o] is oneDNN's 5-D [groups, o / groups, c / groups, kh,
// kw] in its "hwigo" layout: the same bytes, the output channels of a group adjacent.
ConvDescs MakeConvDescs(const ConvGeometry& g) {
  const memory::dims weights =
      g.groups == 1 ? memory::dims{g.o, g.c, g.kh, g.kw}
                    : memory::dims{g.groups, g.o / g.groups, g.c / g.groups, g.kh, g.kw};
  return {memory::desc({g.n, g.c, g.h, g.w}, kF32, Tag::nhwc),
          memory::desc(weights, kF32, g.groups == 1 ? Tag::hwio : Tag::hwigo),
          memory::desc(weights, kF32, Tag::any),
          memory::desc({g.n, g.o, g.oh, g.ow}, kF32, Tag::nhwc),
          memory::desc({g.o}, kF32, Tag::a),
          {g.stride_h, g.stride_w},
          {g.dilation_h - 1, g.dilation_w - 1},
          {g.pad_top, g.pad_left},
          {g.pad_bottom, g.pad_right}};
}

// Activations stay NHWC (no reorder of the big tensors); the filter's layout
// is left to oneDNN, which prefers a blocked one for its JIT kernels, and the
// filter (small) is reordered to and from HWIO.
// An empty bias desc (zero dims) means no bias to oneDNN.
// `bf16`: bfloat16 input and filter, float32 output (bfloat16 with `bf16_out`). No ReLU post-op:
// oneDNN's (a max with 0) turns a NaN into 0, and ours keeps it (ReluOf).
dnnl::convolution_forward::primitive_desc ConvForwardPd(const ConvDescs& d, bool bias,
                                                        bool bf16 = false, bool bf16_out = false) {
  return {{dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
           bf16 ? AsBf16(d.src) : d.src, bf16 ? AsBf16(d.any_weights) : d.any_weights,
           bias ? d.bias : memory::desc(), bf16_out ? AsBf16(d.dst) : d.dst, d.strides, d.dilates,
           d.pad_l, d.pad_r},
          dnnl::primitive_attr(),
          CpuEngine()};
}

// A primitive that reads a filter (forward, backward data, a deconvolution's forward), and the
// reorder of an HWIO filter to the layout it wants.
template <typename Primitive>
struct WeightsEntry {
  memory::desc weights;  // the layout the primitive wants
  bool reorder_weights;
  dnnl::reorder weights_reorder;  // HWIO -> weights, when reorder_weights
  Primitive primitive;
};
using ConvForwardEntry = WeightsEntry<dnnl::convolution_forward>;
using ConvBackwardDataEntry = WeightsEntry<dnnl::convolution_backward_data>;
using DeconvForwardEntry = WeightsEntry<dnnl::deconvolution_forward>;

template <typename Primitive, typename PrimitiveDesc>
std::shared_ptr<WeightsEntry<Primitive>> MakeWeightsEntry(const PrimitiveDesc& pd,
                                                          const ConvDescs& d) {
  const bool reorder = pd.weights_desc() != d.user_weights;
  return std::make_shared<WeightsEntry<Primitive>>(WeightsEntry<Primitive>{
      pd.weights_desc(), reorder,
      reorder ? MakeReorder(d.user_weights, pd.weights_desc()) : dnnl::reorder(), Primitive(pd)});
}

struct ConvBackwardFilterEntry {
  memory::desc diff_weights;  // the layout the primitive writes
  dnnl::reorder to_hwio;      // diff_weights -> HWIO, when they differ
  dnnl::convolution_backward_weights primitive;
};

// The reorder of a filter gradient from the layout a primitive writes to HWIO; an empty one when
// the primitive writes HWIO itself.
dnnl::reorder FilterGradientToHwio(const memory::desc& diff_weights, const ConvDescs& d) {
  if (diff_weights == d.user_weights) return dnnl::reorder();
  return MakeReorder(diff_weights, d.user_weights);
}

// --- pooling ----------------------------------------------------------------------

std::string PoolKey(absl::string_view kind, const PoolGeometry& g) {
  return absl::StrCat(
      kind, ":", static_cast<int>(g.algorithm), ":",
      absl::StrJoin({g.n, g.h, g.w, g.c, g.oh, g.ow, g.window_h, g.window_w, g.stride_h, g.stride_w,
                     g.pad_top, g.pad_bottom, g.pad_left, g.pad_right},
                    ","));
}

dnnl::pooling_forward::primitive_desc PoolForwardPd(const PoolGeometry& g) {
  const dnnl::algorithm algorithm = g.algorithm == PoolAlgorithm::kMax
                                        ? dnnl::algorithm::pooling_max
                                        : dnnl::algorithm::pooling_avg_exclude_padding;
  return {{dnnl::prop_kind::forward_training,
           algorithm,
           memory::desc({g.n, g.c, g.h, g.w}, kF32, Tag::nhwc),
           memory::desc({g.n, g.c, g.oh, g.ow}, kF32, Tag::nhwc),
           {g.stride_h, g.stride_w},
           {g.window_h, g.window_w},
           {g.pad_top, g.pad_left},
           {g.pad_bottom, g.pad_right}},
          CpuEngine()};
}

struct PoolForwardEntry {
  memory::desc src, dst, workspace;
  dnnl::pooling_forward primitive;
};

struct PoolBackwardEntry {
  memory::desc src, dst, workspace;
  dnnl::pooling_backward primitive;
};

// What a primitive reads for `t` (float32 or bfloat16, laid out as `user`): `t` itself when the
// primitive wants that layout and type, else a converted copy (oneDNN's reorder, cached by oneDNN).
// The copies come from the caching allocator, so that they reuse its blocks and count in its peak
// (train_peak_tensor_mb) like every other tensor of the step. They live as long as the Operands.
class Operands {
 public:
  memory Input(const memory::desc& want, const memory::desc& user, const Tensor& t) {
    const memory::desc have = t.dtype() == DType::kBFloat16 ? AsBf16(user) : user;
    memory user_mem(have, CpuEngine(), Ptr(t));
    if (want == have) return user_mem;
    held_.push_back(
        CpuAllocator::Allocate(DType::kUint8, Shape{static_cast<int64_t>(want.get_size())}));
    memory converted(want, CpuEngine(), held_.back().raw_data());
    Reorder(MakeReorder(have, want), user_mem, converted);
    return converted;
  }

 private:
  std::vector<Tensor> held_;
};

// The bf16 convolution primitives of one geometry: bf16 activations and filters in, float32
// out, or bfloat16 with `bf16_out` (the forward's output and the backward's input gradient);
// filters and their gradients in the layouts oneDNN picks. On AMX CPUs a bfloat16 output is
// written through a float32 copy, converted after (WithBFloat16Output): oneDNN 2.6's AMX
// convolution created with a bfloat16 destination read past a small heap object, which crashed
// tools/test.sh's ASan stage (CompiledTrainStepTest.MixedBFloat16AsEagerly, the same address
// each time) and passes with the float32 destination. Elsewhere oneDNN writes it (DirectBf16Out).
struct ConvBf16Entry {
  // The backward-data primitive may want the filter in another layout than the forward one.
  memory::desc src, weights, backward_data_weights, diff_dst, diff_weights;
  dnnl::reorder diff_weights_to_hwio;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
};

// With `bias`, the forward adds it and the filter gradient's primitive also sums the bias
// gradient.
std::shared_ptr<const ConvBf16Entry> ConvBf16(const ConvGeometry& geo, const ConvDescs& d,
                                              bool bias, bool bf16_out = false) {
  return DnnlPrimitiveCache::Global().GetOrCreate<ConvBf16Entry>(
      ConvKey(bf16_out ? "conv_bf16_out" : "conv_bf16", geo, bias), [&] {
        const memory::desc src = AsBf16(d.src), diff_dst = AsBf16(d.dst);
        const memory::desc weights = AsBf16(d.any_weights);
        const auto fwd = ConvForwardPd(d, bias, /*bf16=*/true, bf16_out);
        const dnnl::convolution_backward_data::primitive_desc bwd_data(
            {dnnl::algorithm::convolution_direct, bf16_out ? src : d.src, weights, diff_dst,
             d.strides, d.dilates, d.pad_l, d.pad_r},
            CpuEngine(), fwd);
        const dnnl::convolution_backward_weights::primitive_desc bwd_weights(
            {dnnl::algorithm::convolution_direct, src, d.any_weights,
             bias ? d.bias : memory::desc(), diff_dst, d.strides, d.dilates, d.pad_l, d.pad_r},
            CpuEngine(), fwd);
        return std::make_shared<ConvBf16Entry>(
            ConvBf16Entry{fwd.src_desc(), fwd.weights_desc(), bwd_data.weights_desc(),
                          bwd_data.diff_dst_desc(), bwd_weights.diff_weights_desc(),
                          FilterGradientToHwio(bwd_weights.diff_weights_desc(), d),
                          dnnl::convolution_forward(fwd), dnnl::convolution_backward_data(bwd_data),
                          dnnl::convolution_backward_weights(bwd_weights)});
      });
}

// Whether bfloat16 convolutions write a bfloat16 result themselves: not on AMX CPUs (see
// ConvBf16Entry). oneDNN's ISA values are bit sets, each a superset of those below it, so a
// newer oneDNN's AMX ISAs count too.
bool DirectBf16Out() {
  static const bool direct = [] {
    const auto amx = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
    return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & amx) != amx;
  }();
  return direct;
}

// Runs `write` (a kernel writing its Tensor& argument) into `result`: directly when `result` is
// float32 or the kernel writes bfloat16 itself (`writes_bfloat16`), else into a float32 block of
// the caching allocator, then rounded into the bfloat16 `result` (as ComputeOperand rounds).
template <typename Write>
absl::Status WithBFloat16Output(Tensor& result, bool writes_bfloat16, const Write& write) {
  if (result.dtype() != DType::kBFloat16 || writes_bfloat16) return write(result);
  Tensor wide = CpuAllocator::Allocate(DType::kFloat32, result.shape());
  SLUICE_RETURN_IF_ERROR(write(wide));
  FloatToBFloat16(wide.data<float>(), static_cast<uint16_t*>(result.raw_data()),
                  result.num_elements());
  return absl::OkStatus();
}

// The HWIO filter `user_weights` in the layout `entry`'s primitive reads: itself, or a
// reordered copy when the primitive wants its own blocked layout.
template <typename Primitive>
memory PrimitiveWeights(const WeightsEntry<Primitive>& entry, const memory& user_weights) {
  if (!entry.reorder_weights) return user_weights;
  memory weights(entry.weights, CpuEngine());
  Reorder(entry.weights_reorder, user_weights, weights);
  return weights;
}
template <typename Primitive>
memory PrimitiveWeights(const WeightsEntry<Primitive>& entry, const ConvDescs& d,
                        const Tensor& filter) {
  return PrimitiveWeights(entry, memory(d.user_weights, CpuEngine(), Ptr(filter)));
}

// --- a convolution's forward as a deconvolution -----------------------------------------

// A ConvForwardAlgorithm; kUnread before $SLUICE_CONV_FORWARD is read, kInvalid when it named
// none.
constexpr int kUnread = -1, kInvalid = -2;
std::atomic<int> conv_forward_algorithm{kUnread};

absl::StatusOr<ConvForwardAlgorithm> ConvForwardAlgorithmSetting() {
  int v = conv_forward_algorithm.load(std::memory_order_relaxed);
  if (v == kUnread) {
    const char* env = std::getenv("SLUICE_CONV_FORWARD");
    const absl::string_view name = env == nullptr ? "auto" : env;
    int read = kInvalid;
    if (name == "auto") read = static_cast<int>(ConvForwardAlgorithm::kAuto);
    if (name == "direct") read = static_cast<int>(ConvForwardAlgorithm::kDirect);
    if (name == "deconvolution") read = static_cast<int>(ConvForwardAlgorithm::kDeconvolution);
    int expected = kUnread;
    conv_forward_algorithm.compare_exchange_strong(expected, read);
    v = conv_forward_algorithm.load(std::memory_order_relaxed);
  }
  if (v == kInvalid) {
    // A typo must not measure or train with another algorithm than the one asked for.
    const char* env = std::getenv("SLUICE_CONV_FORWARD");
    return absl::InvalidArgumentError(
        absl::StrCat("SLUICE_CONV_FORWARD must be auto, direct or deconvolution, got '",
                     env == nullptr ? "" : env, "'"));
  }
  return static_cast<ConvForwardAlgorithm>(v);
}

// The geometry a flipped 3x3 filter turns into the same deconvolution: stride 1, no dilation,
// one pixel of padding each side (the deconvolution's padding is then 3 - 1 - 1 = 1 too).
bool DeconvolvableGeometry(const ConvGeometry& g) {
  return g.groups == 1 && g.kh == 3 && g.kw == 3 && g.stride_h == 1 && g.stride_w == 1 &&
         g.dilation_h == 1 && g.dilation_w == 1 && g.pad_top == 1 && g.pad_bottom == 1 &&
         g.pad_left == 1 && g.pad_right == 1;
}

// y = conv(x, F) as deconv(x, F'), F'[kh][kw] = F[2 - kh][2 - kw]: oneDNN's deconvolution is its
// convolution's backward-data pass, dst[i] = sum_k src[i + p - k] W[k], and with k = 2 - k' and
// p = 1 that is conv's sum_k' x[i - 1 + k'] F[k'].
void DeconvolutionForward(const ConvGeometry& geo, const ConvDescs& d, const Tensor& input,
                          const Tensor& filter, Tensor& output) {
  auto entry = DnnlPrimitiveCache::Global().GetOrCreate<DeconvForwardEntry>(
      ConvKey("deconv_fwd", geo, /*bias=*/false), [&] {
        return MakeWeightsEntry<dnnl::deconvolution_forward>(
            dnnl::deconvolution_forward::primitive_desc(
                {dnnl::prop_kind::forward_training, dnnl::algorithm::deconvolution_direct, d.src,
                 d.any_weights, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r},
                CpuEngine()),
            d);
      });
  // The filter [3, 3, c, o] flipped in space: its nine [c, o] blocks in reverse order, in a
  // buffer of oneDNN's, as the reordered filters are (a compiled step's plan holds no temporaries
  // of the backend's).
  const dnnl::engine& engine = CpuEngine();
  memory user_weights(d.user_weights, engine);
  const size_t block = static_cast<size_t>(geo.c * geo.o);
  const float* from = static_cast<const float*>(filter.raw_data());
  float* to = static_cast<float*>(user_weights.get_data_handle());
  for (size_t b = 0; b < 9; ++b) {
    std::memcpy(to + b * block, from + (8 - b) * block, block * sizeof(float));
  }
  Execute(entry->primitive, {{DNNL_ARG_SRC, memory(d.src, engine, Ptr(input))},
                             {DNNL_ARG_WEIGHTS, PrimitiveWeights(*entry, user_weights)},
                             {DNNL_ARG_DST, memory(d.dst, engine, output.raw_data())}});
}

}  // namespace

bool CpuBackend::ReadsBFloat16Operands() const {
  return CurrentPrecision() == Precision::kMixedBFloat16;
}

absl::Status CpuBackend::CastBFloat16(const Tensor& x, Tensor& y) {
  for (const Tensor* t : {&x, static_cast<const Tensor*>(&y)}) {
    if (t->dtype() != DType::kFloat32 && t->dtype() != DType::kBFloat16) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cast: bfloat16 converts to and from float32 only, not ", DTypeName(t->dtype())));
    }
  }
  const int64_t n = x.num_elements();
  if (x.dtype() == y.dtype()) {
    if (n > 0) std::memcpy(y.raw_data(), x.raw_data(), x.byte_size());
  } else if (x.dtype() == DType::kFloat32) {
    FloatToBFloat16(x.data<float>(), static_cast<uint16_t*>(y.raw_data()), n);
  } else {
    BFloat16ToFloat(static_cast<const uint16_t*>(x.raw_data()), y.data<float>(), n);
  }
  return absl::OkStatus();
}

CpuBackend& CpuBackend::Get() {
  static CpuBackend* backend = new CpuBackend();
  return *backend;
}

absl::StatusOr<Tensor> CpuBackend::Allocate(DType dtype, const Shape& shape) {
  // The interface promises a Status, as the CUDA backend's out-of-memory: no exception crosses it.
  try {
    return CpuAllocator::Allocate(dtype, shape);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "CPU: cannot allocate ", DTypeName(dtype), " ", shape.DebugString(), " (",
        static_cast<double>(shape.num_elements()) * DTypeSize(dtype) / (1 << 20), " MiB)"));
  }
}

absl::Status CpuBackend::ReleaseCachedMemory() {
  CpuAllocator::ReleaseCached();
  return absl::OkStatus();
}

absl::Status CpuBackend::Copy(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.num_elements() != dst.num_elements() ||
      !src.device().is_cpu() || !dst.device().is_cpu() || src.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("CpuBackend::Copy: want two numeric CPU tensors of one dtype and size, got ",
                     DTypeName(src.dtype()), src.shape().DebugString(), " on ",
                     src.device().DebugString(), " and ", DTypeName(dst.dtype()),
                     dst.shape().DebugString(), " on ", dst.device().DebugString()));
  }
  if (src.byte_size() > 0) std::memcpy(dst.raw_data(), src.raw_data(), src.byte_size());
  return absl::OkStatus();
}

absl::Status CpuBackend::MatMul(const Tensor& a, bool transpose_a, const Tensor& b,
                                bool transpose_b, Tensor& out) {
  return MatMulWith(a, transpose_a, b, transpose_b, nullptr, false, out);
}

absl::Status CpuBackend::MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu,
                                    Tensor& out) {
  return MatMulWith(a, false, b, false, &bias, relu, out);
}

absl::Status CpuBackend::MatMulWith(const Tensor& a, bool transpose_a, const Tensor& b,
                                    bool transpose_b, const Tensor* bias, bool relu, Tensor& out) {
  const int64_t m = out.dim(0), n = out.dim(1);
  const int64_t k = transpose_a ? a.dim(0) : a.dim(1);
  if (m * n == 0) return absl::OkStatus();
  if (k == 0 && bias == nullptr) return Fill(out, 0.0f);
  if (k == 0) return Backend::MatMulBias(a, b, *bias, relu, out);  // oneDNN wants k >= 1
  const bool bf16 = Bf16({&a, &b});
  // A small product runs on this thread: waking the OpenMP team costs more than it saves.
  const bool one_thread = m * n * k <= kOneThreadMatMulMacs;
  OneOpenMpThread single(one_thread);
  SLUICE_RETURN_IF_ERROR(Guard(bias ? "MatMulBias" : "MatMul", [&] {
    const memory::desc a_user = MatrixDesc(m, k, transpose_a),
                       b_user = MatrixDesc(k, n, transpose_b);
    const memory::desc bias_md =
        bias ? memory::desc({1, n}, kF32, memory::dims{n, 1}) : memory::desc();
    auto entry = DnnlPrimitiveCache::Global().GetOrCreate<MatMulEntry>(
        absl::StrCat(bf16 ? "matmul_bf16:" : "matmul:", m, ",", k, ",", n, ",", transpose_a, ",",
                     transpose_b, bias ? ",bias" : "", one_thread ? ",1t" : ""),
        [&] {
          // bf16: copies in the operands' own strides, so a transposed view stays a view.
          memory::desc a_md = bf16 ? AsBf16(a_user) : a_user;
          memory::desc b_md = bf16 ? AsBf16(b_user) : b_user;
          memory::desc c_md = MatrixDesc(m, n, false);
          dnnl::matmul::primitive_desc pd(bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md)
                                               : dnnl::matmul::desc(a_md, b_md, c_md),
                                          CpuEngine());
          return std::make_shared<MatMulEntry>(MatMulEntry{a_md, b_md, c_md, dnnl::matmul(pd)});
        });
    const dnnl::engine& engine = CpuEngine();
    Operands operands;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, operands.Input(entry->a, a_user, a)},
        {DNNL_ARG_WEIGHTS, operands.Input(entry->b, b_user, b)},
        {DNNL_ARG_DST, memory(entry->c, engine, out.raw_data())}};
    if (bias) args[DNNL_ARG_BIAS] = memory(bias_md, engine, Ptr(*bias));
    Execute(entry->primitive, args);
  }));
  // The ReLU after the matmul, not as oneDNN's post-op, which turns a NaN into 0.
  return relu ? Unary(UnaryOp::kRelu, out, out) : absl::OkStatus();
}

absl::Status CpuBackend::Conv2DForward(const ConvGeometry& geo, const Tensor& input,
                                       const Tensor& filter, Tensor& output) {
  return ConvForward(geo, input, filter, nullptr, /*relu=*/false, output);
}

absl::Status CpuBackend::Conv2DBiasForward(const ConvGeometry& geo, const Tensor& input,
                                           const Tensor& filter, const Tensor& bias,
                                           Tensor& output) {
  return ConvForward(geo, input, filter, &bias, /*relu=*/false, output);
}

absl::Status CpuBackend::Conv2DBiasReluForward(const ConvGeometry& geo, const Tensor& input,
                                               const Tensor& filter, const Tensor& bias,
                                               Tensor& output) {
  return ConvForward(geo, input, filter, &bias, /*relu=*/true, output);
}

absl::Status CpuBackend::ConvForward(const ConvGeometry& geo, const Tensor& input,
                                     const Tensor& filter, const Tensor* bias, bool relu,
                                     Tensor& output) {
  const dnnl::engine& engine = CpuEngine();
  const ConvDescs d = MakeConvDescs(geo);
  if (Bf16({&input, &filter}) || output.dtype() == DType::kBFloat16) {
    // The ReLU below runs on float32 only.
    const bool bf16_out = output.dtype() == DType::kBFloat16 && !relu && DirectBf16Out();
    return WithBFloat16Output(output, bf16_out, [&](Tensor& out) -> absl::Status {
      SLUICE_RETURN_IF_ERROR(Guard("Conv2D (mixed_bfloat16)", [&] {
        auto entry = ConvBf16(geo, d, bias != nullptr, bf16_out);
        Operands operands;
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_DST, memory(bf16_out ? AsBf16(d.dst) : d.dst, engine, out.raw_data())},
            {DNNL_ARG_SRC, operands.Input(entry->src, d.src, input)},
            {DNNL_ARG_WEIGHTS, operands.Input(entry->weights, d.user_weights, filter)}};
        if (bias != nullptr) args.insert({DNNL_ARG_BIAS, memory(d.bias, engine, Ptr(*bias))});
        Execute(entry->forward, args);
      }));
      // Its primitive is shared with the backward passes: the ReLU runs after it, on the float32
      // result (rounding and max(., 0) commute). A second primitive with the ReLU as a post-op
      // was slower: oneDNN 2.6 picked a 1.7x slower kernel for the cnn's 14x14 convolution.
      return relu ? Unary(UnaryOp::kRelu, out, out) : absl::OkStatus();
    });
  }
  SLUICE_ASSIGN_OR_RETURN(const ConvForwardAlgorithm algorithm, ConvForwardAlgorithmFor(geo));
  if (bias == nullptr && algorithm == ConvForwardAlgorithm::kDeconvolution) {
    SLUICE_RETURN_IF_ERROR(
        Guard("Conv2D", [&] { DeconvolutionForward(geo, d, input, filter, output); }));
  } else {
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_DST, memory(d.dst, engine, output.raw_data())}};
    if (bias != nullptr) args.insert({DNNL_ARG_BIAS, memory(d.bias, engine, Ptr(*bias))});
    SLUICE_RETURN_IF_ERROR(Guard("Conv2D", [&] {
      auto entry = DnnlPrimitiveCache::Global().GetOrCreate<ConvForwardEntry>(
          ConvKey("conv_fwd", geo, bias != nullptr), [&] {
            return MakeWeightsEntry<dnnl::convolution_forward>(ConvForwardPd(d, bias != nullptr),
                                                               d);
          });
      args.insert({DNNL_ARG_SRC, memory(d.src, engine, Ptr(input))});
      args.insert({DNNL_ARG_WEIGHTS, PrimitiveWeights(*entry, d, filter)});
      Execute(entry->primitive, args);
    }));
  }
  // The ReLU after the convolution, not as oneDNN's post-op, which turns a NaN into 0.
  return relu ? Unary(UnaryOp::kRelu, output, output) : absl::OkStatus();
}

absl::Status CpuBackend::Conv2DBackwardData(const ConvGeometry& geo, const Tensor& grad_output,
                                            const Tensor& filter, Tensor& grad_input) {
  if (Bf16({&grad_output, &filter}) || grad_input.dtype() == DType::kBFloat16) {
    const bool bf16_out = grad_input.dtype() == DType::kBFloat16 && DirectBf16Out();
    return WithBFloat16Output(grad_input, bf16_out, [&](Tensor& out) {
      return Guard("Conv2D backward data (mixed_bfloat16)", [&] {
        const ConvDescs d = MakeConvDescs(geo);
        // The bias changes nothing here: the entry without one serves both.
        auto entry = ConvBf16(geo, d, /*bias=*/false, bf16_out);
        Operands operands;
        Execute(entry->backward_data,
                {{DNNL_ARG_DIFF_DST, operands.Input(entry->diff_dst, d.dst, grad_output)},
                 {DNNL_ARG_WEIGHTS,
                  operands.Input(entry->backward_data_weights, d.user_weights, filter)},
                 {DNNL_ARG_DIFF_SRC,
                  memory(bf16_out ? AsBf16(d.src) : d.src, CpuEngine(), out.raw_data())}});
      });
    });
  }
  return Guard("Conv2D backward data", [&] {
    const ConvDescs d = MakeConvDescs(geo);
    auto entry = DnnlPrimitiveCache::Global().GetOrCreate<ConvBackwardDataEntry>(
        ConvKey("conv_bwd_data", geo, /*bias=*/false), [&] {
          return MakeWeightsEntry<dnnl::convolution_backward_data>(
              dnnl::convolution_backward_data::primitive_desc(
                  {dnnl::algorithm::convolution_direct, d.src, d.any_weights, d.dst, d.strides,
                   d.dilates, d.pad_l, d.pad_r},
                  CpuEngine(), ConvForwardPd(d, /*bias=*/false)),
              d);
        });
    const dnnl::engine& engine = CpuEngine();
    const memory weights = PrimitiveWeights(*entry, d, filter);
    Execute(entry->primitive, {{DNNL_ARG_DIFF_DST, memory(d.dst, engine, Ptr(grad_output))},
                               {DNNL_ARG_WEIGHTS, weights},
                               {DNNL_ARG_DIFF_SRC, memory(d.src, engine, grad_input.raw_data())}});
  });
}

absl::Status CpuBackend::Conv2DBackwardFilter(const ConvGeometry& geo, const Tensor& input,
                                              const Tensor& grad_output, Tensor& grad_filter) {
  return ConvBackwardFilter(geo, input, grad_output, grad_filter, nullptr);
}

absl::Status CpuBackend::Conv2DBackwardFilterBias(const ConvGeometry& geo, const Tensor& input,
                                                  const Tensor& grad_output, Tensor& grad_filter,
                                                  Tensor& grad_bias) {
  return ConvBackwardFilter(geo, input, grad_output, grad_filter, &grad_bias);
}

absl::Status CpuBackend::ConvBackwardFilter(const ConvGeometry& geo, const Tensor& input,
                                            const Tensor& grad_output, Tensor& grad_filter,
                                            Tensor* grad_bias) {
  const dnnl::engine& engine = CpuEngine();
  const ConvDescs d = MakeConvDescs(geo);
  const bool with_bias = grad_bias != nullptr;
  memory user_weights(d.user_weights, engine, grad_filter.raw_data());
  std::unordered_map<int, memory> args;
  if (with_bias) args.insert({DNNL_ARG_DIFF_BIAS, memory(d.bias, engine, grad_bias->raw_data())});
  // The primitive writes the filter gradient in its own layout, then it is reordered to HWIO.
  auto run = [&](const dnnl::primitive& primitive, const memory::desc& diff_weights_desc,
                 const dnnl::reorder& to_hwio) {
    const bool reorder = diff_weights_desc != d.user_weights;
    memory diff_weights = reorder ? memory(diff_weights_desc, engine) : user_weights;
    args.insert({DNNL_ARG_DIFF_WEIGHTS, diff_weights});
    Execute(primitive, args);
    if (reorder) {
      Reorder(to_hwio, diff_weights, user_weights);
    }
  };
  if (Bf16({&input, &grad_output})) {
    return Guard("Conv2D backward filter (mixed_bfloat16)", [&] {
      auto entry = ConvBf16(geo, d, with_bias);
      Operands operands;
      args.insert({DNNL_ARG_SRC, operands.Input(entry->src, d.src, input)});
      args.insert({DNNL_ARG_DIFF_DST, operands.Input(entry->diff_dst, d.dst, grad_output)});
      run(entry->backward_weights, entry->diff_weights, entry->diff_weights_to_hwio);
    });
  }
  return Guard("Conv2D backward filter", [&] {
    auto entry = DnnlPrimitiveCache::Global().GetOrCreate<ConvBackwardFilterEntry>(
        ConvKey("conv_bwd_filter", geo, with_bias), [&] {
          dnnl::convolution_backward_weights::primitive_desc pd(
              {dnnl::algorithm::convolution_direct, d.src, d.any_weights,
               with_bias ? d.bias : memory::desc(), d.dst, d.strides, d.dilates, d.pad_l, d.pad_r},
              CpuEngine(), ConvForwardPd(d, with_bias));
          return std::make_shared<ConvBackwardFilterEntry>(ConvBackwardFilterEntry{
              pd.diff_weights_desc(), FilterGradientToHwio(pd.diff_weights_desc(), d),
              dnnl::convolution_backward_weights(pd)});
        });
    args.insert({DNNL_ARG_SRC, memory(d.src, engine, Ptr(input))});
    args.insert({DNNL_ARG_DIFF_DST, memory(d.dst, engine, Ptr(grad_output))});
    run(entry->primitive, entry->diff_weights, entry->to_hwio);
  });
}

absl::StatusOr<Tensor> CpuBackend::Pool2DForward(const PoolGeometry& geo, const Tensor& input,
                                                 Tensor& output) {
  if (geo.algorithm == PoolAlgorithm::kMax) {
    // Ours, not oneDNN's: it keeps a NaN wherever it is in the window (cpu_max_pool_kernels.h).
    // A window's positions inside the image, which the forward numbers in two bytes (no product
    // of untrusted sizes: each factor is at most the image's).
    const int64_t positions = std::min(geo.window_h, geo.h) * std::min(geo.window_w, geo.w);
    if (positions > kMaxPoolWindowLimit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MaxPool2D: a ", geo.window_h, " x ", geo.window_w, " window covers ", positions,
          " pixels of a ", geo.h, " x ", geo.w, " image, more than ", kMaxPoolWindowLimit,
          "; GlobalMaxPool takes the maximum over a whole image"));
    }
    // The positions of the maxima, for the backward: two bytes an output element.
    SLUICE_ASSIGN_OR_RETURN(Tensor argmax,
                            Allocate(DType::kUint8, Shape{output.num_elements() * 2}));
    MaxPoolForwardF32(geo, In(input), Out(output), reinterpret_cast<uint16_t*>(argmax.raw_data()));
    return argmax;
  }
  Tensor workspace;
  SLUICE_RETURN_IF_ERROR(Guard("Pool2D", [&] {
    auto entry =
        DnnlPrimitiveCache::Global().GetOrCreate<PoolForwardEntry>(PoolKey("pool_fwd", geo), [&] {
          auto pd = PoolForwardPd(geo);
          return std::make_shared<PoolForwardEntry>(PoolForwardEntry{
              pd.src_desc(), pd.dst_desc(), pd.workspace_desc(), dnnl::pooling_forward(pd)});
        });
    const dnnl::engine& engine = CpuEngine();
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(entry->src, engine, Ptr(input))},
        {DNNL_ARG_DST, memory(entry->dst, engine, output.raw_data())}};
    // Max pooling's backward needs the argmax positions the forward leaves in
    // its workspace: kept in a tensor the op holds for the backward.
    const size_t ws_bytes = entry->workspace.get_size();
    if (ws_bytes > 0) {
      workspace = Tensor(DType::kUint8, Shape{static_cast<int64_t>(ws_bytes)});
      args.insert({DNNL_ARG_WORKSPACE, memory(entry->workspace, engine, workspace.raw_data())});
    }
    Execute(entry->primitive, args);
  }));
  return workspace;
}

absl::Status CpuBackend::Pool2DBackward(const PoolGeometry& geo, const Tensor& input,
                                        const Tensor& output, const Tensor& workspace,
                                        const Tensor& grad_output, Tensor& grad_input) {
  if (geo.algorithm == PoolAlgorithm::kMax) {
    MaxPoolBackwardF32(geo, reinterpret_cast<const uint16_t*>(workspace.raw_data()),
                       In(grad_output), Out(grad_input));
    return absl::OkStatus();
  }
  return Guard("Pool2D backward", [&] {
    auto entry =
        DnnlPrimitiveCache::Global().GetOrCreate<PoolBackwardEntry>(PoolKey("pool_bwd", geo), [&] {
          auto fwd = PoolForwardPd(geo);
          const dnnl::algorithm algorithm = geo.algorithm == PoolAlgorithm::kMax
                                                ? dnnl::algorithm::pooling_max
                                                : dnnl::algorithm::pooling_avg_exclude_padding;
          dnnl::pooling_backward::primitive_desc pd({algorithm,
                                                     fwd.src_desc(),
                                                     fwd.dst_desc(),
                                                     {geo.stride_h, geo.stride_w},
                                                     {geo.window_h, geo.window_w},
                                                     {geo.pad_top, geo.pad_left},
                                                     {geo.pad_bottom, geo.pad_right}},
                                                    CpuEngine(), fwd);
          return std::make_shared<PoolBackwardEntry>(PoolBackwardEntry{
              fwd.src_desc(), fwd.dst_desc(), fwd.workspace_desc(), dnnl::pooling_backward(pd)});
        });
    const dnnl::engine& engine = CpuEngine();
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_DIFF_DST, memory(entry->dst, engine, Ptr(grad_output))},
        {DNNL_ARG_DIFF_SRC, memory(entry->src, engine, grad_input.raw_data())}};
    if (entry->workspace.get_size() > 0) {
      args.insert({DNNL_ARG_WORKSPACE, memory(entry->workspace, engine, Ptr(workspace))});
    }
    Execute(entry->primitive, args);
  });
}

namespace {

absl::Status SameBatchNormType(const char* op, const Tensor& x,
                               std::initializer_list<const Tensor*> data) {
  for (const Tensor* t : data) {
    if (t->dtype() != x.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": x is ", DTypeName(x.dtype()),
                                                     " but another activation is ",
                                                     DTypeName(t->dtype())));
    }
  }
  return absl::OkStatus();
}

// Batch norm's data is float32 or bfloat16 (x, y and their gradients alike); the statistics, scale
// and shift are float32 either way.
absl::Status BatchNormData(const char* op, const Tensor& x) {
  if (x.dtype() == DType::kFloat32 || x.dtype() == DType::kBFloat16) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": x is ", DTypeName(x.dtype()), ", not float32 or bfloat16"));
}

const uint16_t* Bits(const Tensor& t) { return static_cast<const uint16_t*>(t.raw_data()); }
uint16_t* OutBits(const Tensor& t) {
  return static_cast<uint16_t*>(const_cast<void*>(t.raw_data()));
}
uint8_t* Mask(const Tensor* t) {
  return t == nullptr ? nullptr : static_cast<uint8_t*>(const_cast<void*>(t->raw_data()));
}

// The fused ReLU's workspace for x: its mask (BatchNormReluMaskBytes).
int64_t ReluMaskBytes(const Tensor& x) {
  const BatchNormRows r = BatchNormRowsOf(x);
  return BatchNormReluMaskBytes(r.m, r.c);
}

absl::Status CheckReluMask(const char* op, const Tensor* workspace, const Tensor& x) {
  if (workspace == nullptr) return absl::OkStatus();
  const int64_t need = ReluMaskBytes(x);
  if (workspace->byte_size() >= static_cast<size_t>(need)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(op, ": the workspace has ", workspace->byte_size(),
                                                 " bytes, not the ", need,
                                                 " of BatchNormReluWorkspaceBytes"));
}

// Training (batch statistics written to mean and variance) or inference (read from them); with
// `workspace`, the ReLU fused in and its mask written there. Our kernels for float32 and bfloat16
// data (cpu_batch_norm_kernels.cc): oneDNN 2.6's NHWC batch norm was several times slower, and as
// slow on bfloat16 as on float32.
absl::Status BatchNormForward(const char* op, const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, float epsilon, bool global, Tensor& y,
                              const Tensor& mean, const Tensor& variance, Tensor* workspace) {
  SLUICE_RETURN_IF_ERROR(SameBatchNormType(op, x, {&y}));
  SLUICE_RETURN_IF_ERROR(BatchNormData(op, x));
  SLUICE_RETURN_IF_ERROR(CheckReluMask(op, workspace, x));
  const BatchNormRows r = BatchNormRowsOf(x);
  if (x.dtype() == DType::kBFloat16) {
    if (global) {
      BatchNormInferenceBF16(Bits(x), r.m, r.c, In(gamma), In(beta), In(mean), In(variance),
                             epsilon, OutBits(y));
    } else {
      BatchNormTrainingBF16(Bits(x), r.m, r.c, In(gamma), In(beta), epsilon, OutBits(y), Out(mean),
                            Out(variance), Mask(workspace));
    }
  } else if (global) {
    BatchNormInferenceF32(In(x), r.m, r.c, In(gamma), In(beta), In(mean), In(variance), epsilon,
                          Out(y));
  } else {
    BatchNormTrainingF32(In(x), r.m, r.c, In(gamma), In(beta), epsilon, Out(y), Out(mean),
                         Out(variance), Mask(workspace));
  }
  return absl::OkStatus();
}

absl::Status BatchNormBackwardRun(const char* op, const Tensor& x, const Tensor& gamma,
                                  const Tensor& mean, const Tensor& variance,
                                  const Tensor* workspace, const Tensor& grad_y, float epsilon,
                                  bool global, Tensor& grad_x, Tensor& grad_gamma,
                                  Tensor& grad_beta) {
  SLUICE_RETURN_IF_ERROR(SameBatchNormType(op, x, {&grad_y, &grad_x}));
  SLUICE_RETURN_IF_ERROR(BatchNormData(op, x));
  SLUICE_RETURN_IF_ERROR(CheckReluMask(op, workspace, x));
  const BatchNormRows r = BatchNormRowsOf(x);
  if (x.dtype() == DType::kBFloat16) {
    BatchNormBackwardBF16(Bits(x), Bits(grad_y), Mask(workspace), r.m, r.c, In(gamma), In(mean),
                          In(variance), epsilon, global, OutBits(grad_x), Out(grad_gamma),
                          Out(grad_beta));
  } else {
    BatchNormBackwardF32(In(x), In(grad_y), Mask(workspace), r.m, r.c, In(gamma), In(mean),
                         In(variance), epsilon, global, Out(grad_x), Out(grad_gamma),
                         Out(grad_beta));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CpuBackend::BatchNormForwardTraining(const Tensor& x, const Tensor& gamma,
                                                  const Tensor& beta, float epsilon, Tensor& y,
                                                  Tensor& mean, Tensor& variance) {
  return BatchNormForward("BatchNormTraining", x, gamma, beta, epsilon, /*global=*/false, y, mean,
                          variance, nullptr);
}

absl::Status CpuBackend::BatchNormForwardInference(const Tensor& x, const Tensor& gamma,
                                                   const Tensor& beta, const Tensor& mean,
                                                   const Tensor& variance, float epsilon,
                                                   Tensor& y) {
  return BatchNormForward("BatchNormInference", x, gamma, beta, epsilon, /*global=*/true, y, mean,
                          variance, nullptr);
}

absl::Status CpuBackend::BatchNormBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                           const Tensor& variance, const Tensor& grad_y,
                                           float epsilon, bool statistics_are_constant,
                                           Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  return BatchNormBackwardRun("BatchNorm backward", x, gamma, mean, variance, nullptr, grad_y,
                              epsilon, statistics_are_constant, grad_x, grad_gamma, grad_beta);
}

int64_t CpuBackend::BatchNormReluWorkspaceBytes(const Tensor& x) const { return ReluMaskBytes(x); }

absl::Status CpuBackend::BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                                      const Tensor& beta, float epsilon, Tensor& y,
                                                      Tensor& mean, Tensor& variance,
                                                      Tensor& workspace) {
  return BatchNormForward("BatchNormReluTraining", x, gamma, beta, epsilon, /*global=*/false, y,
                          mean, variance, &workspace);
}

absl::Status CpuBackend::BatchNormReluBackward(const Tensor& x, const Tensor& gamma,
                                               const Tensor& mean, const Tensor& variance,
                                               const Tensor& workspace, const Tensor& grad_y,
                                               float epsilon, Tensor& grad_x, Tensor& grad_gamma,
                                               Tensor& grad_beta) {
  return BatchNormBackwardRun("BatchNormRelu backward", x, gamma, mean, variance, &workspace,
                              grad_y, epsilon, /*global=*/false, grad_x, grad_gamma, grad_beta);
}

void SetConvForwardAlgorithm(ConvForwardAlgorithm algorithm) {
  conv_forward_algorithm.store(static_cast<int>(algorithm), std::memory_order_relaxed);
}

void ReadConvForwardAlgorithmFromEnvironment() {
  conv_forward_algorithm.store(kUnread, std::memory_order_relaxed);
}

absl::StatusOr<ConvForwardAlgorithm> GetConvForwardAlgorithm() {
  return ConvForwardAlgorithmSetting();
}

absl::StatusOr<ConvForwardAlgorithm> ConvForwardAlgorithmFor(const ConvGeometry& geo) {
  SLUICE_ASSIGN_OR_RETURN(const ConvForwardAlgorithm set, ConvForwardAlgorithmSetting());
  if (!DeconvolvableGeometry(geo)) return ConvForwardAlgorithm::kDirect;
  if (set != ConvForwardAlgorithm::kAuto) return set;
  static const bool avx2 = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx2_vnni;
  }();
  return avx2 ? ConvForwardAlgorithm::kDeconvolution : ConvForwardAlgorithm::kDirect;
}

}  // namespace sluice::train::backend::cpu
