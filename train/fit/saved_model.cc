#include "train/fit/saved_model.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/os_error.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "io/atomic_file.h"
#include "io/crc32c.h"
#include "io/deterministic_proto.h"
#include "io/read_file.h"
#include "train/autodiff/variable.h"
#include "train/fit/training_checkpoint.h"
#include "train/layers/layer_config.h"
#include "train/layers/parameter_limit.h"
#include "train/proto/saved_model.pb.h"

namespace sluice::train::fit {
namespace {

constexpr char kFormat[] = "sluice.SavedModel";
constexpr int kSavedModelVersion = 1;
// Containers nest; a corrupt config must not recurse without end.
constexpr int kMaxDepth = 64;
// model.pb holds layer configs, a few KB; a file far larger is not one (nothing read from a file
// is trusted to size an allocation).
constexpr uint64_t kMaxModelFileBytes = uint64_t{256} << 20;

std::string ModelPath(const std::string& dir) { return dir + "/model.pb"; }
std::string WeightsPath(const std::string& dir) { return dir + "/weights.ckpt"; }

void ToProto(const layers::LayerConfig& config, proto::LayerConfigProto* out) {
  out->set_class_name(config.class_name);
  for (const auto& [k, v] : config.ints) (*out->mutable_ints())[k] = v;
  for (const auto& [k, v] : config.floats) (*out->mutable_floats())[k] = v;
  for (const auto& [k, v] : config.strings) (*out->mutable_strings())[k] = v;
  for (const layers::LayerConfig& layer : config.layers) ToProto(layer, out->add_layers());
}

absl::StatusOr<layers::LayerConfig> FromProto(const proto::LayerConfigProto& p, int depth,
                                              const std::string& path) {
  if (depth > kMaxDepth) {
    return absl::DataLossError(
        absl::StrCat(path, ": layers nested more than ", kMaxDepth, " deep"));
  }
  layers::LayerConfig config{.class_name = p.class_name()};
  config.ints.insert(p.ints().begin(), p.ints().end());
  config.floats.insert(p.floats().begin(), p.floats().end());
  config.strings.insert(p.strings().begin(), p.strings().end());
  for (const proto::LayerConfigProto& layer : p.layers()) {
    SLUICE_ASSIGN_OR_RETURN(layers::LayerConfig child, FromProto(layer, depth + 1, path));
    config.layers.push_back(std::move(child));
  }
  return config;
}

// The model.pb of `dir`, checked: its format, version and the architecture's CRC.
absl::StatusOr<proto::SavedModelProto> ReadSavedModel(const std::string& dir,
                                                      const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path, kMaxModelFileBytes);
  if (absl::IsNotFound(bytes.status())) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open; ", dir,
                     " is not a saved model (the folder that `sluice train --save`, `sluice "
                     "import --out` or fit::SaveModel writes)"));
  }
  if (!bytes.ok()) return bytes.status();
  proto::SavedModelProto saved;
  if (!saved.ParseFromString(*bytes) || saved.format() != kFormat) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a sluice saved model (expected format \"", kFormat, "\")"));
  }
  if (saved.version() != kSavedModelVersion) {
    return absl::DataLossError(absl::StrCat(path, ": saved model version ", saved.version(),
                                            "; this build reads version ", kSavedModelVersion));
  }
  if (MaskCrc32c(Crc32c(saved.config())) != saved.config_crc32c()) {
    return absl::DataLossError(absl::StrCat(path, ": the architecture's CRC does not match"));
  }
  return saved;
}

// The layer at `prefix` (its variables' names' prefix), for errors: "layer 2/0 (Dense)".
std::string LayerName(const std::string& prefix, const std::string& class_name) {
  if (prefix.empty()) return absl::StrCat("the model (", class_name, ")");
  return absl::StrCat("layer ", prefix.substr(0, prefix.size() - 1), " (", class_name, ")");
}

