#include "train/import/onnx_import.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "io/input_stream.h"
#include "io/read_file.h"
#include "onnx/onnx_pb.h"  // Debian's libonnx-dev: the ONNX protos
#include "train/backend/transfer.h"
#include "train/layers/activation_layer.h"
#include "train/layers/add.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/concatenate.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/layer_config.h"
#include "train/layers/max_pool.h"
#include "train/layers/multiply.h"
#include "train/layers/parameter_limit.h"
#include "train/layers/relu.h"
#include "train/layers/zero_padding2d.h"
#include "train/ops/transpose.h"

namespace sluice::train::importing {
namespace {

using layers::SymbolicTensor;

// A weight or constant of the file: float32 or int64, on the host.
struct Constant {
  std::vector<int64_t> dims;
  std::vector<float> floats;  // float32 data
  std::vector<int64_t> ints;  // int64 data
  bool is_int = false;
  int64_t count() const { return is_int ? ints.size() : floats.size(); }
};

// A value of the graph as sluice holds it.
struct Value {
  enum Kind {
    kConstant,
    kImage,  // ONNX [N, C, H, W]; sluice [N, H, W, C]
    // ONNX [N, H, W, C], as sluice: the input of a model sluice exported, or a Transpose of an
    // image to NHWC (what sluice's export writes before a Flatten). Only Flatten, Reshape and a
    // Transpose back read it.
    kNhwcImage,
    kPooled,  // ONNX [N, C, 1, 1] of a global pooling; sluice [N, C]
    kMatrix,  // [N, F] in both, its columns perhaps in another order (`columns`)
  };
  Kind kind = kMatrix;
  SymbolicTensor tensor;
  std::shared_ptr<const Constant> constant;
  // A matrix's column j is ONNX's column (*columns)[j]; null: the same order. A Flatten of an
  // image orders (H, W, C) in sluice and (C, H, W) in ONNX: the Gemm after it reads its weight's
  // rows in sluice's order, and a BatchNormalization its parameters.
  std::shared_ptr<const std::vector<int64_t>> columns;
};

// `values` reordered: out[j] = values[columns[j]] (rows of `row` elements each).
template <typename T>
std::vector<T> Reordered(const std::vector<T>& values, const std::vector<int64_t>& columns,
                         int64_t row) {
  std::vector<T> out(values.size());
  for (size_t j = 0; j < columns.size(); ++j) {
    std::copy_n(values.begin() + columns[j] * row, row, out.begin() + j * row);
  }
  return out;
}

class Importer {
 public:
  // `folder`: where the file is, which ONNX's external data locations are relative to; none for
  // bytes from elsewhere.
  Importer(std::string source, const OnnxImportOptions& options,
           std::optional<std::filesystem::path> folder = std::nullopt)
      : source_(std::move(source)), options_(options), folder_(std::move(folder)) {}

  // Frees each initializer's raw bytes in `model` once it has read them.
  absl::StatusOr<std::unique_ptr<layers::Model>> Import(onnx::ModelProto& model);

 private:
  // Errors: the file, and the node when there is one.
  absl::Status Error(absl::StatusCode code, absl::string_view what) const;
  absl::Status Invalid(absl::string_view what) const {
    return Error(absl::StatusCode::kInvalidArgument, what);
  }
  absl::Status Unsupported(absl::string_view what) const {
    return Error(absl::StatusCode::kUnimplemented, what);
  }

  absl::Status ReadConstant(const onnx::TensorProto& t, Constant& out);
  // The `bytes` bytes of `t`'s data kept in another file (ONNX's external data) into `dst`.
  absl::Status ReadExternalData(const onnx::TensorProto& t, char* dst, uint64_t bytes) const;
  absl::Status Node(const onnx::NodeProto& node);
  absl::Status Define(const std::string& name, Value value);
  absl::StatusOr<Value> Get(const std::string& name);
  absl::StatusOr<std::shared_ptr<const Constant>> GetConstant(const onnx::NodeProto& node,
                                                              int input, int rank);
  // The node's input `i` as an image (NHWC in sluice), or an error naming the node.
  absl::StatusOr<Value> GetImage(const onnx::NodeProto& node, int input);

  // Calls `layer` on `inputs`; its name from the node's. Checks the output's size first.
  absl::StatusOr<SymbolicTensor> Call(std::shared_ptr<layers::Module> layer,
                                      std::vector<SymbolicTensor> inputs);
  // A host tensor of `c`'s values with `dims`.
  absl::StatusOr<Tensor> HostTensor(const Constant& c, const std::vector<int64_t>& dims) const;

  absl::Status Conv(const onnx::NodeProto& node);
  absl::Status BatchNormalization(const onnx::NodeProto& node);
  absl::Status Pool(const onnx::NodeProto& node, bool max);
  absl::Status Gemm(const onnx::NodeProto& node, bool matmul);
  absl::Status Merge(const onnx::NodeProto& node);
  absl::Status Clip(const onnx::NodeProto& node);
  absl::Status Flatten(const onnx::NodeProto& node);
  absl::Status Reshape(const onnx::NodeProto& node);
  absl::Status Pad(const onnx::NodeProto& node);

  // The graph's input, made at its first use: NCHW in the file unless that use is a Transpose
  // to NCHW (the file's input is NHWC then).
  absl::StatusOr<Value> GraphInput(bool nhwc);

  const std::string source_;
  const OnnxImportOptions& options_;
  const std::optional<std::filesystem::path> folder_;
  const onnx::NodeProto* node_ = nullptr;  // the node being imported, for errors
  int64_t parameters_ = 0;

