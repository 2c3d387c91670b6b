#include "train/layers/sequential.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "train/autodiff/check_numerics.h"
#include "train/layers/dense.h"
#include "train/layers/recompute.h"
#include "train/layers/relu.h"

namespace sluice::train::layers {

Sequential::Sequential(std::vector<std::unique_ptr<Module>> modules) {
  for (auto& m : modules) Add(std::move(m));
}

Sequential::Sequential(std::initializer_list<LayerEntry> layers) {
  for (const LayerEntry& entry : layers) Add(std::move(entry.module));
}

Sequential& Sequential::Add(std::unique_ptr<Module> module) {
  modules_.push_back(std::move(module));
  output_shapes_.emplace_back();
  NameNewVariables(modules_.size() - 1);
  if (!modules_.back()->built()) all_named_ = false;
  return *this;
}

void Sequential::NameNewVariables(size_t i) {
  const std::string prefix = absl::StrCat(i, "/");
  for (autodiff::Variable* v : modules_[i]->Variables()) {
    if (named_.insert(v).second) v->set_name(absl::StrCat(prefix, v->name()));
  }
}

absl::Status Sequential::RecomputeLayers(size_t begin, size_t end) {
  if (begin >= end || end > modules_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("RecomputeLayers: [", begin, ", ", end,
                                                   ") is not a range of the ", modules_.size(),
                                                   " layers"));
  }
  for (const auto& [b, e] : segments_) {
    if (begin < e && b < end) {
      return absl::InvalidArgumentError(absl::StrCat("RecomputeLayers: [", begin, ", ", end,
                                                     ") overlaps the segment [", b, ", ", e, ")"));
    }
  }
  segments_.emplace_back(begin, end);
  std::sort(segments_.begin(), segments_.end());
  return absl::OkStatus();
}

namespace {

// A layer that runs a ReLU inside its kernel (Module::FusesRelu: Dense, Conv2D, BatchNorm)
// followed by a ReLU of Keras' defaults: one kernel (Module::ForwardRelu), which the two layers'
// values and gradients are bit for bit.
Module* FusedBeforeRelu(Module& layer, Module& next) {
  auto* relu = dynamic_cast<ReLU*>(&next);
  if (relu == nullptr || !layer.FusesRelu()) return nullptr;
  const ReLUOptions& o = relu->options();
  return !o.max_value && o.negative_slope == 0 && o.threshold == 0 ? &layer : nullptr;
}

}  // namespace

absl::StatusOr<Tensor> Sequential::RunLayers(size_t begin, size_t end, Tensor x, bool training) {
  for (size_t i = begin; i < end; ++i) {
    std::optional<autodiff::NumericsLayerScope> scope;
    if (autodiff::CheckNumericsEnabled()) scope.emplace(LayerLabel(i));
    Module* fused = i + 1 < end ? FusedBeforeRelu(*modules_[i], *modules_[i + 1]) : nullptr;
    absl::StatusOr<Tensor> y;
    {
      profiler::Span span("forward", profiler::Active() ? LayerLabel(i) : nullptr);
      y = fused ? fused->ForwardRelu(x, training) : modules_[i]->Forward(x, training);
    }
    if (!y.ok()) {
      return WithContext(y.status(), absl::StrCat(LayerLabel(i), ": "));
    }
    x = *std::move(y);
    output_shapes_[i] = x.shape();
    if (fused) output_shapes_[++i] = x.shape();  // the ReLU ran inside layer i's kernel
  }
  return x;
}

absl::StatusOr<Tensor> Sequential::Forward(const Tensor& input, bool training) {
  Tensor x = input;
  size_t i = 0;
  for (const std::pair<size_t, size_t>& segment : segments_) {
    // Copies, not structured bindings: clang 14 cannot capture those.
    const size_t begin = segment.first, end = segment.second;
    SLUICE_ASSIGN_OR_RETURN(x, RunLayers(i, begin, std::move(x), training));
    std::vector<Module*> modules;
    for (size_t j = begin; j < end; ++j) modules.push_back(modules_[j].get());
    SLUICE_ASSIGN_OR_RETURN(
        x, RecomputeGrad(absl::StrCat("layers ", begin, " to ", end - 1), std::move(modules), x,
                         training, [this, begin, end](const Tensor& in, bool t) {
                           return RunLayers(begin, end, in, t);
                         }));
    i = end;
  }
  SLUICE_ASSIGN_OR_RETURN(x, RunLayers(i, modules_.size(), std::move(x), training));
  if (!all_named_) {
    // Lazy layers built in this call: name their new variables once.
    all_named_ = true;
    for (size_t j = 0; j < modules_.size(); ++j) {
      NameNewVariables(j);
      if (!modules_[j]->built()) all_named_ = false;
    }
  }
  return x;
}

const char* Sequential::LayerLabel(size_t i) {
  if (layer_labels_.size() <= i) layer_labels_.resize(modules_.size(), nullptr);
  if (layer_labels_[i] == nullptr) {
    layer_labels_[i] = profiler::Intern(absl::StrCat("layer ", i, " (", modules_[i]->name(), ")"));
  }
  return layer_labels_[i];
}

std::vector<Module*> Sequential::Children() {
  std::vector<Module*> out;
  out.reserve(modules_.size());
  for (auto& m : modules_) out.push_back(m.get());
  return out;
}

absl::StatusOr<LayerConfig> Sequential::GetConfig() {
  LayerConfig config{.class_name = "Sequential"};
  for (size_t i = 0; i < modules_.size(); ++i) {
    absl::StatusOr<LayerConfig> layer = modules_[i]->GetConfig();
    if (!layer.ok()) {
      return WithContext(layer.status(), absl::StrCat("layer ", i, ": "));
    }
    config.layers.push_back(*std::move(layer));
  }
  for (size_t k = 0; k < segments_.size(); ++k) {
    config.ints[absl::StrCat("recompute_", k, "_begin")] = static_cast<int64_t>(segments_[k].first);
    config.ints[absl::StrCat("recompute_", k, "_end")] = static_cast<int64_t>(segments_[k].second);
  }
  return config;
}

}  // namespace sluice::train::layers
