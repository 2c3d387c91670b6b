#include "train/layers/model.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "train/autodiff/check_numerics.h"
#include "train/layers/parameter_limit.h"

namespace sluice::train::layers {
namespace {

// Whether `shape` is `declared` but for the batch dimension.
bool Fits(const Shape& shape, const Shape& declared) {
  if (shape.rank() != declared.rank()) return false;
  for (int i = 1; i < shape.rank(); ++i) {
    if (shape.dim(i) != declared.dim(i)) return false;
  }
  return true;
}

// `base`, else `base_1`, `base_2`, ...: the first not in `used`, which it joins.
std::string Unique(const std::string& base, absl::flat_hash_set<std::string>& used) {
  std::string name = base;
  for (int k = 1; used.contains(name); ++k) name = absl::StrCat(base, "_", k);
  used.insert(name);
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Model::Make(std::vector<SymbolicTensor> inputs,
                                                   std::vector<SymbolicTensor> outputs,
                                                   std::string name) {
  if (inputs.empty() || outputs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("Model '", name, "': needs ", inputs.size(),
                                                   " > 0 inputs and ", outputs.size(),
                                                   " > 0 outputs"));
  }
  for (const SymbolicTensor& t : outputs) {
    if (!t.ok()) {
      return WithContext(t.status(), absl::StrCat("Model '", name, "': "));
    }
  }
  auto model = std::unique_ptr<Model>(new Model());
  model->name_ = std::move(name);
  absl::flat_hash_map<const FunctionalNode*, int> step_of;
  absl::flat_hash_set<std::string> used;
  // The inputs first, in order.
  for (size_t j = 0; j < inputs.size(); ++j) {
    const FunctionalNode* node = inputs[j].node().get();
    if (node == nullptr || node->layer != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("Model '", model->name_, "': input ", j,
                                                     " is not an Input (a layer's output)"));
    }
    if (!step_of.emplace(node, static_cast<int>(j)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Model '", model->name_, "': input ", j, " is listed twice"));
    }
    if (!node->input_name.empty() && !used.insert(node->input_name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Model '", model->name_, "': two inputs are named '", node->input_name, "'"));
    }
    model->steps_.push_back(Step{.node = inputs[j].node(),
                                 .layer = nullptr,
                                 .input_index = static_cast<int>(j),
                                 .name = node->input_name});
  }
  // Every layer call the outputs need, each after its inputs: an iterative depth-first walk
  // (a deep graph from an untrusted file must not exhaust the stack).
  struct Frame {
    std::shared_ptr<const FunctionalNode> node;
    size_t next_input = 0;
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::vector<Frame> stack;
    if (!step_of.contains(outputs[o].node().get())) stack.push_back({outputs[o].node()});
    while (!stack.empty()) {
      Frame& top = stack.back();
      const FunctionalNode* node = top.node.get();
      if (node->layer == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Model '", model->name_, "': output ", o, " needs the Input",
            node->input_name.empty() ? "" : absl::StrCat(" '", node->input_name, "'"), " of shape ",
            BatchShapeString(node->shape), ", which is not among the model's inputs"));
      }
      if (top.next_input < node->inputs.size()) {
        const std::shared_ptr<const FunctionalNode>& in = node->inputs[top.next_input++].node();
        // A graph is acyclic by construction: a node is made after its inputs.
        if (!step_of.contains(in.get())) stack.push_back({in});
        continue;
      }
      Step step{.node = top.node, .layer = node->layer.get()};
      for (const SymbolicTensor& in : node->inputs)
        step.inputs.push_back(step_of.at(in.node().get()));
      step_of.emplace(node, static_cast<int>(model->steps_.size()));
      model->steps_.push_back(std::move(step));
      stack.pop_back();
    }
    model->output_steps_.push_back(step_of.at(outputs[o].node().get()));
  }
  // Each layer once, in the order of its first call; the names given, then the rest numbered.
  absl::flat_hash_map<const Module*, std::string> named;
  for (Step& step : model->steps_) {
    if (step.layer == nullptr || named.contains(step.layer)) continue;
    model->layers_.push_back(step.layer);
    const std::string& given = step.layer->layer_name();
    named.emplace(step.layer, given);
    if (given.empty()) continue;
    if (absl::StrContains(given, '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Model '", model->name_, "': the layer name '", given,
          "' contains '/', which separates a layer's name from its variables' (as in Keras)"));
    }
    if (!used.insert(given).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Model '", model->name_, "': two layers or inputs are named '", given, "'"));
    }
  }
  for (Module* layer : model->layers_) {
    if (layer->layer_name().empty()) layer->set_layer_name(Unique(layer->name(), used));
    // "dense/kernel" of the layer named "head" becomes "head/kernel", as in Keras; a name this
    // or another model gave already stays.
    const std::string prefix = absl::StrCat(layer->layer_name(), "/");
    const std::string kind = absl::StrCat(layer->name(), "/");
    for (autodiff::Variable* v : layer->Variables()) {
      if (absl::StartsWith(v->name(), prefix)) continue;
      absl::string_view rest = v->name();
      absl::ConsumePrefix(&rest, kind);
      v->set_name(absl::StrCat(prefix, rest));
    }
  }
  for (Step& step : model->steps_) {
    if (step.layer != nullptr) {
      step.name = step.layer->layer_name();
      step.label =
          profiler::Intern(absl::StrCat("layer '", step.name, "' (", step.layer->name(), ")"));
    } else {
      if (step.name.empty()) step.name = Unique("input", used);
      step.label = profiler::Intern(absl::StrCat("input '", step.name, "'"));
    }
  }
  model->last_use_.assign(model->steps_.size(), -1);
  for (size_t s = 0; s < model->steps_.size(); ++s) {
    for (int i : model->steps_[s].inputs) model->last_use_[i] = static_cast<int>(s);
  }
  for (int s : model->output_steps_) model->last_use_[s] = std::numeric_limits<int>::max();
  model->inputs_ = std::move(inputs);
  model->outputs_ = std::move(outputs);
  return model;
}