  absl::flat_hash_map<std::string, Value> values_;
  std::string input_name_;
  std::vector<int64_t> input_dims_;  // as the file gives them, 0 for a free one
  std::optional<Value> input_;       // once made
  bool input_nhwc_ = false;
  // The file's 4-D input is NHWC where it is read as it is: a model sluice exported
  // (producer_name "sluice"), whose layers run NHWC and which transposes around its convolutions.
  bool nhwc_file_ = false;
  std::vector<SymbolicTensor> inputs_;
  absl::flat_hash_set<std::string> layer_names_;
};

absl::Status Importer::Error(absl::StatusCode code, absl::string_view what) const {
  if (node_ == nullptr) return absl::Status(code, absl::StrCat(source_, ": ", what));
  return absl::Status(
      code, absl::StrCat(source_, ": node '", node_->name(), "' (", node_->op_type(), "): ", what));
}

const onnx::AttributeProto* Attribute(const onnx::NodeProto& node, absl::string_view name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t IntAttribute(const onnx::NodeProto& node, absl::string_view name, int64_t fallback) {
  const onnx::AttributeProto* a = Attribute(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

float FloatAttribute(const onnx::NodeProto& node, absl::string_view name, float fallback) {
  const onnx::AttributeProto* a = Attribute(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::FLOAT ? a->f() : fallback;
}

std::vector<int64_t> IntsAttribute(const onnx::NodeProto& node, absl::string_view name,
                                   std::vector<int64_t> fallback) {
  const onnx::AttributeProto* a = Attribute(node, name);
  if (a == nullptr || a->type() != onnx::AttributeProto::INTS) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::string StringAttribute(const onnx::NodeProto& node, absl::string_view name) {
  const onnx::AttributeProto* a = Attribute(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::STRING ? a->s() : "";
}

absl::Status Importer::ReadExternalData(const onnx::TensorProto& t, char* dst,
                                        uint64_t bytes) const {
  const std::string tensor = absl::StrCat("tensor '", t.name(), "'");
  if (!folder_) {
    return Unsupported(absl::StrCat(tensor,
                                    " keeps its data in another file, which only "
                                    "ImportOnnx (given the model's path) reads"));
  }
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto& e : t.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset" || e.key() == "length") {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(e.value(), &v)) {
        return Invalid(absl::StrCat(tensor, ": external data ", e.key(), " '", e.value(),
                                    "' is not a byte count"));
      }
      (e.key() == "offset" ? offset : length.emplace()) = v;
    }
    // "checksum" (a SHA-1) is not checked: the sizes are, and the values are weights.
  }
  // ONNX's rule (and its checker's since the path traversal fix): a relative path inside the
  // model's folder. A file must not make the importer read what it names elsewhere.
  const std::filesystem::path relative(location);
  bool escapes = location.empty() || relative.is_absolute();
  for (const std::filesystem::path& part : relative) escapes = escapes || part == "..";
  if (escapes) {
    return Invalid(absl::StrCat(tensor, ": external data location '", location,
                                "' is not a relative path inside the model's folder"));
  }
  const std::filesystem::path file = *folder_ / relative;
  std::error_code error;
  if (std::filesystem::is_symlink(file, error)) {
    return Invalid(absl::StrCat(tensor, ": external data file ", file.string(),
                                " is a symbolic link, which is not followed"));
  }
  if (length && *length != bytes) {
    return Invalid(absl::StrCat(tensor, ": external data length ", *length, ", its dims take ",
                                bytes, " bytes"));
  }
  absl::StatusOr<std::unique_ptr<FileInputStream>> in = FileInputStream::Open(file.string());
  if (!in.ok()) {
    return Error(in.status().code(),
                 absl::StrCat(tensor, ": external data: ", in.status().message()));
  }
  SLUICE_ASSIGN_OR_RETURN(const uint64_t size, (*in)->Size());
  if (offset > size || bytes > size - offset) {
    return Invalid(absl::StrCat(tensor, ": external data of ", bytes, " bytes at offset ", offset,
                                " runs past the end of ", file.string(), " (", size, " bytes)"));
  }
  SLUICE_RETURN_IF_ERROR((*in)->Seek(offset));
  SLUICE_ASSIGN_OR_RETURN(const size_t got, ReadUpTo(**in, dst, bytes));
  if (got < bytes) {
    return Invalid(absl::StrCat(tensor, ": ", file.string(), " ended while it was read"));
  }
  return absl::OkStatus();
}

absl::Status Importer::ReadConstant(const onnx::TensorProto& t, Constant& out) {
  const bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  if (!external && t.external_data_size() > 0) {
    return Invalid(
        absl::StrCat("tensor '", t.name(), "' has external data but its data_location is DEFAULT"));
  }
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return Invalid(absl::StrCat("tensor '", t.name(), "' has a dimension ", d));
    count = layers::SaturatingProduct({count, d});
    out.dims.push_back(d);
  }
  parameters_ = layers::SaturatingAdd(parameters_, count);
  if (parameters_ > options_.max_parameters) {
    return Error(absl::StatusCode::kResourceExhausted,
                 absl::StrCat("its weights exceed OnnxImportOptions::max_parameters (",
                              options_.max_parameters, ") at tensor '", t.name(), "'"));
  }
  auto mismatch = [&](int64_t got) {
    return Invalid(
        absl::StrCat("tensor '", t.name(), "' holds ", got, " elements, its dims ", count));
  };
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (external) {
      out.floats.resize(count);
      return ReadExternalData(t, reinterpret_cast<char*>(out.floats.data()),
                              static_cast<uint64_t>(count) * sizeof(float));
    }
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() != static_cast<size_t>(count) * sizeof(float)) {
        return mismatch(static_cast<int64_t>(t.raw_data().size() / sizeof(float)));
      }
      out.floats.resize(count);
      // ONNX's raw_data is little-endian, as the host is.
      std::memcpy(out.floats.data(), t.raw_data().data(), t.raw_data().size());
    } else {
      if (t.float_data_size() != count) return mismatch(t.float_data_size());
      out.floats.assign(t.float_data().begin(), t.float_data().end());
    }
    return absl::OkStatus();
  }
  if (t.data_type() == onnx::TensorProto::INT64) {
    out.is_int = true;
    if (external) {
      out.ints.resize(count);
      return ReadExternalData(t, reinterpret_cast<char*>(out.ints.data()),
                              static_cast<uint64_t>(count) * sizeof(int64_t));
    }
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() != static_cast<size_t>(count) * sizeof(int64_t)) {
        return mismatch(static_cast<int64_t>(t.raw_data().size() / sizeof(int64_t)));
      }
      out.ints.resize(count);
      std::memcpy(out.ints.data(), t.raw_data().data(), t.raw_data().size());
    } else {
      if (t.int64_data_size() != count) return mismatch(t.int64_data_size());
      out.ints.assign(t.int64_data().begin(), t.int64_data().end());
    }
    return absl::OkStatus();
  }
  return Unsupported(absl::StrCat("tensor '", t.name(), "' is of ONNX data type ", t.data_type(),
                                  "; float32 and int64 are read"));
}

