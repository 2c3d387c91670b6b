#include "train/export/onnx_export.h"

#include <algorithm>
#include <cstring>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "io/atomic_file.h"
#include "onnx/onnx_pb.h"  // defines ONNX_API, then includes onnx-ml.pb.h (ONNX_ML)
#include "train/autodiff/variable.h"
#include "train/backend/transfer.h"
#include "train/layers/activation.h"
#include "train/layers/activation_layer.h"
#include "train/layers/add.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/concatenate.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/depthwise_conv2d.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/kernel_layer.h"
#include "train/layers/max_pool.h"
#include "train/layers/merge.h"
#include "train/layers/model.h"
#include "train/layers/multiply.h"
#include "train/layers/recompute.h"
#include "train/layers/relu.h"
#include "train/layers/reshape.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/layers/zero_padding2d.h"
#include "train/ops/padding.h"
#include "train/ops/pool.h"
#include "train/ops/transpose.h"

namespace sluice::train::exporting {
namespace {

// ONNX IR version 8 goes with opsets up to 17 (ONNX 1.12, Debian's).
constexpr int64_t kIrVersion = 8;

using Value = OnnxValue;

std::string Join(const std::string& path, const std::string& name) {
  return path.empty() ? name : absl::StrCat(path, "/", name);
}

class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* graph, const OnnxExportOptions& options)
      : graph_(graph), options_(options) {}

  // Emits `layer` (at `path`, for names and errors) on `in`; returns its output.
  absl::StatusOr<Value> Layer(layers::Module& layer, const Value& in, const std::string& path);

  // A float initializer from a variable, read through the backend; `perm` transposes it first,
  // and `dims` (the same element count) replaces its shape after.
  absl::StatusOr<std::string> Initializer(autodiff::Variable& v, const std::vector<int>& perm = {},
                                          const std::vector<int64_t>& dims = {});
  // Appends Initializer(v, perm, dims)'s name to `inputs`.
  absl::Status AddInput(std::vector<std::string>& inputs, autodiff::Variable& v,
                        const std::vector<int>& perm = {}, const std::vector<int64_t>& dims = {});
  std::string Constant(const std::string& name, float value);
  // A 1-D int64 initializer (Pad's pads, Reshape's shape), named uniquely.
  std::string Int64s(const std::string& path, const std::vector<int64_t>& values);

  onnx::NodeProto* Node(const std::string& op, const std::string& path,
                        std::vector<std::string> inputs, std::string output = "");
  Value ToNchw(const Value& v, const std::string& path);
  Value ToNhwc(const Value& v, const std::string& path);

 private:
  absl::StatusOr<Value> Dense(layers::Dense& layer, const Value& in, const std::string& path);
  absl::StatusOr<Value> Conv(layers::Conv2D& layer, const Value& in, const std::string& path);
  absl::StatusOr<Value> DepthwiseConv(layers::DepthwiseConv2D& layer, const Value& in,
                                      const std::string& path);
  absl::StatusOr<Value> ZeroPadding(const layers::ZeroPadding2D& layer, const Value& in,
                                    const std::string& path);
  absl::StatusOr<Value> Relu(const layers::ReLU& layer, const Value& in, const std::string& path);
  absl::StatusOr<Value> Reshape(const layers::Reshape& layer, const Value& in,
                                const std::string& path);
  absl::StatusOr<Value> GlobalMaxPool(const layers::GlobalMaxPool& layer, const Value& in,
                                      const std::string& path);
  absl::StatusOr<Value> BatchNorm(layers::BatchNorm& layer, const Value& in,
                                  const std::string& path);
  absl::StatusOr<Value> Pool(const char* op, const ops::Pool2DOptions& options, const Value& in,
                             const std::string& path);
  absl::StatusOr<Value> Residual(layers::ResidualBlock& block, const Value& in,
                                 const std::string& path);
  absl::StatusOr<Value> Activate(layers::Activation activation, Value v, const std::string& path);
  // A functional model of one input and one output, its graph's nodes in the order they run.
  absl::StatusOr<Value> Functional(layers::Model& model, const Value& in, const std::string& path);
  // Add, Multiply or Concatenate on `in`.
  absl::StatusOr<Value> Merge(layers::Merge& layer, std::vector<Value> in, const std::string& path);

  // Emits `children` one after another, each at path/i/name.
  absl::StatusOr<Value> Chain(const std::vector<layers::Module*>& children, const Value& in,
                              const std::string& path);
  // A user's own layer, through its OnnxExportOptions::custom_layers entry.
  absl::StatusOr<Value> Custom(const OnnxLayerExporter& exporter, layers::Module& layer,
                               const Value& in, const std::string& path);

