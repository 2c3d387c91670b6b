#ifndef SLUICE_TRAIN_LAYERS_LAYER_CONFIG_H_
#define SLUICE_TRAIN_LAYERS_LAYER_CONFIG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice::train::layers {

class Module;

}  // namespace sluice::train::layers

namespace sluice::train::ops {
struct Pool2DOptions;
}  // namespace sluice::train::ops

namespace sluice::train::layers {

// A layer's constructor arguments by name (Keras' get_config()), enough to make the layer again
// without its code: what a saved model stores for its architecture. Containers list their
// layers' configs in `layers`.
struct LayerConfig {
  std::string class_name;  // the name its factory is registered under: "Dense", "Conv2D", ...
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> floats;
  std::map<std::string, std::string> strings;
  std::vector<LayerConfig> layers;

  // Typed reads; a missing key is InvalidArgument naming the class and the key.
  absl::StatusOr<int64_t> Int(const std::string& key) const;
  absl::StatusOr<double> Float(const std::string& key) const;
  absl::StatusOr<std::string> String(const std::string& key) const;
  int64_t IntOr(const std::string& key, int64_t fallback) const;
};

// Makes a layer from its config.
using LayerFactory = std::function<absl::StatusOr<std::unique_ptr<Module>>(const LayerConfig&)>;

// Registers the factory of a user's own layer class (the built-in layers are registered
// already); AlreadyExists when the name is taken. Thread-safe.
absl::Status RegisterLayer(const std::string& class_name, LayerFactory factory);

// The layer `config` describes, from the factory registered for its class_name (NotFound, naming
// the registered ones, when there is none); not built: Build it for the input shape.
absl::StatusOr<std::unique_ptr<Module>> LayerFromConfig(const LayerConfig& config);

// The config of MaxPool and AvgPool: window, strides and padding.
LayerConfig PoolConfig(const char* class_name, const ops::Pool2DOptions& options);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_LAYER_CONFIG_H_