absl::Status Importer::Define(const std::string& name, Value value) {
  if (name.empty()) return absl::OkStatus();  // an optional output left out
  if (!values_.emplace(name, std::move(value)).second) {
    return Invalid(absl::StrCat("the value '", name, "' is defined twice"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Importer::Get(const std::string& name) {
  if (name == input_name_) {
    SLUICE_ASSIGN_OR_RETURN(Value v, GraphInput(/*nhwc=*/nhwc_file_));
    if (nhwc_file_ && v.kind == Value::kImage) v.kind = Value::kNhwcImage;
    return v;
  }
  auto it = values_.find(name);
  if (it == values_.end()) {
    return Invalid(
        absl::StrCat("reads '", name, "', which no earlier node or initializer defines"));
  }
  return it->second;
}

absl::StatusOr<std::shared_ptr<const Constant>> Importer::GetConstant(const onnx::NodeProto& node,
                                                                      int input, int rank) {
  if (input >= node.input_size() || node.input(input).empty()) {
    return Invalid(absl::StrCat("has no input ", input));
  }
  SLUICE_ASSIGN_OR_RETURN(Value v, Get(node.input(input)));
  if (v.kind != Value::kConstant) {
    return Unsupported(
        absl::StrCat("input ", input, " ('", node.input(input),
                     "') is computed; only a weight (an initializer) is read there"));
  }
  if (rank >= 0 && static_cast<int>(v.constant->dims.size()) != rank) {
    return Invalid(absl::StrCat("input ", input, " ('", node.input(input), "') has rank ",
                                v.constant->dims.size(), ", not ", rank));
  }
  return v.constant;
}

absl::StatusOr<Value> Importer::GetImage(const onnx::NodeProto& node, int input) {
  if (input >= node.input_size()) return Invalid(absl::StrCat("has no input ", input));
  SLUICE_ASSIGN_OR_RETURN(Value v, Get(node.input(input)));
  if (v.kind == Value::kNhwcImage) {
    return Unsupported(absl::StrCat("input ", input, " ('", node.input(input),
                                    "') is NHWC; this operator reads images [N, C, H, W]"));
  }
  if (v.kind != Value::kImage) {
    return Unsupported(
        absl::StrCat("input ", input, " ('", node.input(input), "') is not an image [N, C, H, W]"));
  }
  return v;
}

absl::StatusOr<Value> Importer::GraphInput(bool nhwc) {
  if (input_) {
    if (nhwc != input_nhwc_ && nhwc) {
      return Unsupported("the input is read both as NCHW and, through a Transpose, as NHWC");
    }
    return *input_;
  }
  Value v;
  std::vector<int64_t> dims = input_dims_;
  if (dims.size() == 4) {
    // The free or overridden spatial dims: H and W are 2, 3 in NCHW and 1, 2 in NHWC.
    const int hi = nhwc ? 1 : 2, wi = nhwc ? 2 : 3, ci = nhwc ? 3 : 1;
    if (options_.height > 0) dims[hi] = options_.height;
    if (options_.width > 0) dims[wi] = options_.width;
    for (int i : {hi, wi, ci}) {
      if (dims[i] <= 0) {
        return Invalid(absl::StrCat("the input '", input_name_, "' has a free ",
                                    i == ci   ? "channel count"
                                    : i == hi ? "height"
                                              : "width",
                                    "; set OnnxImportOptions::height and width"));
      }
    }
    v.kind = Value::kImage;
    v.tensor = layers::Input({dims[hi], dims[wi], dims[ci]}, input_name_);
  } else if (dims.size() == 2 && dims[1] > 0) {
    v.kind = Value::kMatrix;
    v.tensor = layers::Input({dims[1]}, input_name_);
  } else {
    return Unsupported(absl::StrCat("the input '", input_name_, "' has rank ", dims.size(),
                                    "; images [N, C, H, W] and matrices [N, F] are read"));
  }
  if (layers::SaturatingProduct(v.tensor.shape().dims()) > options_.max_activation_elements) {
    return Error(absl::StatusCode::kResourceExhausted,
                 absl::StrCat("the input ", v.tensor.shape().DebugString(),
                              " exceeds OnnxImportOptions::max_activation_elements"));
  }
  input_ = v;
  input_nhwc_ = nhwc;
  inputs_ = {v.tensor};
  return v;
}

absl::StatusOr<Tensor> Importer::HostTensor(const Constant& c,
                                            const std::vector<int64_t>& dims) const {
  return Tensor::FromVector(c.floats, Shape(dims));
}

absl::StatusOr<SymbolicTensor> Importer::Call(std::shared_ptr<layers::Module> layer,
                                              std::vector<SymbolicTensor> inputs) {
  // The output's size from the layer's config, before the call allocates it.
  if (inputs.size() == 1 && inputs[0].ok()) {
    SLUICE_ASSIGN_OR_RETURN(const layers::LayerConfig config, layer->GetConfig());
    absl::StatusOr<layers::LayerSize> size = layers::LayerSizeFromConfig(config, inputs[0].shape());
    if (!size.ok()) return Invalid(size.status().message());
    if (layers::SaturatingProduct(size->output_shape.dims()) > options_.max_activation_elements) {
      return Error(absl::StatusCode::kResourceExhausted,
                   absl::StrCat("its output ", size->output_shape.DebugString(),
                                " exceeds OnnxImportOptions::max_activation_elements"));
    }
  }
  // PyTorch's scopes "/layer1/layer1.0/conv1/Conv" name the layer as its module,
  // "layer1.0.conv1" (a scope that extends the one before it replaces it); '/' separates a
  // layer's name from its variables'.
  std::string base;
  std::vector<std::string> scopes = absl::StrSplit(node_->name(), '/', absl::SkipEmpty());
  if (scopes.size() > 1 && scopes.back() == node_->op_type()) scopes.pop_back();
  for (const std::string& scope : scopes) {
    base = base.empty() || absl::StartsWith(scope, absl::StrCat(base, "."))
               ? scope
               : absl::StrCat(base, ".", scope);
  }
  if (base.empty()) base = absl::AsciiStrToLower(node_->op_type());
  std::string name = base;
  for (int k = 1; layer_names_.contains(name); ++k) name = absl::StrCat(base, "_", k);
  layer_names_.insert(name);
  SymbolicTensor out = layers::Apply(std::move(layer), inputs, name);
  if (!out.ok()) return Invalid(out.status().message());
  return out;
}

absl::Status Assign(autodiff::Variable& variable, const Tensor& value) {
  return variable.Assign(value);
}

absl::Status Importer::Conv(const onnx::NodeProto& node) {
  SLUICE_ASSIGN_OR_RETURN(Value x, GetImage(node, 0));
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const Constant> w, GetConstant(node, 1, 4));
  std::shared_ptr<const Constant> b;
  if (node.input_size() > 2 && !node.input(2).empty()) {
    SLUICE_ASSIGN_OR_RETURN(b, GetConstant(node, 2, 1));
  }
  const int64_t o = w->dims[0], ci = w->dims[1], kh = w->dims[2], kw = w->dims[3];
  const int64_t channels = x.tensor.shape().dim(3);
  const int64_t group = IntAttribute(node, "group", 1);
  // Grouped (MobileNet's depthwise: group = channels): each group of channels / group inputs
  // makes o / group outputs.
  if (group < 1 || channels % group != 0 || o % group != 0) {
    return Invalid(absl::StrCat("group ", group, " does not divide its ", channels,
                                " input channels and ", o, " filters"));
  }
  if (ci * group != channels) {
    return Invalid(absl::StrCat("its weight [", absl::StrJoin(w->dims, ", "), "] takes ", ci,
                                " channels; its input has ", channels));
  }
  if (b != nullptr && b->dims[0] != o) {
    return Invalid(absl::StrCat("its bias has ", b->dims[0], " elements for ", o, " filters"));
  }
  const std::vector<int64_t> kernel = IntsAttribute(node, "kernel_shape", {kh, kw});
  if (kernel != std::vector<int64_t>{kh, kw}) {
    return Invalid("kernel_shape disagrees with the weight");
  }
  const std::vector<int64_t> strides = IntsAttribute(node, "strides", {1, 1});
  const std::vector<int64_t> dilations = IntsAttribute(node, "dilations", {1, 1});
  const std::vector<int64_t> pads = IntsAttribute(node, "pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) {
    return Unsupported("a convolution of other than 2 spatial dims");
  }
  layers::Conv2DLayerOptions options{
      .conv = {.stride_h = strides[0],
               .stride_w = strides[1],
               .dilation_h = dilations[0],
               .dilation_w = dilations[1],
               .padding = ops::Padding::kExplicit,
               .pads = {.top = pads[0], .bottom = pads[2], .left = pads[1], .right = pads[3]},
               .groups = group},
      .use_bias = b != nullptr,
      // The file's weights replace them: no random draw.
      .kernel_initializer = layers::Initializer::kZeros};
  const std::string auto_pad = StringAttribute(node, "auto_pad");
  if (auto_pad == "SAME_UPPER") {
    options.conv.padding = ops::Padding::kSame;  // TF's "same": the extra padding at the end
  } else if (auto_pad == "VALID") {
    options.conv.padding = ops::Padding::kValid;
  } else if (!auto_pad.empty() && auto_pad != "NOTSET") {
    return Unsupported(absl::StrCat("auto_pad ", auto_pad));
  }
  auto conv = std::make_shared<layers::Conv2D>(channels, o, kh, kw, options);
  // OIHW to HWIO.
  SLUICE_ASSIGN_OR_RETURN(const Tensor oihw, HostTensor(*w, w->dims));
  SLUICE_ASSIGN_OR_RETURN(const Tensor hwio, ops::Transpose(oihw, {2, 3, 1, 0}));
  SLUICE_RETURN_IF_ERROR(Assign(conv->kernel(), hwio));
  if (b != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(const Tensor bias, HostTensor(*b, b->dims));
    SLUICE_RETURN_IF_ERROR(Assign(*conv->bias(), bias));
  }
  SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y, Call(conv, {x.tensor}));
  return Define(node.output(0), Value{.kind = Value::kImage, .tensor = y});
}

absl::Status Importer::BatchNormalization(const onnx::NodeProto& node) {
  SLUICE_ASSIGN_OR_RETURN(Value x, Get(node.input_size() > 0 ? node.input(0) : ""));
  if (x.kind != Value::kImage && x.kind != Value::kMatrix && x.kind != Value::kPooled) {
    return Unsupported("its input is not [N, C, ...]");
  }
  const std::vector<int64_t>* columns = x.columns.get();
  if (IntAttribute(node, "training_mode", 0) != 0) {
    return Unsupported("training_mode 1 (export with the model in eval(), or PRESERVE)");
  }
  for (int i = 1; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) return Unsupported("its running statistics as outputs");
  }
  const int64_t channels = x.tensor.shape().dim(x.tensor.shape().rank() - 1);
  std::shared_ptr<const Constant> params[4];
  for (int i = 0; i < 4; ++i) {
    SLUICE_ASSIGN_OR_RETURN(params[i], GetConstant(node, i + 1, 1));
    if (params[i]->dims[0] != channels) {
      return Invalid(absl::StrCat("input ", i + 1, " has ", params[i]->dims[0], " elements for ",
                                  channels, " channels"));
    }
  }
  const float epsilon = FloatAttribute(node, "epsilon", 1e-5f);
  // ONNX's momentum is Keras': running = running * momentum + batch * (1 - momentum).
  const float momentum = FloatAttribute(node, "momentum", 0.9f);
  if (!(epsilon > 0) || !(momentum >= 0 && momentum <= 1)) {
    return Invalid(absl::StrCat("epsilon ", epsilon, ", momentum ", momentum));
  }
  auto bn = std::make_shared<layers::BatchNorm>(
      channels, layers::BatchNormOptions{.momentum = momentum, .epsilon = epsilon});
  autodiff::Variable* vars[4] = {&bn->gamma(), &bn->beta(), &bn->moving_mean(),
                                 &bn->moving_variance()};
  for (int i = 0; i < 4; ++i) {
    Constant param = *params[i];
    if (columns != nullptr) param.floats = Reordered(param.floats, *columns, 1);
    SLUICE_ASSIGN_OR_RETURN(const Tensor value, HostTensor(param, param.dims));
    SLUICE_RETURN_IF_ERROR(Assign(*vars[i], value));
  }
  SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y, Call(bn, {x.tensor}));
  x.tensor = y;
  return Define(node.output(0), x);
}