  onnx::GraphProto* graph_;
  const OnnxExportOptions& options_;
  int64_t next_ = 0;
  // The initializers written, by variable name and permutation: a shared layer's weights are
  // written once.
  absl::flat_hash_map<std::string, std::string> initializers_;
  absl::flat_hash_set<std::string> initializer_names_;
};

onnx::NodeProto* GraphBuilder::Node(const std::string& op, const std::string& path,
                                    std::vector<std::string> inputs, std::string output) {
  onnx::NodeProto* node = graph_->add_node();
  const std::string name = absl::StrCat(Join(path, op), "_", next_++);
  node->set_name(name);
  node->set_op_type(op);
  for (std::string& input : inputs) node->add_input(std::move(input));
  node->add_output(output.empty() ? name : std::move(output));
  return node;
}

void SetInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void SetFloat(onnx::NodeProto* node, const std::string& name, float value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

absl::StatusOr<std::string> GraphBuilder::Initializer(autodiff::Variable& v,
                                                      const std::vector<int>& perm,
                                                      const std::vector<int64_t>& dims) {
  const std::string key =
      absl::StrCat(v.name(), "|", absl::StrJoin(perm, ","), "|", absl::StrJoin(dims, ","));
  if (auto it = initializers_.find(key); it != initializers_.end()) return it->second;
  // The same variable under another permutation or shape (not written by the built-in layers)
  // gets a name of its own.
  const std::string name =
      initializer_names_.contains(v.name()) ? absl::StrCat(v.name(), "_", key) : v.name();
  Tensor value = v.value();
  if (value.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX export: variable '", v.name(), "' is ",
                                                   DTypeName(value.dtype()), ", not float32"));
  }
  if (!perm.empty()) {
    SLUICE_ASSIGN_OR_RETURN(value, ops::Transpose(value, perm));
  }
  SLUICE_ASSIGN_OR_RETURN(const Tensor host, backend::ToHost(value));
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  if (dims.empty()) {
    for (int i = 0; i < host.rank(); ++i) t->add_dims(host.dim(i));
  } else {
    for (int64_t d : dims) t->add_dims(d);
  }
  // ONNX's raw_data is little-endian, as the host is.
  t->set_raw_data(static_cast<const char*>(host.raw_data()), host.num_elements() * sizeof(float));
  initializers_.emplace(key, name);
  initializer_names_.insert(name);
  return name;
}

absl::Status GraphBuilder::AddInput(std::vector<std::string>& inputs, autodiff::Variable& v,
                                    const std::vector<int>& perm,
                                    const std::vector<int64_t>& dims) {
  SLUICE_ASSIGN_OR_RETURN(std::string name, Initializer(v, perm, dims));
  inputs.push_back(std::move(name));
  return absl::OkStatus();
}

std::string GraphBuilder::Constant(const std::string& name, float value) {
  for (const onnx::TensorProto& t : graph_->initializer()) {
    if (t.name() == name) return name;
  }
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(value);
  return name;
}

std::string GraphBuilder::Int64s(const std::string& path, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(absl::StrCat(Join(path, "int64s"), "_", next_++));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return t->name();
}

Value GraphBuilder::ToNchw(const Value& v, const std::string& path) {
  if (v.dims.size() != 4 || v.nchw) return v;
  onnx::NodeProto* node = Node("Transpose", path, {v.name});
  SetInts(node, "perm", {0, 3, 1, 2});
  return Value{node->output(0), v.dims, true};
}

Value GraphBuilder::ToNhwc(const Value& v, const std::string& path) {
  if (!v.nchw) return v;
  onnx::NodeProto* node = Node("Transpose", path, {v.name});
  SetInts(node, "perm", {0, 2, 3, 1});
  return Value{node->output(0), v.dims, false};
}