absl::StatusOr<std::vector<Tensor>> Model::Call(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": takes ", inputs_.size(), " inputs, got ", inputs.size()));
  }
  std::vector<std::optional<Tensor>> values(steps_.size());
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Shape& declared = steps_[j].node->shape;
    if (!Fits(inputs[j].shape(), declared)) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": input ", j, " ('", steps_[j].name,
                                                     "') expects ", BatchShapeString(declared),
                                                     ", got ", inputs[j].shape().DebugString()));
    }
    values[j] = inputs[j];
  }
  std::vector<Tensor> args;
  for (size_t s = inputs.size(); s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    args.clear();
    for (int i : step.inputs) args.push_back(*values[i]);
    std::optional<autodiff::NumericsLayerScope> scope;
    if (autodiff::CheckNumericsEnabled()) scope.emplace(step.label);
    absl::StatusOr<Tensor> y;
    {
      profiler::Span span("forward", profiler::Active() ? step.label : nullptr);
      y = step.layer->ForwardInputs(args, training);
    }
    if (!y.ok()) {
      return WithContext(y.status(), absl::StrCat(step.label, ": "));
    }
    values[s] = *std::move(y);
    // Drop what no later step reads, so that memory stays as a Sequential's.
    for (int i : step.inputs) {
      if (last_use_[i] == static_cast<int>(s)) values[i].reset();
    }
  }
  std::vector<Tensor> out;
  out.reserve(output_steps_.size());
  for (int s : output_steps_) out.push_back(*values[s]);
  return out;
}

absl::StatusOr<Tensor> Model::ForwardInputs(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": takes ", inputs_.size(), " inputs, got ", inputs.size()));
  }
  if (output_steps_.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": has ", output_steps_.size(), " outputs; Call returns them all"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> out, Call(inputs, training));
  return std::move(out[0]);
}

absl::StatusOr<Tensor> Model::Forward(const Tensor& input, bool training) {
  return ForwardInputs({input}, training);
}

std::vector<Module*> Model::Children() { return layers_; }

absl::Status Model::Build(const Shape& input_shape) {
  const Shape& declared = steps_[0].node->shape;
  if (inputs_.size() == 1 && Fits(input_shape, declared)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name_, ": built for ", inputs_.size(), " input(s), the first ",
                   BatchShapeString(declared), "; Build asked for ", input_shape.DebugString()));
}