absl::Status Importer::Pool(const onnx::NodeProto& node, bool max) {
  SLUICE_ASSIGN_OR_RETURN(Value x, GetImage(node, 0));
  const std::vector<int64_t> kernel = IntsAttribute(node, "kernel_shape", {});
  const std::vector<int64_t> strides = IntsAttribute(node, "strides", {1, 1});
  const std::vector<int64_t> pads = IntsAttribute(node, "pads", {0, 0, 0, 0});
  const std::vector<int64_t> dilations = IntsAttribute(node, "dilations", {1, 1});
  if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4) {
    return Unsupported("a pooling of other than 2 spatial dims");
  }
  if (dilations != std::vector<int64_t>{1, 1}) return Unsupported("dilated pooling");
  if (IntAttribute(node, "ceil_mode", 0) != 0) return Unsupported("ceil_mode 1");
  if (node.output_size() > 1 && !node.output(1).empty()) return Unsupported("its indices output");
  const bool padded = pads != std::vector<int64_t>{0, 0, 0, 0};
  if (!max && padded && IntAttribute(node, "count_include_pad", 0) != 0) {
    return Unsupported("count_include_pad 1 (sluice's average counts real inputs only)");
  }
  ops::Pool2DOptions options{
      .window_h = kernel[0],
      .window_w = kernel[1],
      .stride_h = strides[0],
      .stride_w = strides[1],
      .padding = ops::Padding::kExplicit,
      .pads = {.top = pads[0], .bottom = pads[2], .left = pads[1], .right = pads[3]}};
  const std::string auto_pad = StringAttribute(node, "auto_pad");
  if (auto_pad == "SAME_UPPER") {
    options.padding = ops::Padding::kSame;
  } else if (auto_pad == "VALID") {
    options.padding = ops::Padding::kValid;
  } else if (!auto_pad.empty() && auto_pad != "NOTSET") {
    return Unsupported(absl::StrCat("auto_pad ", auto_pad));
  }
  std::shared_ptr<layers::Module> layer;
  if (max) {
    layer = std::make_shared<layers::MaxPool>(options);
  } else {
    layer = std::make_shared<layers::AvgPool>(options);
  }
  SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y, Call(layer, {x.tensor}));
  return Define(node.output(0), Value{.kind = Value::kImage, .tensor = y});
}