absl::StatusOr<Value> GraphBuilder::Activate(layers::Activation activation, Value v,
                                             const std::string& path) {
  switch (activation) {
    case layers::Activation::kLinear:
      return v;
    case layers::Activation::kRelu:
      v.name = Node("Relu", path, {v.name})->output(0);
      return v;
    case layers::Activation::kSigmoid:
      v.name = Node("Sigmoid", path, {v.name})->output(0);
      return v;
    case layers::Activation::kTanh:
      v.name = Node("Tanh", path, {v.name})->output(0);
      return v;
    case layers::Activation::kSoftmax: {
      // Over the channels, the last dim in sluice's layout.
      onnx::NodeProto* node = Node("Softmax", path, {v.name});
      SetInt(node, "axis", v.nchw ? 1 : -1);
      v.name = node->output(0);
      return v;
    }
    case layers::Activation::kGelu: {
      // The exact GELU, as the backends compute it: 0.5 x (1 + erf(x / sqrt 2)). Gelu itself is
      // opset 20.
      const std::string scaled =
          Node("Mul", path,
               {v.name, Constant("sluice/inv_sqrt2", static_cast<float>(1 / std::numbers::sqrt2))})
              ->output(0);
      const std::string erf = Node("Erf", path, {scaled})->output(0);
      const std::string one_plus = Node("Add", path, {erf, Constant("sluice/one", 1)})->output(0);
      const std::string half_x =
          Node("Mul", path, {v.name, Constant("sluice/half", 0.5f)})->output(0);
      v.name = Node("Mul", path, {half_x, one_plus})->output(0);
      return v;
    }
  }
  return absl::InternalError("ONNX export: unknown activation");
}

absl::StatusOr<Value> GraphBuilder::Dense(layers::Dense& layer, const Value& in,
                                          const std::string& path) {
  if (in.dims.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX export: ", path, ": Dense takes [batch, ",
                                                   "features], got rank ", in.dims.size()));
  }
  std::vector<std::string> inputs = {in.name};
  SLUICE_RETURN_IF_ERROR(AddInput(inputs, layer.kernel()));
  if (layer.bias() != nullptr) SLUICE_RETURN_IF_ERROR(AddInput(inputs, *layer.bias()));
  Value out{Node("Gemm", path, std::move(inputs))->output(0), {in.dims[0], layer.units()}, false};
  return Activate(layer.activation(), std::move(out), path);
}

