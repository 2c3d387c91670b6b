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
#include "core/shape.h"

namespace sluice::train::layers {

class Module;

}  // namespace sluice::train::layers

namespace sluice::train::ops {
struct Pool2DOptions;
struct Pads;
enum class Padding;
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

// What the layer a config describes will hold, known before it is made: the variable elements
// it creates for inputs of a given shape, and its output shape. LoadModel checks a saved
// architecture against its weights file with it before it makes or allocates anything. A
// container lists its layers' sizes, each under the prefix that the container gives their
// variables' names ("0/", "1/" in a Sequential), so that a mismatch can name the layer.
struct LayerSize {
  std::string class_name;
  std::string prefix;  // of its variables' names within its container's ("" at the top)
  // Variable elements, saturating at INT64_MAX. When not `known`: those of the layers before the
  // first one of unknown size only, a lower bound.
  int64_t parameters = 0;
  Shape output_shape;  // for the input shape it was sized for; meaningless when not `known`
  // False for a layer whose class was registered without a size function, and for a container
  // holding one (its layers after that one are not sized: their input is unknown).
  bool known = true;
  std::vector<LayerSize> layers;  // a container's
};

// Makes a layer from its config.
using LayerFactory = std::function<absl::StatusOr<std::unique_ptr<Module>>(const LayerConfig&)>;
// The size of a layer from its config and input shape, without making it: sets `parameters`
// and `output_shape` (LayerSizeFromConfig fills in the rest); InvalidArgument for an input the
// layer cannot take.
using LayerSizeFunction =
    std::function<absl::StatusOr<LayerSize>(const LayerConfig&, const Shape& input_shape)>;

// Registers the factory of a user's own layer class (the built-in layers are registered
// already), and optionally its size function: without one, LoadModel cannot check the layer's
// variables against the weights before making it, and the layer's Build must ReserveParameters
// (parameter_limit.h) to stay within what the weights hold. AlreadyExists when the name is
// taken. Thread-safe.
absl::Status RegisterLayer(const std::string& class_name, LayerFactory factory,
                           LayerSizeFunction size = nullptr);

// The layer `config` describes, from the factory registered for its class_name (NotFound, naming
// the registered ones, when there is none); not built: Build it for the input shape.
absl::StatusOr<std::unique_ptr<Module>> LayerFromConfig(const LayerConfig& config);

// The size of the layer `config` describes for inputs of `input_shape` (batch dimension
// included), from the config alone: nothing is made or allocated, and an untrusted config cannot
// overflow it. A class registered without a size function gives `known` false. NotFound as
// LayerFromConfig for an unregistered class; InvalidArgument for a config the factory would
// refuse or an input shape the layer cannot take.
absl::StatusOr<LayerSize> LayerSizeFromConfig(const LayerConfig& config, const Shape& input_shape);

// The config of MaxPool and AvgPool: window, strides and padding.
LayerConfig PoolConfig(const char* class_name, const ops::Pool2DOptions& options);

// A windowed layer's padding in its config: "padding" by name, and with "explicit" the ints
// pad_top, pad_bottom, pad_left and pad_right. ReadPadding is InvalidArgument for a missing or
// unknown one.
void AddPaddingConfig(ops::Padding padding, const ops::Pads& pads, LayerConfig& config);
absl::Status ReadPadding(const LayerConfig& config, ops::Padding& padding, ops::Pads& pads);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_LAYER_CONFIG_H_