absl::Status Importer::Gemm(const onnx::NodeProto& node, bool matmul) {
  SLUICE_ASSIGN_OR_RETURN(Value x, Get(node.input_size() > 0 ? node.input(0) : ""));
  if (x.kind == Value::kPooled) x.kind = Value::kMatrix;
  if (x.kind != Value::kMatrix) {
    return Unsupported("its input is not a matrix [N, F] (Flatten an image first)");
  }
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const Constant> b, GetConstant(node, 1, 2));
  std::shared_ptr<const Constant> c;
  if (!matmul) {
    if (IntAttribute(node, "transA", 0) != 0) return Unsupported("transA 1");
    if (FloatAttribute(node, "alpha", 1) != 1 || FloatAttribute(node, "beta", 1) != 1) {
      return Unsupported("alpha or beta other than 1");
    }
    if (node.input_size() > 2 && !node.input(2).empty()) {
      SLUICE_ASSIGN_OR_RETURN(c, GetConstant(node, 2, -1));
    }
  }
  const bool trans_b = !matmul && IntAttribute(node, "transB", 0) != 0;
  const int64_t in = trans_b ? b->dims[1] : b->dims[0];
  const int64_t units = trans_b ? b->dims[0] : b->dims[1];
  const int64_t features = x.tensor.shape().dim(1);
  if (in != features) {
    return Invalid(absl::StrCat("its weight takes ", in, " features; its input has ", features));
  }
  if (c != nullptr && c->count() != units) {
    return Unsupported(absl::StrCat("a bias of ", c->count(), " elements for ", units, " units"));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor kernel, HostTensor(*b, b->dims));
  if (trans_b) {
    SLUICE_ASSIGN_OR_RETURN(kernel, ops::Transpose(kernel, {1, 0}));
  }
  if (x.columns != nullptr) {
    // The input's columns are in another order than ONNX's: the kernel's rows follow them.
    SLUICE_ASSIGN_OR_RETURN(const Tensor host, backend::ToHost(kernel));
    const std::vector<float> rows(host.flat<float>().begin(), host.flat<float>().end());
    SLUICE_ASSIGN_OR_RETURN(
        kernel, Tensor::FromVector(Reordered(rows, *x.columns, units), Shape{in, units}));
  }
  auto dense = std::make_shared<layers::Dense>(
      in, units,
      layers::DenseOptions{.use_bias = c != nullptr,
                           .kernel_initializer = layers::Initializer::kZeros});
  SLUICE_RETURN_IF_ERROR(Assign(dense->kernel(), kernel));
  if (c != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(const Tensor bias, HostTensor(*c, {units}));
    SLUICE_RETURN_IF_ERROR(Assign(*dense->bias(), bias));
  }
  SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y, Call(dense, {x.tensor}));
  return Define(node.output(0), Value{.kind = Value::kMatrix, .tensor = y});
}