absl::StatusOr<Value> GraphBuilder::Conv(layers::Conv2D& layer, const Value& in,
                                         const std::string& path) {
  if (in.dims.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("ONNX export: ", path, ": Conv2D takes NHWC, got rank ", in.dims.size()));
  }
  SLUICE_ASSIGN_OR_RETURN(const layers::LayerConfig config, layer.GetConfig());
  SLUICE_ASSIGN_OR_RETURN(const int64_t kh, config.Int("kernel_h"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t kw, config.Int("kernel_w"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t sh, config.Int("stride_h"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t sw, config.Int("stride_w"));
  const int64_t dh = config.IntOr("dilation_h", 1), dw = config.IntOr("dilation_w", 1);
  const int64_t groups = config.IntOr("groups", 1);
  ops::Padding padding;
  ops::Pads pads;
  SLUICE_RETURN_IF_ERROR(layers::ReadPadding(config, padding, pads));
  SLUICE_ASSIGN_OR_RETURN(const ops::Window h, ops::ComputeWindow(in.dims[1], kh, sh, dh, padding,
                                                                  pads.top, pads.bottom));
  SLUICE_ASSIGN_OR_RETURN(const ops::Window w, ops::ComputeWindow(in.dims[2], kw, sw, dw, padding,
                                                                  pads.left, pads.right));

  const Value x = ToNchw(in, path);
  std::vector<std::string> inputs = {x.name};
  // HWIO (Keras) to OIHW (ONNX).
  SLUICE_RETURN_IF_ERROR(AddInput(inputs, layer.kernel(), {3, 2, 0, 1}));
  if (layer.bias() != nullptr) SLUICE_RETURN_IF_ERROR(AddInput(inputs, *layer.bias()));
  onnx::NodeProto* node = Node("Conv", path, std::move(inputs));
  SetInts(node, "kernel_shape", {kh, kw});
  SetInts(node, "strides", {sh, sw});
  SetInts(node, "dilations", {dh, dw});
  SetInts(node, "pads", {h.pad_before, w.pad_before, h.pad_after, w.pad_after});
  // ONNX's grouped filter [O, C / group, kh, kw] is the transposed [kh, kw, C / groups, O].
  SetInt(node, "group", groups);
  const int64_t filters = layer.kernel().value().dim(3);
  Value out{node->output(0), {in.dims[0], h.out, w.out, filters}, true};
  return Activate(layer.activation(), std::move(out), path);
}

// ONNX's Conv with group = channels: the kernel [kh, kw, c, m] holds the bytes of the grouped
// filter [kh, kw, 1, c * m]; transposed to [c, m, kh, kw] it is ONNX's [c * m, 1, kh, kw].
absl::StatusOr<Value> GraphBuilder::DepthwiseConv(layers::DepthwiseConv2D& layer, const Value& in,
                                                  const std::string& path) {
  if (in.dims.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: ", path, ": DepthwiseConv2D takes NHWC, got rank ", in.dims.size()));
  }
  const layers::DepthwiseConv2DOptions& o = layer.options();
  const layers::KernelSize k = layer.kernel_size();
  SLUICE_ASSIGN_OR_RETURN(const ops::Window h, ops::ComputeWindow(in.dims[1], k.h, o.strides.h,
                                                                  o.dilation_rate.h, o.padding));
  SLUICE_ASSIGN_OR_RETURN(const ops::Window w, ops::ComputeWindow(in.dims[2], k.w, o.strides.w,
                                                                  o.dilation_rate.w, o.padding));
  const int64_t channels = in.dims[3], outputs = channels * o.depth_multiplier;
  const Value x = ToNchw(in, path);
  std::vector<std::string> inputs = {x.name};
  SLUICE_RETURN_IF_ERROR(AddInput(inputs, layer.kernel(), {2, 3, 0, 1}, {outputs, 1, k.h, k.w}));
  if (layer.bias() != nullptr) SLUICE_RETURN_IF_ERROR(AddInput(inputs, *layer.bias()));
  onnx::NodeProto* node = Node("Conv", path, std::move(inputs));
  SetInts(node, "kernel_shape", {k.h, k.w});
  SetInts(node, "strides", {o.strides.h, o.strides.w});
  SetInts(node, "dilations", {o.dilation_rate.h, o.dilation_rate.w});
  SetInts(node, "pads", {h.pad_before, w.pad_before, h.pad_after, w.pad_after});
  SetInt(node, "group", channels);
  Value out{node->output(0), {in.dims[0], h.out, w.out, outputs}, true};
  return Activate(layer.activation(), std::move(out), path);
}

absl::StatusOr<Value> GraphBuilder::ZeroPadding(const layers::ZeroPadding2D& layer, const Value& in,
                                                const std::string& path) {
  if (in.dims.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: ", path, ": ZeroPadding2D takes NHWC, got rank ", in.dims.size()));
  }
  const layers::Padding2D& p = layer.padding();
  const Value x = ToNchw(in, path);
  // NCHW: the begins of the four dims, then their ends; the constant defaults to 0.
  const std::string pads = Int64s(path, {0, 0, p.top, p.left, 0, 0, p.bottom, p.right});
  return Value{
      Node("Pad", path, {x.name, pads})->output(0),
      {in.dims[0], in.dims[1] + p.top + p.bottom, in.dims[2] + p.left + p.right, in.dims[3]},
      true};
}

// Keras' ReLU: Relu, Clip for ReLU6 (max_value alone), LeakyRelu for a slope alone, and otherwise
// the composition ReLU::Forward computes.
absl::StatusOr<Value> GraphBuilder::Relu(const layers::ReLU& layer, const Value& in,
                                         const std::string& path) {
  const layers::ReLUOptions& o = layer.options();
  Value v = in;
  if (o.threshold == 0 && o.negative_slope == 0) {
    v.name = o.max_value ? Node("Clip", path,
                                {in.name, Constant("sluice/zero", 0),
                                 Constant(absl::StrCat("sluice/max_", *o.max_value), *o.max_value)})
                               ->output(0)
                         : Node("Relu", path, {in.name})->output(0);
    return v;
  }
  if (o.threshold == 0 && !o.max_value) {
    onnx::NodeProto* node = Node("LeakyRelu", path, {in.name});
    SetFloat(node, "alpha", o.negative_slope);
    v.name = node->output(0);
    return v;
  }
  std::string positive;
  if (o.threshold != 0) {
    const std::string threshold =
        Constant(absl::StrCat("sluice/threshold_", o.threshold), o.threshold);
    onnx::NodeProto* cast =
        Node("Cast", path, {Node("Greater", path, {in.name, threshold})->output(0)});
    SetInt(cast, "to", onnx::TensorProto::FLOAT);
    positive = Node("Mul", path, {in.name, cast->output(0)})->output(0);
  } else {
    positive = Node("Relu", path, {in.name})->output(0);
  }
  if (o.max_value) {
    positive = Node("Min", path,
                    {positive, Constant(absl::StrCat("sluice/max_", *o.max_value), *o.max_value)})
                   ->output(0);
  }
  if (o.negative_slope != 0) {
    const std::string below =
        Node("Relu", path,
             {Node("Sub", path,
                   {Constant(absl::StrCat("sluice/threshold_", o.threshold), o.threshold), in.name})
                  ->output(0)})
            ->output(0);
    const std::string scaled =
        Node("Mul", path,
             {below, Constant(absl::StrCat("sluice/slope_", o.negative_slope), o.negative_slope)})
            ->output(0);
    positive = Node("Sub", path, {positive, scaled})->output(0);
  }
  v.name = positive;
  return v;
}

absl::StatusOr<Value> GraphBuilder::Reshape(const layers::Reshape& layer, const Value& in,
                                            const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const Shape shape_in, Shape::FromUntrustedDims(in.dims));
  SLUICE_ASSIGN_OR_RETURN(const Shape out_shape,
                          layers::Reshape::OutputShape(layer.target_shape(), shape_in));
  // Keras reshapes NHWC order; 0 keeps the (dynamic) batch dimension.
  const Value x = ToNhwc(in, path);
  std::vector<int64_t> target = {0};
  target.insert(target.end(), layer.target_shape().begin(), layer.target_shape().end());
  const std::string shape = Int64s(path, target);
  return Value{Node("Reshape", path, {x.name, shape})->output(0),
               std::vector<int64_t>(out_shape.dims().begin(), out_shape.dims().end()), false};
}

absl::StatusOr<Value> GraphBuilder::GlobalMaxPool(const layers::GlobalMaxPool& layer,
                                                  const Value& in, const std::string& path) {
  if (in.dims.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: ", path, ": GlobalMaxPool takes NHWC, got rank ", in.dims.size()));
  }
  const Value x = ToNchw(in, path);
  const std::string pooled = Node("GlobalMaxPool", path, {x.name})->output(0);
  if (layer.keepdims()) return Value{pooled, {in.dims[0], 1, 1, in.dims[3]}, true};
  onnx::NodeProto* node = Node("Flatten", path, {pooled});
  SetInt(node, "axis", 1);
  return Value{node->output(0), {in.dims[0], in.dims[3]}, false};
}

absl::StatusOr<Value> GraphBuilder::BatchNorm(layers::BatchNorm& layer, const Value& in,
                                              const std::string& path) {
  if (in.dims.size() != 4 && in.dims.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: ", path, ": BatchNorm takes NHWC or [batch, C], got rank ", in.dims.size()));
  }
  SLUICE_ASSIGN_OR_RETURN(const layers::LayerConfig config, layer.GetConfig());
  SLUICE_ASSIGN_OR_RETURN(const double epsilon, config.Float("epsilon"));
  const Value x = ToNchw(in, path);
  std::vector<std::string> inputs = {x.name};
  for (autodiff::Variable* v :
       {&layer.gamma(), &layer.beta(), &layer.moving_mean(), &layer.moving_variance()}) {
    SLUICE_RETURN_IF_ERROR(AddInput(inputs, *v));
  }
  onnx::NodeProto* node = Node("BatchNormalization", path, std::move(inputs));
  SetFloat(node, "epsilon", static_cast<float>(epsilon));
  return Value{node->output(0), x.dims, x.nchw};
}

absl::StatusOr<Value> GraphBuilder::Pool(const char* op, const ops::Pool2DOptions& options,
                                         const Value& in, const std::string& path) {
  if (in.dims.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("ONNX export: ", path, ": ", op, " takes NHWC, got rank ", in.dims.size()));
  }
  SLUICE_ASSIGN_OR_RETURN(
      const ops::Window h,
      ops::ComputeWindow(in.dims[1], options.window_h, options.stride_h, 1, options.padding,
                         options.pads.top, options.pads.bottom));
  SLUICE_ASSIGN_OR_RETURN(
      const ops::Window w,
      ops::ComputeWindow(in.dims[2], options.window_w, options.stride_w, 1, options.padding,
                         options.pads.left, options.pads.right));
  const Value x = ToNchw(in, path);
  onnx::NodeProto* node = Node(op, path, {x.name});
  SetInts(node, "kernel_shape", {options.window_h, options.window_w});
  SetInts(node, "strides", {options.stride_h, options.stride_w});
  SetInts(node, "pads", {h.pad_before, w.pad_before, h.pad_after, w.pad_after});
  // TensorFlow's average leaves the padding out, which is ONNX's default (count_include_pad 0).
  return Value{node->output(0), {in.dims[0], h.out, w.out, in.dims[3]}, true};
}