absl::StatusOr<Module*> Model::GetLayer(absl::string_view name) {
  std::vector<std::string> names;
  for (Module* layer : layers_) {
    if (layer->layer_name() == name) return layer;
    names.push_back(layer->layer_name());
  }
  return absl::NotFoundError(
      absl::StrCat(name_, ": no layer '", name, "' (it has ", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<SymbolicTensor> Model::LayerOutput(absl::string_view name) {
  SLUICE_ASSIGN_OR_RETURN(Module * layer, GetLayer(name));
  const Step* found = nullptr;
  for (const Step& step : steps_) {
    if (step.layer != layer) continue;
    if (found != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": the layer '", name, "' is called more than once; which output is meant?"));
    }
    found = &step;
  }
  return SymbolicTensor(found->node);
}

// The config: the layers' configs in `layers` (each once), and as strings
//   layer_<k>_name   the layer's name
//   input_<j>_name   input j's name, and input_<j>_shape its dims without the batch ("28,28,1")
//   node_<s>         step s: "input:<j>", or "<k>:<s1>,<s2>" (layer k on earlier steps' outputs)
//   outputs          the output steps ("7,9")
// and as ints `inputs` and `nodes`, the counts.
absl::StatusOr<LayerConfig> Model::GetConfig() {
  LayerConfig config{.class_name = "Functional", .strings = {{"name", name_}}};
  absl::flat_hash_map<const Module*, int> index;
  for (size_t k = 0; k < layers_.size(); ++k) {
    absl::StatusOr<LayerConfig> layer = layers_[k]->GetConfig();
    if (!layer.ok()) {
      return WithContext(layer.status(), absl::StrCat("layer '", layers_[k]->layer_name(), "': "));
    }
    config.layers.push_back(*std::move(layer));
    config.strings[absl::StrCat("layer_", k, "_name")] = layers_[k]->layer_name();
    index[layers_[k]] = static_cast<int>(k);
  }
  config.ints["inputs"] = static_cast<int64_t>(inputs_.size());
  config.ints["nodes"] = static_cast<int64_t>(steps_.size());
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    if (step.layer == nullptr) {
      const Shape& shape = step.node->shape;
      config.strings[absl::StrCat("input_", step.input_index, "_name")] = step.name;
      config.strings[absl::StrCat("input_", step.input_index, "_shape")] =
          absl::StrJoin(shape.dims().subspan(1), ",");
      config.strings[absl::StrCat("node_", s)] = absl::StrCat("input:", step.input_index);
    } else {
      config.strings[absl::StrCat("node_", s)] =
          absl::StrCat(index.at(step.layer), ":", absl::StrJoin(step.inputs, ","));
    }
  }
  config.strings["outputs"] = absl::StrJoin(output_steps_, ",");
  return config;
}

namespace {

// A Functional config, read and checked: every index in range, every node after its inputs.
struct Graph {
  std::string name;
  std::vector<std::string> layer_names;
  struct InputSpec {
    std::string name;
    Shape shape;  // with a batch dimension of 1
  };
  std::vector<InputSpec> inputs;
  struct Node {
    int layer = -1;  // -1 for an input
    int input = -1;
    std::vector<int> inbound;
  };
  std::vector<Node> nodes;
  std::vector<int> outputs;
};

absl::Status Bad(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("Functional: ", what));
}

absl::StatusOr<std::vector<int>> Indices(absl::string_view text, int limit,
                                         const std::string& what) {
  std::vector<int> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int i = 0;
    if (!absl::SimpleAtoi(part, &i) || i < 0 || i >= limit) {
      return Bad(
          absl::StrCat(what, " refers to '", part, "', not one of the ", limit, " before it"));
    }
    out.push_back(i);
  }
  return out;
}

