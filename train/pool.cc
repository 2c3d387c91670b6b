#include "train/pool.h"

#include <memory>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "train/broadcast.h"
#include "train/dnnl_engine.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

using dnnl::memory;

void* Ptr(const Tensor& t) { return const_cast<void*>(t.raw_data()); }

absl::StatusOr<Tensor> Pool(dnnl::algorithm algorithm, const char* name, const Tensor& input,
                            const Pool2DOptions& options) {
  RETURN_IF_ERROR(RequireFloat32(input, name, "input"));
  if (input.rank() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": want NHWC input, got ", input.shape().DebugString()));
  }
  const int64_t n = input.dim(0), h = input.dim(1), w = input.dim(2), c = input.dim(3);
  ASSIGN_OR_RETURN(Window wh,
                   ComputeWindow(h, options.window_h, options.stride_h, 1, options.padding));
  ASSIGN_OR_RETURN(Window ww,
                   ComputeWindow(w, options.window_w, options.stride_w, 1, options.padding));
  Tensor out(DType::kFloat32, Shape{n, wh.out, ww.out, c});
  if (out.num_elements() == 0) return out;
  const auto f32 = memory::data_type::f32;
  const memory::desc src({n, c, h, w}, f32, memory::format_tag::nhwc);
  const memory::desc dst({n, c, wh.out, ww.out}, f32, memory::format_tag::nhwc);
  const memory::dims strides{options.stride_h, options.stride_w};
  const memory::dims kernel{options.window_h, options.window_w};
  const memory::dims pad_l{wh.pad_before, ww.pad_before}, pad_r{wh.pad_after, ww.pad_after};
  const dnnl::engine& engine = CpuEngine();
  auto forward = [=, &engine] {
    return dnnl::pooling_forward::primitive_desc(
        {dnnl::prop_kind::forward_training, algorithm, src, dst, strides, kernel, pad_l, pad_r},
        engine);
  };
  const bool record = ShouldRecord({input});
  auto fwd_pd = forward();
  // Max pooling's backward needs the argmax positions the forward leaves in
  // its workspace; it lives as long as the backward closure.
  std::shared_ptr<memory> workspace;
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(src, engine, Ptr(input))},
                                          {DNNL_ARG_DST, memory(dst, engine, out.raw_data())}};
  if (fwd_pd.workspace_desc().get_size() > 0) {
    workspace = std::make_shared<memory>(fwd_pd.workspace_desc(), engine);
    args.insert({DNNL_ARG_WORKSPACE, *workspace});
  }
  dnnl::stream stream(engine);
  dnnl::pooling_forward(fwd_pd).execute(stream, args);
  stream.wait();
  if (record) {
    RecordOperation({input}, out,
                    [=](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      const dnnl::engine& engine = CpuEngine();
                      Tensor g_in(DType::kFloat32, input.shape());
                      dnnl::pooling_backward::primitive_desc pd(
                          {algorithm, src, dst, strides, kernel, pad_l, pad_r}, engine, forward());
                      std::unordered_map<int, memory> args = {
                          {DNNL_ARG_DIFF_DST, memory(dst, engine, Ptr(g))},
                          {DNNL_ARG_DIFF_SRC, memory(src, engine, g_in.raw_data())}};
                      if (workspace) args.insert({DNNL_ARG_WORKSPACE, *workspace});
                      dnnl::stream stream(engine);
                      dnnl::pooling_backward(pd).execute(stream, args);
                      stream.wait();
                      return std::vector<std::optional<Tensor>>{g_in};
                    });
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> MaxPool2D(const Tensor& input, Pool2DOptions options) {
  return Pool(dnnl::algorithm::pooling_max, "MaxPool2D", input, options);
}

absl::StatusOr<Tensor> AvgPool2D(const Tensor& input, Pool2DOptions options) {
  return Pool(dnnl::algorithm::pooling_avg_exclude_padding, "AvgPool2D", input, options);
}

}  // namespace sluice::train