absl::StatusOr<Value> GraphBuilder::Residual(layers::ResidualBlock& block, const Value& in,
                                             const std::string& path) {
  const std::vector<layers::Module*> children = block.Children();
  const std::vector<std::string> names = {"conv1", "bn1",           "conv2",
                                          "bn2",   "shortcut_conv", "shortcut_bn"};
  const Value x = ToNchw(in, path);
  Value y = x;
  for (size_t i = 0; i < 4; ++i) {
    SLUICE_ASSIGN_OR_RETURN(y, Layer(*children[i], y, Join(path, names[i])));
    if (i == 1) y.name = Node("Relu", path, {y.name})->output(0);
  }
  Value shortcut = x;
  if (block.has_projection()) {
    SLUICE_ASSIGN_OR_RETURN(shortcut, Layer(*children[4], shortcut, Join(path, names[4])));
    SLUICE_ASSIGN_OR_RETURN(shortcut, Layer(*children[5], shortcut, Join(path, names[5])));
  }
  y.name = Node("Add", path, {y.name, shortcut.name})->output(0);
  y.name = Node("Relu", path, {y.name})->output(0);
  return y;
}

absl::StatusOr<Value> GraphBuilder::Layer(layers::Module& layer, const Value& in,
                                          const std::string& path) {
  if (!layer.built()) {
    return absl::FailedPreconditionError(absl::StrCat("ONNX export: ", Join(path, layer.name()),
                                                      " is not built: Build the model first"));
  }
  if (auto* sequential = dynamic_cast<layers::Sequential*>(&layer)) {
    return Chain(sequential->Children(), in, path);
  }
  if (auto* functional = dynamic_cast<layers::Model*>(&layer)) {
    return Functional(*functional, in, path);
  }
  if (auto* recompute = dynamic_cast<layers::Recompute*>(&layer)) {
    // Recomputation only changes the backward pass.
    return Layer(*recompute->Children()[0], in, path);
  }
  if (auto* dense = dynamic_cast<layers::Dense*>(&layer)) return Dense(*dense, in, path);
  if (auto* conv = dynamic_cast<layers::Conv2D*>(&layer)) return Conv(*conv, in, path);
  if (auto* bn = dynamic_cast<layers::BatchNorm*>(&layer)) return BatchNorm(*bn, in, path);
  if (auto* block = dynamic_cast<layers::ResidualBlock*>(&layer)) return Residual(*block, in, path);
  if (auto* pool = dynamic_cast<layers::MaxPool*>(&layer)) {
    return Pool("MaxPool", pool->options(), in, path);
  }
  if (auto* pool = dynamic_cast<layers::AvgPool*>(&layer)) {
    return Pool("AveragePool", pool->options(), in, path);
  }
  if (auto* relu = dynamic_cast<layers::ReLU*>(&layer)) return Relu(*relu, in, path);
  if (auto* activation = dynamic_cast<layers::ActivationLayer*>(&layer)) {
    return Activate(activation->activation(), in, path);
  }
  if (auto* depthwise = dynamic_cast<layers::DepthwiseConv2D*>(&layer)) {
    return DepthwiseConv(*depthwise, in, path);
  }
  if (auto* padding = dynamic_cast<layers::ZeroPadding2D*>(&layer)) {
    return ZeroPadding(*padding, in, path);
  }
  if (auto* reshape = dynamic_cast<layers::Reshape*>(&layer)) return Reshape(*reshape, in, path);
  if (auto* pool = dynamic_cast<layers::GlobalMaxPool*>(&layer)) {
    return GlobalMaxPool(*pool, in, path);
  }
  if (dynamic_cast<layers::Dropout*>(&layer) != nullptr) return in;  // identity in inference
  if (dynamic_cast<layers::Flatten*>(&layer) != nullptr) {
    // Keras flattens NHWC: the Dense after it was trained on that order.
    const Value x = ToNhwc(in, path);
    onnx::NodeProto* node = Node("Flatten", path, {x.name});
    SetInt(node, "axis", 1);
    int64_t features = 1;
    for (size_t i = 1; i < in.dims.size(); ++i) features *= in.dims[i];
    return Value{node->output(0), {in.dims[0], features}, false};
  }
  if (dynamic_cast<layers::GlobalAvgPool*>(&layer) != nullptr) {
    if (in.dims.size() != 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ONNX export: ", path, ": GlobalAvgPool takes NHWC, got rank ", in.dims.size()));
    }
    const Value x = ToNchw(in, path);
    const std::string pooled = Node("GlobalAveragePool", path, {x.name})->output(0);
    onnx::NodeProto* node = Node("Flatten", path, {pooled});
    SetInt(node, "axis", 1);
    return Value{node->output(0), {in.dims[0], in.dims[3]}, false};
  }
  if (std::find(options_.sequential_layers.begin(), options_.sequential_layers.end(),
                layer.name()) != options_.sequential_layers.end()) {
    return Chain(layer.Children(), in, path);
  }
  if (auto custom = options_.custom_layers.find(layer.name());
      custom != options_.custom_layers.end()) {
    return Custom(custom->second, layer, in, path);
  }
  return absl::UnimplementedError(absl::StrCat(
      "ONNX export: layer '", path, "' (", layer.name(),
      ") has no ONNX form; the built-in layers export, a user's own layer when "
      "OnnxExportOptions::custom_layers gives its nodes, and a user's own container whose layers "
      "run one after another when OnnxExportOptions::sequential_layers names it"));
}