absl::Status Importer::Merge(const onnx::NodeProto& node) {
  std::vector<SymbolicTensor> inputs;
  std::vector<Value> operands;
  std::optional<Value::Kind> kind;
  for (int i = 0; i < node.input_size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(Value v, Get(node.input(i)));
    if (v.kind == Value::kConstant) {
      return Unsupported(absl::StrCat("input ", i, " ('", node.input(i),
                                      "') is a constant; both operands must be computed"));
    }
    if (v.kind == Value::kPooled) v.kind = Value::kMatrix;  // [N, C] in sluice either way
    if (kind && *kind != v.kind) return Unsupported("operands of different layouts");
    kind = v.kind;
    operands.push_back(v);
    inputs.push_back(v.tensor);
  }
  if (inputs.size() < 2) return Invalid("fewer than 2 inputs");
  Value out{.kind = *kind};
  std::shared_ptr<layers::Module> layer;
  if (node.op_type() == "Add" || node.op_type() == "Mul") {
    for (const Value& v : operands) {
      const bool same = v.columns == operands[0].columns ||
                        (v.columns && operands[0].columns && *v.columns == *operands[0].columns);
      if (!same) return Unsupported("operands whose columns are in different orders");
    }
    out.columns = operands[0].columns;
    if (node.op_type() == "Add") {
      layer = std::make_shared<layers::Add>();
    } else {
      layer = std::make_shared<layers::Multiply>();
    }
  } else {
    const int64_t rank = inputs[0].shape().rank();
    int64_t axis = IntAttribute(node, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return Invalid(absl::StrCat("axis ", axis));
    if (*kind == Value::kNhwcImage) return Unsupported("a Concat of NHWC images");
    if (*kind == Value::kImage) {
      constexpr int kNhwcAxis[] = {0, 3, 1, 2};  // where NCHW's dim i sits in NHWC
      axis = kNhwcAxis[axis];
    } else if (axis == 1) {
      // Columns side by side: each operand's order, after the ones before it.
      bool reordered = false;
      auto columns = std::make_shared<std::vector<int64_t>>();
      for (const Value& v : operands) {
        const int64_t offset = static_cast<int64_t>(columns->size());
        const int64_t n = v.tensor.shape().dim(1);
        for (int64_t j = 0; j < n; ++j) {
          columns->push_back(offset + (v.columns ? (*v.columns)[j] : j));
        }
        reordered = reordered || v.columns != nullptr;
      }
      if (reordered) out.columns = std::move(columns);
    }
    layer = std::make_shared<layers::Concatenate>(static_cast<int>(axis));
  }
  SLUICE_ASSIGN_OR_RETURN(out.tensor, Call(layer, inputs));
  return Define(node.output(0), out);
}

absl::Status Importer::Clip(const onnx::NodeProto& node) {
  SLUICE_ASSIGN_OR_RETURN(Value x, Get(node.input_size() > 0 ? node.input(0) : ""));
  // Opset 11 and later give min and max as inputs; earlier ones as attributes.
  float lo = FloatAttribute(node, "min", -std::numeric_limits<float>::infinity());
  float hi = FloatAttribute(node, "max", std::numeric_limits<float>::infinity());
  for (int i : {1, 2}) {
    if (node.input_size() <= i || node.input(i).empty()) continue;
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const Constant> c, GetConstant(node, i, -1));
    if (c->is_int || c->count() != 1) return Invalid(absl::StrCat("input ", i, " is not a float"));
    (i == 1 ? lo : hi) = c->floats[0];
  }
  if (lo != 0 || !(hi > 0)) {
    return Unsupported(
        absl::StrCat("Clip(", lo, ", ", hi, "); Clip(0, max) is imported (ReLU, ReLU6)"));
  }
  layers::ReLUOptions relu;
  if (!std::isinf(hi)) relu.max_value = hi;
  SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y, Call(std::make_shared<layers::ReLU>(relu), {x.tensor}));
  x.tensor = y;
  return Define(node.output(0), x);
}

absl::Status Importer::Flatten(const onnx::NodeProto& node) {
  SLUICE_ASSIGN_OR_RETURN(Value x, Get(node.input_size() > 0 ? node.input(0) : ""));
  if (IntAttribute(node, "axis", 1) != 1) return Unsupported("axis other than 1");
  if (x.kind == Value::kMatrix) return Define(node.output(0), x);
  if (x.kind == Value::kPooled) {
    x.kind = Value::kMatrix;
    return Define(node.output(0), x);
  }
  if (x.kind != Value::kImage && x.kind != Value::kNhwcImage) {
    return Unsupported("its input is a constant");
  }
  const Shape& s = x.tensor.shape();
  SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y, Call(std::make_shared<layers::Flatten>(), {x.tensor}));
  Value out{.kind = Value::kMatrix, .tensor = y};
  if (x.kind == Value::kNhwcImage) return Define(node.output(0), out);  // the same (H, W, C) order
  const int64_t h = s.dim(1), w = s.dim(2), c = s.dim(3);
  if (h * w > 1) {  // with one position the two orders agree
    // sluice's column (i, j, k) of (H, W, C) is ONNX's (k, i, j) of (C, H, W).
    auto columns = std::make_shared<std::vector<int64_t>>();
    columns->reserve(h * w * c);
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        for (int64_t k = 0; k < c; ++k) columns->push_back((k * h + i) * w + j);
      }
    }
    out.columns = std::move(columns);
  }
  return Define(node.output(0), out);
}

