#include "train/layers/layer_config.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "train/layers/activation.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/initializers.h"
#include "train/layers/max_pool.h"
#include "train/layers/module.h"
#include "train/layers/parameter_limit.h"
#include "train/layers/recompute.h"
#include "train/layers/relu.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/ops/pool.h"

namespace sluice::train::layers {
namespace {

using Made = absl::StatusOr<std::unique_ptr<Module>>;

absl::Status Missing(const LayerConfig& config, const std::string& key) {
  return absl::InvalidArgumentError(
      absl::StrCat("the config of ", config.class_name, " has no '", key, "'"));
}

absl::StatusOr<ops::Pool2DOptions> PoolOptions(const LayerConfig& config) {
  ops::Pool2DOptions options;
  SLUICE_ASSIGN_OR_RETURN(options.window_h, config.Int("window_h"));
  SLUICE_ASSIGN_OR_RETURN(options.window_w, config.Int("window_w"));
  SLUICE_ASSIGN_OR_RETURN(options.stride_h, config.Int("stride_h"));
  SLUICE_ASSIGN_OR_RETURN(options.stride_w, config.Int("stride_w"));
  SLUICE_ASSIGN_OR_RETURN(const std::string padding, config.String("padding"));
  SLUICE_ASSIGN_OR_RETURN(options.padding, ops::ParsePadding(padding));
  return options;
}

// A layer of a container, checked before it is used.
absl::StatusOr<std::unique_ptr<Module>> Child(const LayerConfig& config, size_t i) {
  if (i >= config.layers.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the config of ", config.class_name, " has ",
                                                   config.layers.size(), " layers, not ", i + 1));
  }
  return LayerFromConfig(config.layers[i]);
}

Made MakeDense(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const int64_t units, config.Int("units"));
  DenseOptions options;
  SLUICE_RETURN_IF_ERROR(KernelLayer::ReadKernelConfig(config, options));
  if (units < 1) return absl::InvalidArgumentError(absl::StrCat("Dense: units ", units));
  return std::unique_ptr<Module>(std::make_unique<Dense>(units, options.activation, options));
}

Made MakeConv2D(const LayerConfig& config) {
  Conv2DLayerOptions options;
  SLUICE_ASSIGN_OR_RETURN(const int64_t filters, config.Int("filters"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t kernel_h, config.Int("kernel_h"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t kernel_w, config.Int("kernel_w"));
  SLUICE_ASSIGN_OR_RETURN(options.conv.stride_h, config.Int("stride_h"));
  SLUICE_ASSIGN_OR_RETURN(options.conv.stride_w, config.Int("stride_w"));
  options.conv.dilation_h = config.IntOr("dilation_h", 1);
  options.conv.dilation_w = config.IntOr("dilation_w", 1);
  SLUICE_ASSIGN_OR_RETURN(const std::string padding, config.String("padding"));
  SLUICE_ASSIGN_OR_RETURN(options.conv.padding, ops::ParsePadding(padding));
  SLUICE_RETURN_IF_ERROR(KernelLayer::ReadKernelConfig(config, options));
  if (filters < 1 || kernel_h < 1 || kernel_w < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Conv2D: filters ", filters, ", kernel ", kernel_h, "x", kernel_w));
  }
  return std::unique_ptr<Module>(
      std::make_unique<Conv2D>(filters, KernelSize(kernel_h, kernel_w), options));
}

Made MakeBatchNorm(const LayerConfig& config) {
  BatchNormOptions options;
  SLUICE_ASSIGN_OR_RETURN(const double momentum, config.Float("momentum"));
  SLUICE_ASSIGN_OR_RETURN(const double epsilon, config.Float("epsilon"));
  options.momentum = static_cast<float>(momentum);
  options.epsilon = static_cast<float>(epsilon);
  return std::unique_ptr<Module>(std::make_unique<BatchNorm>(options));
}

Made MakeDropout(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const double rate, config.Float("rate"));
  return std::unique_ptr<Module>(std::make_unique<Dropout>(
      static_cast<float>(rate), static_cast<uint64_t>(config.IntOr("seed", 0))));
}

Made MakeResidualBlock(const LayerConfig& config) {
  ResidualBlockOptions options;
  SLUICE_ASSIGN_OR_RETURN(const int64_t in_channels, config.Int("in_channels"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t filters, config.Int("filters"));
  SLUICE_ASSIGN_OR_RETURN(options.stride, config.Int("stride"));
  options.seed = static_cast<uint64_t>(config.IntOr("seed", 0));
  options.recompute = config.IntOr("recompute", 0) != 0;
  SLUICE_ASSIGN_OR_RETURN(const double momentum, config.Float("momentum"));
  SLUICE_ASSIGN_OR_RETURN(const double epsilon, config.Float("epsilon"));
  options.batch_norm = {.momentum = static_cast<float>(momentum),
                        .epsilon = static_cast<float>(epsilon)};
  SLUICE_ASSIGN_OR_RETURN(const std::string init, config.String("kernel_initializer"));
  SLUICE_ASSIGN_OR_RETURN(options.kernel_initializer, ParseInitializer(init));
  if (in_channels < 1 || filters < 1 || options.stride < 1) {
    return absl::InvalidArgumentError(absl::StrCat("ResidualBlock: in_channels ", in_channels,
                                                   ", filters ", filters, ", stride ",
                                                   options.stride));
  }
  // The block builds its convolutions and batch norms as it is made: check their size first.
  const bool shortcut = options.stride != 1 || in_channels != filters;
  int64_t elements = SaturatingProduct({9, in_channels, filters});
  elements = SaturatingAdd(elements, SaturatingProduct({9, filters, filters}));
  elements = SaturatingAdd(elements, SaturatingProduct({shortcut ? 3 : 2, 4, filters}));
  if (shortcut) elements = SaturatingAdd(elements, SaturatingProduct({in_channels, filters}));
  SLUICE_RETURN_IF_ERROR(CheckParameters("ResidualBlock", elements));
  return std::unique_ptr<Module>(std::make_unique<ResidualBlock>(in_channels, filters, options));
}

Made MakeSequential(const LayerConfig& config) {
  auto sequential = std::make_unique<Sequential>();
  for (size_t i = 0; i < config.layers.size(); ++i) {
    absl::StatusOr<std::unique_ptr<Module>> layer = Child(config, i);
    if (!layer.ok()) {
      return absl::Status(layer.status().code(),
                          absl::StrCat("layer ", i, ": ", layer.status().message()));
    }
    sequential->Add(*std::move(layer));
  }
  for (int k = 0; config.ints.contains(absl::StrCat("recompute_", k, "_begin")); ++k) {
    SLUICE_ASSIGN_OR_RETURN(const int64_t begin,
                            config.Int(absl::StrCat("recompute_", k, "_begin")));
    SLUICE_ASSIGN_OR_RETURN(const int64_t end, config.Int(absl::StrCat("recompute_", k, "_end")));
    if (begin < 0 || end < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Sequential: recompute segment [", begin, ", ", end, ")"));
    }
    SLUICE_RETURN_IF_ERROR(
        sequential->RecomputeLayers(static_cast<size_t>(begin), static_cast<size_t>(end)));
  }
  return std::unique_ptr<Module>(std::move(sequential));
}

Made MakeRecompute(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Module> inner, Child(config, 0));
  return std::unique_ptr<Module>(std::make_unique<Recompute>(std::move(inner)));
}

template <typename M>
Made MakePlain(const LayerConfig&) {
  return std::unique_ptr<Module>(std::make_unique<M>());
}

template <typename M>
Made MakePool(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const ops::Pool2DOptions options, PoolOptions(config));
  return std::unique_ptr<Module>(std::make_unique<M>(options));
}

