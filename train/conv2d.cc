#include "train/conv2d.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "train/broadcast.h"
#include "train/dnnl_engine.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Everything the three primitives share; oneDNN dims are always logical NCHW
// / OIHW, the tags give our physical layouts.
struct ConvGeometry {
  memory::desc src, weights, dst;
  memory::dims strides, dilates, pad_l, pad_r;

  dnnl::convolution_forward::primitive_desc Forward() const {
    return {{dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src, weights,
             dst, strides, dilates, pad_l, pad_r},
            CpuEngine()};
  }
};

void* Ptr(const Tensor& t) { return const_cast<void*>(t.raw_data()); }

}  // namespace

absl::StatusOr<Tensor> Conv2D(const Tensor& input, const Tensor& filter, Conv2DOptions options) {
  RETURN_IF_ERROR(RequireFloat32(input, "Conv2D", "input"));
  RETURN_IF_ERROR(RequireFloat32(filter, "Conv2D", "filter"));
  if (input.rank() != 4 || filter.rank() != 4 || input.dim(3) != filter.dim(2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Conv2D: want input NHWC and filter HWIO with matching channels, got input ",
                     input.shape().DebugString(), " and filter ", filter.shape().DebugString()));
  }
  const int64_t n = input.dim(0), h = input.dim(1), w = input.dim(2), c = input.dim(3);
  const int64_t kh = filter.dim(0), kw = filter.dim(1), o = filter.dim(3);
  ASSIGN_OR_RETURN(Window wh,
                   ComputeWindow(h, kh, options.stride_h, options.dilation_h, options.padding));
  ASSIGN_OR_RETURN(Window ww,
                   ComputeWindow(w, kw, options.stride_w, options.dilation_w, options.padding));
  Tensor out(DType::kFloat32, Shape{n, wh.out, ww.out, o});
  if (out.num_elements() == 0) return out;
  const auto f32 = memory::data_type::f32;
  const ConvGeometry geo{memory::desc({n, c, h, w}, f32, Tag::nhwc),
                         memory::desc({o, c, kh, kw}, f32, Tag::hwio),
                         memory::desc({n, o, wh.out, ww.out}, f32, Tag::nhwc),
                         {options.stride_h, options.stride_w},
                         {options.dilation_h - 1, options.dilation_w - 1},
                         {wh.pad_before, ww.pad_before},
                         {wh.pad_after, ww.pad_after}};
  const dnnl::engine& engine = CpuEngine();
  {
    auto pd = geo.Forward();
    dnnl::stream stream(engine);
    dnnl::convolution_forward(pd).execute(
        stream, {{DNNL_ARG_SRC, memory(geo.src, engine, Ptr(input))},
                 {DNNL_ARG_WEIGHTS, memory(geo.weights, engine, Ptr(filter))},
                 {DNNL_ARG_DST, memory(geo.dst, engine, out.raw_data())}});
    stream.wait();
  }
  if (ShouldRecord({input, filter})) {
    RecordOperation({input, filter}, out,
                    [input, filter,
                     geo](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      const dnnl::engine& engine = CpuEngine();
                      auto fwd = geo.Forward();
                      Tensor g_in(DType::kFloat32, input.shape());
                      Tensor g_filter(DType::kFloat32, filter.shape());
                      dnnl::stream stream(engine);
                      dnnl::convolution_backward_data::primitive_desc data_pd(
                          {dnnl::algorithm::convolution_direct, geo.src, geo.weights, geo.dst,
                           geo.strides, geo.dilates, geo.pad_l, geo.pad_r},
                          engine, fwd);
                      dnnl::convolution_backward_data(data_pd).execute(
                          stream, {{DNNL_ARG_DIFF_DST, memory(geo.dst, engine, Ptr(g))},
                                   {DNNL_ARG_WEIGHTS, memory(geo.weights, engine, Ptr(filter))},
                                   {DNNL_ARG_DIFF_SRC, memory(geo.src, engine, g_in.raw_data())}});
                      dnnl::convolution_backward_weights::primitive_desc weights_pd(
                          {dnnl::algorithm::convolution_direct, geo.src, geo.weights, geo.dst,
                           geo.strides, geo.dilates, geo.pad_l, geo.pad_r},
                          engine, fwd);
                      dnnl::convolution_backward_weights(weights_pd)
                          .execute(stream, {{DNNL_ARG_SRC, memory(geo.src, engine, Ptr(input))},
                                            {DNNL_ARG_DIFF_DST, memory(geo.dst, engine, Ptr(g))},
                                            {DNNL_ARG_DIFF_WEIGHTS,
                                             memory(geo.weights, engine, g_filter.raw_data())}});
                      stream.wait();
                      return std::vector<std::optional<Tensor>>{g_in, g_filter};
                    });
  }
  return out;
}

}  // namespace sluice::train