absl::Status Importer::Pad(const onnx::NodeProto& node) {
  SLUICE_ASSIGN_OR_RETURN(Value x, GetImage(node, 0));
  const std::string mode = StringAttribute(node, "mode");
  if (!mode.empty() && mode != "constant") return Unsupported(absl::StrCat("mode ", mode));
  // Opset 11 and later give the pads as an input, earlier ones as an attribute:
  // [n, c, h, w begins, n, c, h, w ends].
  std::vector<int64_t> pads = IntsAttribute(node, "pads", {});
  if (node.input_size() > 1 && !node.input(1).empty()) {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const Constant> c, GetConstant(node, 1, 1));
    if (!c->is_int) return Invalid("its pads are not int64");
    pads = c->ints;
  }
  if (node.input_size() > 2 && !node.input(2).empty()) {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const Constant> c, GetConstant(node, 2, -1));
    if (c->is_int || c->count() != 1 || c->floats[0] != 0) {
      return Unsupported("a constant other than 0");
    }
  }
  if (pads.size() != 8) return Invalid(absl::StrCat(pads.size(), " pads for a rank-4 input"));
  if (pads[0] != 0 || pads[1] != 0 || pads[4] != 0 || pads[5] != 0) {
    return Unsupported("padding the batch or the channels");
  }
  for (int64_t p : pads) {
    if (p < 0) return Unsupported("negative padding (a crop)");
  }
  auto layer = std::make_shared<layers::ZeroPadding2D>(
      std::pair<int64_t, int64_t>{pads[2], pads[6]}, std::pair<int64_t, int64_t>{pads[3], pads[7]});
  SLUICE_ASSIGN_OR_RETURN(x.tensor, Call(layer, {x.tensor}));
  return Define(node.output(0), x);
}

absl::Status Importer::Reshape(const onnx::NodeProto& node) {
  SLUICE_ASSIGN_OR_RETURN(Value x, Get(node.input_size() > 0 ? node.input(0) : ""));
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const Constant> shape, GetConstant(node, 1, 1));
  // Only what a classifier's head does: [N, ...] to [N, features] (the batch as 0, -1 or 1).
  if (!shape->is_int || shape->count() != 2 || shape->ints[0] < -1 || shape->ints[0] > 1) {
    return Unsupported("a Reshape other than to [batch, features]");
  }
  if (x.kind == Value::kImage || x.kind == Value::kNhwcImage) return Flatten(node);
  if (x.kind == Value::kPooled) x.kind = Value::kMatrix;
  const int64_t features = x.tensor.shape().dim(1);
  if (shape->ints[1] != -1 && shape->ints[1] != features) {
    return Invalid(absl::StrCat("reshapes ", features, " features to ", shape->ints[1]));
  }
  return Define(node.output(0), x);
}

absl::Status Importer::Node(const onnx::NodeProto& node) {
  node_ = &node;
  const std::string& op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    return Unsupported(absl::StrCat("the operator domain '", node.domain(), "'"));
  }
  if (node.output_size() < 1) return Invalid("no output");
  if (op == "Identity" || op == "Dropout") {
    if (op == "Dropout" && node.output_size() > 1 && !node.output(1).empty()) {
      return Unsupported("its mask output");
    }
    if (node.input_size() < 1) return Invalid("no input");
    SLUICE_ASSIGN_OR_RETURN(Value v, Get(node.input(0)));
    return Define(node.output(0), v);  // identities in inference
  }
  if (op == "Constant") {
    const onnx::AttributeProto* value = Attribute(node, "value");
    if (value == nullptr || value->type() != onnx::AttributeProto::TENSOR) {
      return Unsupported("a Constant without a tensor 'value'");
    }
    auto c = std::make_shared<Constant>();
    SLUICE_RETURN_IF_ERROR(ReadConstant(value->t(), *c));
    return Define(node.output(0), Value{.kind = Value::kConstant, .constant = std::move(c)});
  }
  if (op == "Transpose") {
    const std::vector<int64_t> perm = IntsAttribute(node, "perm", {});
    if (node.input_size() == 1 && node.input(0) == input_name_ && input_dims_.size() == 4 &&
        perm == std::vector<int64_t>{0, 3, 1, 2} && !input_) {
      SLUICE_ASSIGN_OR_RETURN(Value v, GraphInput(/*nhwc=*/true));
      return Define(node.output(0), v);
    }
    if (node.input_size() != 1) return Invalid("takes one input");
    SLUICE_ASSIGN_OR_RETURN(Value x, Get(node.input(0)));
    // Between NCHW and NHWC the data does not move in sluice (it is NHWC): only what ONNX calls it.
    if (x.kind == Value::kImage && perm == std::vector<int64_t>{0, 2, 3, 1}) {
      x.kind = Value::kNhwcImage;
      return Define(node.output(0), x);
    }
    if (x.kind == Value::kNhwcImage && perm == std::vector<int64_t>{0, 3, 1, 2}) {
      x.kind = Value::kImage;
      return Define(node.output(0), x);
    }
    return Unsupported("a Transpose other than between NCHW and NHWC images");
  }
  if (op == "Conv") return Conv(node);
  if (op == "BatchNormalization") return BatchNormalization(node);
  if (op == "MaxPool") return Pool(node, /*max=*/true);
  if (op == "AveragePool") return Pool(node, /*max=*/false);
  if (op == "Gemm") return Gemm(node, /*matmul=*/false);
  if (op == "MatMul") return Gemm(node, /*matmul=*/true);
  if (op == "Add" || op == "Mul" || op == "Concat") return Merge(node);
  if (op == "Clip") return Clip(node);
  if (op == "Flatten") return Flatten(node);
  if (op == "Reshape") return Reshape(node);
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh") {
    SLUICE_ASSIGN_OR_RETURN(Value x, Get(node.input_size() > 0 ? node.input(0) : ""));
    if (x.kind == Value::kConstant) return Unsupported("a constant input");
    std::shared_ptr<layers::Module> layer;
    if (op == "Relu") {
      layer = std::make_shared<layers::ReLU>();
    } else {
      layer = std::make_shared<layers::ActivationLayer>(
          op == "Sigmoid" ? layers::Activation::kSigmoid : layers::Activation::kTanh);
    }
    // Elementwise: the value keeps its kind and column order.
    SLUICE_ASSIGN_OR_RETURN(x.tensor, Call(std::move(layer), {x.tensor}));
    return Define(node.output(0), x);
  }
  if (op == "Pad") return Pad(node);
  if (op == "GlobalMaxPool") {
    SLUICE_ASSIGN_OR_RETURN(Value x, GetImage(node, 0));
    SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y,
                            Call(std::make_shared<layers::GlobalMaxPool>(), {x.tensor}));
    return Define(node.output(0), Value{.kind = Value::kPooled, .tensor = y});
  }
  if (op == "GlobalAveragePool") {
    SLUICE_ASSIGN_OR_RETURN(Value x, GetImage(node, 0));
    SLUICE_ASSIGN_OR_RETURN(SymbolicTensor y,
                            Call(std::make_shared<layers::GlobalAvgPool>(), {x.tensor}));
    return Define(node.output(0), Value{.kind = Value::kPooled, .tensor = y});
  }
  return Unsupported("this operator is not imported");
}