absl::StatusOr<Value> GraphBuilder::Functional(layers::Model& model, const Value& in,
                                               const std::string& path) {
  const std::vector<layers::Model::Step>& steps = model.steps();
  if (model.inputs().size() != 1 || model.output_steps().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: '", Join(path, model.name()), "' has ", model.inputs().size(), " inputs and ",
        model.output_steps().size(), " outputs; the export writes one of each"));
  }
  std::vector<std::optional<Value>> values(steps.size());
  values[0] = in;
  for (size_t s = 1; s < steps.size(); ++s) {
    const layers::Model::Step& step = steps[s];
    const std::string at = Join(path, step.name);
    if (auto* merge = dynamic_cast<layers::Merge*>(step.layer)) {
      std::vector<Value> args;
      for (int i : step.inputs) args.push_back(*values[i]);
      SLUICE_ASSIGN_OR_RETURN(values[s], Merge(*merge, std::move(args), at));
    } else if (step.inputs.size() == 1) {
      SLUICE_ASSIGN_OR_RETURN(values[s], Layer(*step.layer, *values[step.inputs[0]], at));
    } else {
      return absl::UnimplementedError(
          absl::StrCat("ONNX export: layer '", at, "' (", step.layer->name(), ") takes ",
                       step.inputs.size(), " inputs and has no ONNX form"));
    }
  }
  return *values[model.output_steps()[0]];
}