absl::StatusOr<Graph> ReadGraph(const LayerConfig& config) {
  // Far above any real network, and small enough that no count below can overflow.
  constexpr int64_t kMaxNodes = 1 << 20;
  Graph g;
  g.name = config.strings.contains("name") ? config.strings.at("name") : "functional";
  SLUICE_ASSIGN_OR_RETURN(const int64_t inputs, config.Int("inputs"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t nodes, config.Int("nodes"));
  if (nodes < 1 || nodes > kMaxNodes || inputs < 1 || inputs > nodes) {
    return Bad(absl::StrCat(inputs, " inputs and ", nodes, " nodes"));
  }
  for (size_t k = 0; k < config.layers.size(); ++k) {
    SLUICE_ASSIGN_OR_RETURN(std::string name, config.String(absl::StrCat("layer_", k, "_name")));
    g.layer_names.push_back(std::move(name));
  }
  for (int64_t j = 0; j < inputs; ++j) {
    SLUICE_ASSIGN_OR_RETURN(std::string name, config.String(absl::StrCat("input_", j, "_name")));
    SLUICE_ASSIGN_OR_RETURN(const std::string dims_text,
                            config.String(absl::StrCat("input_", j, "_shape")));
    std::vector<int64_t> dims = {1};
    if (!dims_text.empty()) {
      for (absl::string_view part : absl::StrSplit(dims_text, ',')) {
        int64_t d = 0;
        if (!absl::SimpleAtoi(part, &d) || d < 1) {
          return Bad(absl::StrCat("input ", j, "'s shape '", dims_text, "'"));
        }
        dims.push_back(d);
      }
    }
    absl::StatusOr<Shape> shape = Shape::FromUntrustedDims(dims);
    if (!shape.ok()) return Bad(absl::StrCat("input ", j, ": ", shape.status().message()));
    g.inputs.push_back({std::move(name), *std::move(shape)});
  }
  std::vector<bool> seen_input(inputs, false);
  for (int64_t s = 0; s < nodes; ++s) {
    SLUICE_ASSIGN_OR_RETURN(const std::string text, config.String(absl::StrCat("node_", s)));
    Graph::Node node;
    const std::pair<std::string, std::string> parts = absl::StrSplit(text, absl::MaxSplits(':', 1));
    if (parts.first == "input") {
      if (!absl::SimpleAtoi(parts.second, &node.input) || node.input < 0 || node.input >= inputs ||
          seen_input[node.input]) {
        return Bad(absl::StrCat("node ", s, " is '", text, "'"));
      }
      seen_input[node.input] = true;
    } else {
      if (!absl::SimpleAtoi(parts.first, &node.layer) || node.layer < 0 ||
          static_cast<size_t>(node.layer) >= config.layers.size()) {
        return Bad(
            absl::StrCat("node ", s, " is '", text, "' (", config.layers.size(), " layers)"));
      }
      SLUICE_ASSIGN_OR_RETURN(node.inbound,
                              Indices(parts.second, static_cast<int>(s), absl::StrCat("node ", s)));
      if (node.inbound.empty()) return Bad(absl::StrCat("node ", s, " has no input"));
    }
    g.nodes.push_back(std::move(node));
  }
  if (std::find(seen_input.begin(), seen_input.end(), false) != seen_input.end()) {
    return Bad("an input without a node");
  }
  SLUICE_ASSIGN_OR_RETURN(const std::string outputs, config.String("outputs"));
  SLUICE_ASSIGN_OR_RETURN(g.outputs, Indices(outputs, static_cast<int>(nodes), "outputs"));
  if (g.outputs.empty()) return Bad("no output");
  return g;
}

// The output shape of a merge layer's call (Add, Multiply: NumPy broadcasting; Concatenate:
// joined along its axis), or nullopt for a class that is not one.
absl::StatusOr<std::optional<Shape>> MergedShape(const LayerConfig& config,
                                                 const std::vector<Shape>& in) {
  const std::string& c = config.class_name;
  if (c != "Add" && c != "Multiply" && c != "Concatenate") return std::nullopt;
  if (in.size() < 2) return Bad(absl::StrCat(c, " on ", in.size(), " input(s)"));
  int rank = 0;
  for (const Shape& s : in) rank = std::max(rank, s.rank());
  std::vector<int64_t> dims(rank, 1);
  if (c == "Concatenate") {
    const int64_t axis = config.IntOr("axis", -1);
    const int64_t ax = axis < 0 ? axis + rank : axis;
    if (ax < 0 || ax >= rank) return Bad(absl::StrCat("Concatenate: axis ", axis));
    dims = std::vector<int64_t>(in[0].dims().begin(), in[0].dims().end());
    dims[ax] = 0;
    for (const Shape& s : in) {
      if (s.rank() != rank) return Bad("Concatenate: inputs of different ranks");
      for (int i = 0; i < rank; ++i) {
        if (i != ax && s.dim(i) != dims[i]) {
          return Bad(absl::StrCat("Concatenate: ", s.DebugString(), " and ", in[0].DebugString(),
                                  " along axis ", axis));
        }
      }
      dims[ax] = SaturatingAdd(dims[ax], s.dim(ax));
    }
  } else {
    for (const Shape& s : in) {
      for (int i = 0; i < s.rank(); ++i) {
        int64_t& d = dims[rank - s.rank() + i];
        const int64_t e = s.dim(i);
        if (d != e && d != 1 && e != 1) {
          return Bad(absl::StrCat(c, ": cannot broadcast ", s.DebugString(), " with the others"));
        }
        if (d == 1) d = e;
      }
    }
  }
  absl::StatusOr<Shape> shape = Shape::FromUntrustedDims(dims);
  if (!shape.ok()) return Bad(absl::StrCat(c, ": ", shape.status().message()));
  return std::optional<Shape>(*std::move(shape));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> FunctionalFromConfig(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const Graph g, ReadGraph(config));
  std::vector<std::shared_ptr<Module>> layers;
  for (size_t k = 0; k < config.layers.size(); ++k) {
    absl::StatusOr<std::unique_ptr<Module>> layer = LayerFromConfig(config.layers[k]);
    if (!layer.ok()) {
      return WithContext(layer.status(), absl::StrCat("layer '", g.layer_names[k], "': "));
    }
    (*layer)->set_layer_name(g.layer_names[k]);
    layers.push_back(std::shared_ptr<Module>(*std::move(layer)));
  }
  std::vector<SymbolicTensor> tensors, inputs(g.inputs.size());
  for (const Graph::Node& node : g.nodes) {
    if (node.layer < 0) {
      const Graph::InputSpec& spec = g.inputs[node.input];
      std::vector<int64_t> dims(spec.shape.dims().begin() + 1, spec.shape.dims().end());
      tensors.push_back(Input(Shape(dims), spec.name));
      inputs[node.input] = tensors.back();
      continue;
    }
    std::vector<SymbolicTensor> in;
    for (int i : node.inbound) in.push_back(tensors[i]);
    tensors.push_back(Apply(layers[node.layer], in));
  }
  std::vector<SymbolicTensor> outputs;
  for (int s : g.outputs) outputs.push_back(tensors[s]);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                          Model::Make(std::move(inputs), std::move(outputs), g.name));
  return std::unique_ptr<Module>(std::move(model));
}