absl::StatusOr<std::unique_ptr<layers::Model>> Importer::Import(onnx::ModelProto& model) {
  const onnx::GraphProto& graph = model.graph();
  if (graph.node_size() > options_.max_nodes) {
    return Error(absl::StatusCode::kResourceExhausted,
                 absl::StrCat(graph.node_size(), " nodes, over OnnxImportOptions::max_nodes"));
  }
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    auto c = std::make_shared<Constant>();
    SLUICE_RETURN_IF_ERROR(ReadConstant(t, *c));
    // The weights are in `c` now: the proto's copy goes (clear() would keep its memory).
    std::string().swap(*t.mutable_raw_data());
    SLUICE_RETURN_IF_ERROR(Define(t.name(), Value{.kind = Value::kConstant, .constant = c}));
  }
  // The one input that is not an initializer (older exporters list initializers as inputs too).
  for (const onnx::ValueInfoProto& in : graph.input()) {
    if (values_.contains(in.name())) continue;
    if (!input_name_.empty()) {
      return Unsupported(absl::StrCat("two inputs, '", input_name_, "' and '", in.name(), "'"));
    }
    input_name_ = in.name();
    nhwc_file_ = model.producer_name() == "sluice";
    if (!in.type().has_tensor_type() ||
        in.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
      return Unsupported(absl::StrCat("the input '", in.name(), "' is not a float32 tensor"));
    }
    for (const onnx::TensorShapeProto::Dimension& d : in.type().tensor_type().shape().dim()) {
      input_dims_.push_back(d.has_dim_value() ? d.dim_value() : 0);
    }
  }
  if (input_name_.empty()) return Invalid("the graph has no input");
  // Uses of each value by the nodes not imported yet and by the graph's outputs: a constant's
  // values are released after its last use, so that a model's weights are held once (in its
  // layers) by the end, not twice.
  absl::flat_hash_map<std::string, int64_t> uses;
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& in : node.input()) ++uses[in];
  }
  for (const onnx::ValueInfoProto& out : graph.output()) ++uses[out.name()];
  const auto released = std::make_shared<const Constant>();
  for (const onnx::NodeProto& node : graph.node()) {
    SLUICE_RETURN_IF_ERROR(Node(node));
    for (const std::string& in : node.input()) {
      if (--uses[in] > 0) continue;
      auto it = values_.find(in);
      // Kept in the map, empty: a name defined twice is still found.
      if (it != values_.end() && it->second.kind == Value::kConstant)
        it->second.constant = released;
    }
  }
  node_ = nullptr;
  std::vector<SymbolicTensor> outputs;
  for (const onnx::ValueInfoProto& out : graph.output()) {
    SLUICE_ASSIGN_OR_RETURN(Value v, Get(out.name()));
    if (v.kind == Value::kConstant) {
      return Unsupported(absl::StrCat("the output '", out.name(), "' is a constant"));
    }
    outputs.push_back(v.tensor);
  }
  if (outputs.empty()) return Invalid("the graph has no output");
  if (!input_) return Unsupported("no output depends on the input");
  std::string name = options_.name.empty() ? graph.name() : options_.name;
  if (name.empty()) name = "onnx_model";
  absl::StatusOr<std::unique_ptr<layers::Model>> made =
      layers::Model::Make(inputs_, std::move(outputs), name);
  if (!made.ok()) return Error(made.status().code(), made.status().message());
  return made;
}

}  // namespace

namespace {

absl::Status CheckMaxFileBytes(const OnnxImportOptions& options) {
  if (options.max_file_bytes >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError("OnnxImportOptions::max_file_bytes must be >= 0");
}

// `bytes` parsed as a ModelProto, after checking the options' limits.
absl::StatusOr<onnx::ModelProto> Parse(absl::string_view bytes, const std::string& source,
                                       const OnnxImportOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckMaxFileBytes(options));
  if (static_cast<int64_t>(bytes.size()) > options.max_file_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(source, ": ", bytes.size(), " bytes, over OnnxImportOptions::max_file_bytes"));
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not an ONNX model (a ModelProto)"));
  }
  return model;
}

}  // namespace

absl::StatusOr<std::unique_ptr<layers::Model>> ImportOnnxBytes(absl::string_view bytes,
                                                               const std::string& source,
                                                               const OnnxImportOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(onnx::ModelProto model, Parse(bytes, source, options));
  return Importer(source, options).Import(model);
}

absl::StatusOr<std::unique_ptr<layers::Model>> ImportOnnx(const std::string& path,
                                                          const OnnxImportOptions& options) {
  return ImportOnnx(path, options, nullptr);
}

absl::StatusOr<std::unique_ptr<layers::Model>> ImportOnnx(const std::string& path,
                                                          const OnnxImportOptions& options,
                                                          std::vector<std::string>* class_names) {
  SLUICE_RETURN_IF_ERROR(CheckMaxFileBytes(options));
  onnx::ModelProto model;
  {
    // The file's bytes are not kept past the parse: the proto holds what is needed.
    absl::StatusOr<std::string> bytes =
        ReadFileToString(path, static_cast<uint64_t>(options.max_file_bytes));
    if (absl::IsResourceExhausted(bytes.status())) {
      return absl::ResourceExhaustedError(
          absl::StrCat(bytes.status().message(), " bytes (OnnxImportOptions::max_file_bytes)"));
    }
    if (!bytes.ok()) return bytes.status();
    SLUICE_ASSIGN_OR_RETURN(model, Parse(*bytes, path, options));
  }
  if (class_names != nullptr) {
    class_names->clear();
    for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
      if (entry.key() == "class_names" && !entry.value().empty()) {
        *class_names = absl::StrSplit(entry.value(), '\n');
      }
    }
  }
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  return Importer(path, options, std::move(folder)).Import(model);
}

}  // namespace sluice::train::importing