absl::StatusOr<Value> GraphBuilder::Merge(layers::Merge& layer, std::vector<Value> in,
                                          const std::string& path) {
  // One layout for all: NCHW when every input is in it (between convolutions), else NHWC.
  bool nchw = true;
  for (const Value& v : in) nchw = nchw && v.nchw;
  for (Value& v : in) v = nchw ? v : ToNhwc(v, path);
  if (auto* concatenate = dynamic_cast<layers::Concatenate*>(&layer)) {
    const int rank = static_cast<int>(in[0].dims.size());
    const int axis = concatenate->axis() < 0 ? concatenate->axis() + rank : concatenate->axis();
    if (axis < 0 || axis >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("ONNX export: ", path, ": axis ", concatenate->axis(), " of rank ", rank));
    }
    std::vector<std::string> names;
    std::vector<int64_t> dims = in[0].dims;
    dims[axis] = 0;
    for (const Value& v : in) {
      names.push_back(v.name);
      dims[axis] += v.dims[axis];
    }
    onnx::NodeProto* node = Node("Concat", path, std::move(names));
    constexpr int kNchwAxis[] = {0, 2, 3, 1};  // where NHWC's dim i sits in NCHW
    SetInt(node, "axis", nchw ? kNchwAxis[axis] : axis);
    return Value{node->output(0), std::move(dims), nchw};
  }
  const char* op = nullptr;
  if (dynamic_cast<layers::Add*>(&layer) != nullptr) op = "Add";
  if (dynamic_cast<layers::Multiply*>(&layer) != nullptr) op = "Mul";
  if (op == nullptr) {
    return absl::UnimplementedError(absl::StrCat("ONNX export: merge layer '", path, "' (",
                                                 layer.name(), ") has no ONNX form"));
  }
  Value out = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    out.name = Node(op, path, {out.name, in[i].name})->output(0);
    // NumPy broadcasting, as ONNX's Add and Mul: each dim the larger, aligned at the end.
    std::vector<int64_t> dims = in[i].dims.size() > out.dims.size() ? in[i].dims : out.dims;
    const std::vector<int64_t>& other = in[i].dims.size() > out.dims.size() ? out.dims : in[i].dims;
    for (size_t k = 0; k < other.size(); ++k) {
      int64_t& d = dims[dims.size() - other.size() + k];
      d = std::max(d, other[k]);
    }
    out.dims = std::move(dims);
  }
  return out;
}