struct Registry {
  Mutex mu;
  absl::flat_hash_map<std::string, LayerFactory> factories ABSL_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    MutexLock l(&r->mu);
    r->factories = {{"Dense", MakeDense},
                    {"Conv2D", MakeConv2D},
                    {"BatchNorm", MakeBatchNorm},
                    {"Dropout", MakeDropout},
                    {"ResidualBlock", MakeResidualBlock},
                    {"Sequential", MakeSequential},
                    {"Recompute", MakeRecompute},
                    {"ReLU", MakePlain<ReLU>},
                    {"Flatten", MakePlain<Flatten>},
                    {"GlobalAvgPool", MakePlain<GlobalAvgPool>},
                    {"MaxPool", MakePool<MaxPool>},
                    {"AvgPool", MakePool<AvgPool>}};
    return r;
  }();
  return *registry;
}

}  // namespace

absl::StatusOr<int64_t> LayerConfig::Int(const std::string& key) const {
  auto it = ints.find(key);
  if (it == ints.end()) return Missing(*this, key);
  return it->second;
}

absl::StatusOr<double> LayerConfig::Float(const std::string& key) const {
  auto it = floats.find(key);
  if (it == floats.end()) return Missing(*this, key);
  return it->second;
}

absl::StatusOr<std::string> LayerConfig::String(const std::string& key) const {
  auto it = strings.find(key);
  if (it == strings.end()) return Missing(*this, key);
  return it->second;
}

int64_t LayerConfig::IntOr(const std::string& key, int64_t fallback) const {
  auto it = ints.find(key);
  return it == ints.end() ? fallback : it->second;
}

LayerConfig PoolConfig(const char* class_name, const ops::Pool2DOptions& options) {
  return LayerConfig{.class_name = class_name,
                     .ints = {{"window_h", options.window_h},
                              {"window_w", options.window_w},
                              {"stride_h", options.stride_h},
                              {"stride_w", options.stride_w}},
                     .strings = {{"padding", ops::PaddingName(options.padding)}}};
}

absl::Status RegisterLayer(const std::string& class_name, LayerFactory factory) {
  Registry& r = TheRegistry();
  MutexLock l(&r.mu);
  if (!r.factories.emplace(class_name, std::move(factory)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("a layer factory is registered for '", class_name, "' already"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Module>> LayerFromConfig(const LayerConfig& config) {
  LayerFactory factory;
  {
    Registry& r = TheRegistry();
    MutexLock l(&r.mu);
    auto it = r.factories.find(config.class_name);
    if (it == r.factories.end()) {
      std::vector<std::string> names;
      for (const auto& [name, f] : r.factories) names.push_back(name);
      std::sort(names.begin(), names.end());
      return absl::NotFoundError(absl::StrCat("no layer factory for '", config.class_name,
                                              "' (registered: ", absl::StrJoin(names, ", "),
                                              "); a custom layer calls RegisterLayer"));
    }
    factory = it->second;
  }
  return factory(config);
}

}  // namespace sluice::train::layers