// The input and every sized layer's output for one example, against the limit: LoadModel's Build
// runs the model once on zeros.
absl::Status CheckActivations(const layers::LayerSize& size, const std::string& outer,
                              const std::string& path, int64_t limit) {
  const std::string prefix = outer + size.prefix;
  for (const layers::LayerSize& layer : size.layers) {
    SLUICE_RETURN_IF_ERROR(CheckActivations(layer, prefix, path, limit));
  }
  const int64_t elements = layers::SaturatingProduct(size.output_shape.dims());
  if (!size.known || elements <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      path, ": ", LayerName(prefix, size.class_name), " outputs ", size.output_shape.DebugString(),
      " for one example, over LoadModelOptions::max_activation_elements (", limit, ")"));
}

// Elements of the saved variables whose names start with `prefix`.
int64_t ElementsUnder(const std::map<std::string, int64_t>& saved, const std::string& prefix) {
  int64_t elements = 0;
  for (auto it = saved.lower_bound(prefix);
       it != saved.end() && absl::StartsWith(it->first, prefix); ++it) {
    elements = layers::SaturatingAdd(elements, it->second);
  }
  return elements;
}

// Each sized layer's variables against what the weights hold under its prefix, the innermost
// layers first (so that a mismatch names the layer, not its container); a container's own
// count then catches weights that none of its layers takes.
absl::Status CheckAgainstWeights(const layers::LayerSize& size, const std::string& outer,
                                 const std::map<std::string, int64_t>& saved,
                                 const std::string& path, const std::string& weights_path) {
  const std::string prefix = outer + size.prefix;
  for (const layers::LayerSize& layer : size.layers) {
    SLUICE_RETURN_IF_ERROR(CheckAgainstWeights(layer, prefix, saved, path, weights_path));
  }
  if (!size.known) return absl::OkStatus();
  const int64_t held = ElementsUnder(saved, prefix);
  if (held == size.parameters) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(path, ": ", LayerName(prefix, size.class_name), " has ",
                                          size.parameters, " variable elements by its config, but ",
                                          weights_path, " holds ", held,
                                          " for it (do the files belong together?)"));
}

}  // namespace

absl::Status SaveModel(layers::Module& model, const Shape& input_shape, const std::string& dir,
                       const SaveModelOptions& options) {
  if (!model.built()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": the model is not built: call Build(input_shape) (or train it) first"));
  }
  // LoadModel builds the model for `input_shape`: one that does not fit the variables (a Dense
  // built for 8 features saved as [1, 5]) would be saved, and refused on loading as weights that
  // do not belong to the config.
  if (absl::Status fits = layers::CallOnZeros(model, input_shape, model.device()); !fits.ok()) {
    if (fits.code() != absl::StatusCode::kInvalidArgument) {  // out of memory, a device error
      return WithContext(fits, absl::StrCat(dir, ": checking the input shape: "));
    }
    return absl::InvalidArgumentError(absl::StrCat(dir, ": the input shape ",
                                                   input_shape.DebugString(),
                                                   " does not fit the model: ", fits.message()));
  }
  SLUICE_ASSIGN_OR_RETURN(layers::LayerConfig config, model.GetConfig());
  proto::LayerConfigProto config_proto;
  ToProto(config, &config_proto);
  proto::SavedModelProto saved;
  saved.set_format(kFormat);
  saved.set_version(kSavedModelVersion);
  for (int i = 0; i < input_shape.rank(); ++i) saved.add_input_shape(input_shape.dim(i));
  saved.set_config(SerializeDeterministically(config_proto));
  saved.set_config_crc32c(MaskCrc32c(Crc32c(saved.config())));
  for (const std::string& name : options.class_names) saved.add_class_names(name);

  TrainingCheckpoint weights;
  weights.weights_only = true;
  // Written below, before anything changes them: host values are shared, not copied.
  constexpr autodiff::HostValues kShare = autodiff::HostValues::kShare;
  SLUICE_ASSIGN_OR_RETURN(weights.variables,
                          autodiff::SnapshotVariables(model.Variables(), kShare));
  weights.frozen_variables = autodiff::FrozenNames(model.Variables());
  if (options.optimizer != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(weights.optimizer,
                            options.optimizer->SaveState(model.TrainableVariables(), kShare));
    saved.set_has_optimizer(true);
  }

  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return OsError(error.value(), dir, ": cannot create");
  }
  // The weights first: a model.pb always has weights beside it (if perhaps newer ones, which
  // LoadModel then refuses by name and shape when they do not fit).
  SLUICE_RETURN_IF_ERROR(WriteCheckpoint(WeightsPath(dir), weights));
  return WriteFileAtomically(ModelPath(dir), SerializeDeterministically(saved));
}