// The OnnxGraph a custom layer's exporter writes through: the builder at the layer's path.
class LayerGraph : public OnnxGraph {
 public:
  LayerGraph(GraphBuilder& builder, std::string path) : builder_(builder), path_(std::move(path)) {}
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> inputs) override {
    return builder_.Node(op, path_, std::move(inputs));
  }
  absl::StatusOr<std::string> Weight(autodiff::Variable& variable,
                                     const std::vector<int>& perm) override {
    return builder_.Initializer(variable, perm);
  }
  std::string Constant(const std::string& name, float value) override {
    return builder_.Constant(name, value);
  }
  OnnxValue ToNhwc(const OnnxValue& value) override { return builder_.ToNhwc(value, path_); }
  OnnxValue ToNchw(const OnnxValue& value) override { return builder_.ToNchw(value, path_); }
  absl::StatusOr<OnnxValue> Layer(layers::Module& child, const OnnxValue& in) override {
    return builder_.Layer(child, in, Join(path_, child.name()));
  }
  const std::string& path() const override { return path_; }

 private:
  GraphBuilder& builder_;
  const std::string path_;
};

absl::StatusOr<Value> GraphBuilder::Custom(const OnnxLayerExporter& exporter, layers::Module& layer,
                                           const Value& in, const std::string& path) {
  LayerGraph graph(*this, path);
  absl::StatusOr<Value> out = exporter(layer, graph, in);
  if (!out.ok()) {
    return WithContext(out.status(),
                       absl::StrCat("ONNX export: layer '", path, "' (", layer.name(), "): "));
  }
  if (out->name.empty() || out->dims.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ONNX export: layer '", path, "' (", layer.name(),
                     "): its exporter returned a value without a name or dims"));
  }
  return out;
}

absl::StatusOr<Value> GraphBuilder::Chain(const std::vector<layers::Module*>& children,
                                          const Value& in, const std::string& path) {
  Value v = in;
  for (size_t i = 0; i < children.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(
        v, Layer(*children[i], v, Join(path, absl::StrCat(i, "/", children[i]->name()))));
  }
  return v;
}

void SetShape(onnx::ValueInfoProto* info, const std::string& name,
              const std::vector<int64_t>& dims) {
  info->set_name(name);
  onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  for (size_t i = 1; i < dims.size(); ++i) shape->add_dim()->set_dim_value(dims[i]);
}

}  // namespace

absl::StatusOr<onnx::ModelProto> ToOnnx(layers::Module& model, const Shape& input_shape,
                                        const OnnxExportOptions& options) {
  if (input_shape.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: the input shape ", input_shape.DebugString(), " has no batch dimension"));
  }
  if (options.input_name.empty() || options.output_name.empty() ||
      options.input_name == options.output_name) {
    return absl::InvalidArgumentError("ONNX export: the input and output need distinct names");
  }
  onnx::ModelProto proto;
  proto.set_ir_version(kIrVersion);
  proto.set_producer_name("sluice");
  proto.set_producer_version(options.producer_version);
  if (!options.class_names.empty()) {
    onnx::StringStringEntryProto* entry = proto.add_metadata_props();
    entry->set_key("class_names");
    entry->set_value(absl::StrJoin(options.class_names, "\n"));
  }
  onnx::OperatorSetIdProto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto* graph = proto.mutable_graph();
  graph->set_name(options.graph_name);

  Value in{options.input_name, {}, false};
  for (int i = 0; i < input_shape.rank(); ++i) in.dims.push_back(input_shape.dim(i));
  SetShape(graph->add_input(), options.input_name, in.dims);

  GraphBuilder builder(graph, options);
  SLUICE_ASSIGN_OR_RETURN(Value out, builder.Layer(model, in, ""));
  out = builder.ToNhwc(out, "output");
  builder.Node("Identity", "output", {out.name}, options.output_name);
  SetShape(graph->add_output(), options.output_name, out.dims);
  return proto;
}

absl::Status ExportOnnx(layers::Module& model, const Shape& input_shape, const std::string& path,
                        const OnnxExportOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const onnx::ModelProto proto, ToOnnx(model, input_shape, options));
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return absl::InternalError(
        absl::StrCat("ONNX export: could not serialise the model for ", path));
  }
  return WriteFileAtomically(path, bytes);
}

}  // namespace sluice::train::exporting