absl::StatusOr<LayerSize> FunctionalSize(const LayerConfig& config, const Shape& input_shape) {
  SLUICE_ASSIGN_OR_RETURN(const Graph g, ReadGraph(config));
  // The batch of `input_shape` for every input; the first input must have its shape.
  if (!Fits(input_shape, g.inputs[0].shape) || input_shape.rank() < 1) {
    return Bad(absl::StrCat("built for input ", BatchShapeString(g.inputs[0].shape), ", sized for ",
                            input_shape.DebugString()));
  }
  const int64_t batch = input_shape.dim(0);
  LayerSize size;
  std::vector<Shape> shapes;
  std::vector<bool> sized(config.layers.size(), false);
  std::vector<int> calls(config.layers.size(), 0);
  for (const Graph::Node& node : g.nodes) {
    if (node.layer < 0) {
      Shape shape = g.inputs[node.input].shape;
      shape.set_dim(0, batch);
      // Every input's size is listed, so that LoadModel checks it before Make allocates it
      // (under a prefix that names no variable).
      size.layers.push_back(LayerSize{.class_name = "Input",
                                      .prefix = absl::StrCat(g.inputs[node.input].name, "@input/"),
                                      .output_shape = shape});
      shapes.push_back(std::move(shape));
      continue;
    }
    const LayerConfig& layer = config.layers[node.layer];
    std::vector<Shape> in;
    for (int i : node.inbound) in.push_back(shapes[i]);
    auto named = [&](const absl::Status& status) {
      return WithContext(status, absl::StrCat("layer '", g.layer_names[node.layer], "': "));
    };
    absl::StatusOr<std::optional<Shape>> merged = MergedShape(layer, in);
    if (!merged.ok()) return named(merged.status());
    LayerSize one{.class_name = layer.class_name, .known = false};  // a user's merge layer
    if (*merged) {
      one.known = true;
      one.output_shape = **merged;
    } else if (in.size() == 1) {
      absl::StatusOr<LayerSize> sized_one = LayerSizeFromConfig(layer, in[0]);
      if (!sized_one.ok()) return named(sized_one.status());
      one = *std::move(sized_one);
    }
    if (!one.known) {
      size.known = false;
      one.prefix = absl::StrCat(g.layer_names[node.layer], "/");
      size.layers.push_back(std::move(one));
      return size;  // what follows has an unknown input
    }
    shapes.push_back(one.output_shape);
    if (!sized[node.layer]) {
      sized[node.layer] = true;
      one.prefix = absl::StrCat(g.layer_names[node.layer], "/");
      size.parameters = SaturatingAdd(size.parameters, one.parameters);
    } else {
      // A shared layer's variables count once; its later calls are listed without them, so
      // that their outputs are checked too.
      one.prefix = absl::StrCat(g.layer_names[node.layer], "@", calls[node.layer], "/");
      one.parameters = 0;
      one.layers.clear();
    }
    ++calls[node.layer];
    size.layers.push_back(std::move(one));
  }
  size.output_shape = shapes[g.outputs[0]];
  return size;
}

}  // namespace sluice::train::layers
