#include "train/layers/sequential.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "train/autodiff/check_numerics.h"

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

absl::StatusOr<Tensor> Sequential::Forward(const Tensor& input, bool training) {
  Tensor x = input;
  for (size_t i = 0; i < modules_.size(); ++i) {
    std::optional<autodiff::NumericsLayerScope> scope;
    if (autodiff::CheckNumericsEnabled()) scope.emplace(LayerLabel(i));
    absl::StatusOr<Tensor> y;
    {
      profiler::Span span("forward", profiler::Active() ? LayerLabel(i) : nullptr);
      y = modules_[i]->Forward(x, training);
    }
    if (!y.ok()) {
      return absl::Status(y.status().code(),
                          absl::StrCat(LayerLabel(i), ": ", y.status().message()));
    }
    x = *std::move(y);
    output_shapes_[i] = x.shape();
  }
  if (!all_named_) {
    // Lazy layers built in this call: name their new variables once.
    all_named_ = true;
    for (size_t i = 0; i < modules_.size(); ++i) {
      NameNewVariables(i);
      if (!modules_[i]->built()) all_named_ = false;
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
      return absl::Status(layer.status().code(),
                          absl::StrCat("layer ", i, ": ", layer.status().message()));
    }
    config.layers.push_back(*std::move(layer));
  }
  return config;
}

}  // namespace sluice::train::layers