absl::StatusOr<LoadedModel> LoadModel(const std::string& dir, const LoadModelOptions& options) {
  const std::string path = ModelPath(dir);
  SLUICE_ASSIGN_OR_RETURN(const proto::SavedModelProto saved, ReadSavedModel(dir, path));
  proto::LayerConfigProto config_proto;
  if (!config_proto.ParseFromString(saved.config())) {
    return absl::DataLossError(absl::StrCat(path, ": the architecture does not parse"));
  }
  SLUICE_ASSIGN_OR_RETURN(layers::LayerConfig config, FromProto(config_proto, 0, path));
  std::vector<int64_t> dims(saved.input_shape().begin(), saved.input_shape().end());
  SLUICE_ASSIGN_OR_RETURN(Shape input_shape, Shape::FromUntrustedDims(dims));
  if (input_shape.rank() < 1) {
    return absl::DataLossError(absl::StrCat(path, ": no input shape"));
  }
  // The model is built for one example of the saved shape.
  std::vector<int64_t> one = dims;
  one[0] = 1;
  if (layers::SaturatingProduct(one) > options.max_activation_elements) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": the input ", input_shape.DebugString(),
                     " is over LoadModelOptions::max_activation_elements (",
                     options.max_activation_elements, ") for one example"));
  }
  // The architecture's size from its config alone, before anything is read or made: a crafted
  // model.pb (a Dense of 2^40 units) must not allocate before its weights are checked.
  absl::StatusOr<layers::LayerSize> size = layers::LayerSizeFromConfig(config, Shape(one));
  if (!size.ok()) {
    return WithContext(size.status(),
                       absl::StrCat(path, ": sizing for input ", input_shape.DebugString(), ": "));
  }
  if (size->parameters > options.max_parameters) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": the architecture has ", size->parameters, size->known ? "" : " or more",
        " variable elements, over LoadModelOptions::max_parameters (", options.max_parameters,
        ")"));
  }
  SLUICE_RETURN_IF_ERROR(CheckActivations(*size, "", path, options.max_activation_elements));
  const std::string weights_path = WeightsPath(dir);
  SLUICE_ASSIGN_OR_RETURN(TrainingCheckpoint weights, ReadCheckpoint(weights_path));
  std::map<std::string, int64_t> saved_elements;  // by variable name
  int64_t total_saved = 0;
  for (const auto& [name, value] : weights.variables) {
    int64_t& elements = saved_elements[name];
    elements = layers::SaturatingAdd(elements, value.num_elements());
    total_saved = layers::SaturatingAdd(total_saved, value.num_elements());
  }
  SLUICE_RETURN_IF_ERROR(CheckAgainstWeights(*size, "", saved_elements, path, weights_path));
  // What the sizes did not cover (a user's layer without a size function) may create only as
  // many variable elements as the weights hold.
  layers::ParameterLimit limit(total_saved);
  absl::StatusOr<std::unique_ptr<layers::Module>> model = layers::LayerFromConfig(config);
  if (!model.ok()) {
    return WithContext(model.status(), absl::StrCat(path, ": "));
  }
  absl::Status built = (*model)->Build(Shape(one));
  if (!built.ok()) {
    return WithContext(
        built, absl::StrCat(path, ": building for input ", input_shape.DebugString(), ": "));
  }
  SLUICE_RETURN_IF_ERROR(
      autodiff::AssignVariables(weights.variables, (*model)->Variables(), weights_path));
  autodiff::SetFrozen((*model)->Variables(), weights.frozen_variables);
  LoadedModel loaded{.model = *std::move(model),
                     .input_shape = std::move(input_shape),
                     .class_names = {saved.class_names().begin(), saved.class_names().end()}};
  if (saved.has_optimizer()) loaded.optimizer_state = std::move(weights.optimizer);
  return loaded;
}

}  // namespace sluice::train::fit
