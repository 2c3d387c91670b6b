// libFuzzer target: LoadModel (train/fit/saved_model.h) over a fuzzed saved model. The first
// byte is the mode:
//  - bit 0 set: the harness gives model.pb a valid architecture CRC (when it parses), so the
//    fuzzer reaches the layer configs behind it;
//  - bit 1 clear: the rest is model.pb, beside the weights of a real model of the zoo (mlp, cnn
//    or resnet-20 for 8x8 grayscale images, by the byte's higher bits);
//  - bit 1 set: the rest is model.pb and the weights file's payload, split at fuzz_util.h's
//    separator; the harness frames the payload as a checkpoint (magic, length, CRC).
// LoadModel runs with limits that fit the fuzzer's memory. When it loads, the model holds exactly
// what the weights hold, and what its config sizes it at (layers::LayerSizeFromConfig) is what
// it built and what one forward pass outputs.
//
// With SLUICE_FUZZ_SEEDS=DIR set, the target first writes seed inputs into DIR: the model.pb of
// each zoo model (both CRC modes), and small complete saved models (model.pb and weights).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"
#include "io/crc32c.h"
#include "tests/fuzz/fuzz_util.h"
#include "train/fit/saved_model.h"
#include "train/fit/training_checkpoint.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/layer_config.h"
#include "train/layers/max_pool.h"
#include "train/layers/relu.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/models/model_zoo.h"
#include "train/proto/saved_model.pb.h"

namespace sluice::train {
namespace {

using fuzz::Check;

constexpr char kSeparator[] = "\xff\xfe\xfd\xfc";  // fuzz_util.h's SplitPieces
const char* const kZoo[] = {"mlp", "cnn", "resnet-20"};
constexpr int kZooSize = 3;

// A 2 GB process with ASan: no model may come near it.
constexpr fit::LoadModelOptions kLimits = {.max_parameters = int64_t{1} << 22,
                                           .max_activation_elements = int64_t{1} << 20};

// Saves `model`, built for `input`, into `dir`.
void Save(layers::Module& model, const Shape& input, const std::string& dir) {
  fuzz::CheckOk(model.Build(input));
  fuzz::CheckOk(fit::SaveModel(model, input, dir));
}

// The directory of zoo model `i`, saved once per process: its weights.ckpt stays, model.pb is
// replaced by each input of mode 0.
const std::string& ZooDir(int i) {
  static const std::vector<std::string>* dirs = [] {
    auto* d = new std::vector<std::string>;
    for (const char* name : kZoo) {
      const std::string dir = fuzz::ScratchPath(absl::StrCat("zoo-", name));
      auto model = models::MakeModel(name, {.height = 8, .width = 8, .channels = 1, .classes = 3},
                                     /*seed=*/1);
      fuzz::CheckOk(model.status());
      Save(**model, Shape{1, 8, 8, 1}, dir);
      d->push_back(dir);
    }
    return d;
  }();
  return (*dirs)[i];
}

int64_t Elements(const std::vector<autodiff::Variable*>& variables) {
  int64_t n = 0;
  for (const autodiff::Variable* v : variables) n += v->value().num_elements();
  return n;
}

// The invariants of a model that loaded from `dir`.
void CheckLoaded(fit::LoadedModel& loaded, const std::string& dir) {
  layers::Module& model = *loaded.model;
  std::vector<int64_t> one(loaded.input_shape.dims().begin(), loaded.input_shape.dims().end());
  one[0] = 1;
  absl::StatusOr<layers::LayerConfig> config = model.GetConfig();
  Check(config.ok());
  absl::StatusOr<layers::LayerSize> size = layers::LayerSizeFromConfig(*config, Shape(one));
  Check(size.ok() && size->known);
  Check(size->parameters == Elements(model.Variables()));
  // The weights file holds exactly those elements (LoadModel checked it against the config).
  absl::StatusOr<fit::TrainingCheckpoint> weights = fit::ReadCheckpoint(dir + "/weights.ckpt");
  Check(weights.ok());
  int64_t saved = 0;
  for (const auto& [name, value] : weights->variables) saved += value.num_elements();
  Check(saved == size->parameters);
  absl::StatusOr<Tensor> out = model.Forward(Tensor::Zeros(DType::kFloat32, Shape(one)), false);
  if (out.ok()) Check(out->shape() == size->output_shape);
}

// model.pb with its architecture's CRC made valid, when it parses as a saved model.
std::string WithValidCrc(absl::string_view bytes) {
  proto::SavedModelProto saved;
  if (!saved.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return std::string(bytes);
  }
  saved.set_config_crc32c(MaskCrc32c(Crc32c(saved.config())));
  return saved.SerializeAsString();
}

void WriteSeeds(const std::string& out) {
  for (int i = 0; i < kZooSize; ++i) {
    const std::string pb = fuzz::ReadFileOrDie(ZooDir(i) + "/model.pb");
    for (int crc : {0, 1}) {
      fuzz::WriteFileOrDie(absl::StrCat(out, "/zoo-", kZoo[i], "-", crc),
                           std::string(1, static_cast<char>((i << 2) | crc)) + pb);
    }
  }
  // Small complete models: every built-in layer with variables, and the zoo's shapes of layers.
  struct Small {
    const char* name;
    std::unique_ptr<layers::Module> model;
    Shape input;
  };
  std::vector<Small> small;
  small.push_back(
      {"mlp",
       std::make_unique<layers::Sequential>(layers::Sequential{
           layers::Flatten(), layers::Dense(4, layers::Activation::kRelu), layers::Dense(3)}),
       Shape{1, 3, 3, 1}});
  small.push_back({"cnn",
                   std::make_unique<layers::Sequential>(layers::Sequential{
                       layers::Conv2D(2, 3, {.conv = {.padding = ops::Padding::kSame}}),
                       layers::ReLU(), layers::MaxPool(), layers::Flatten(), layers::Dense(2)}),
                   Shape{1, 4, 4, 1}});
  small.push_back({"resnet",
                   std::make_unique<layers::Sequential>(layers::Sequential{
                       layers::ResidualBlock(1, 2, {.stride = 2}), layers::BatchNorm(),
                       layers::GlobalAvgPool(), layers::Dense(2)}),
                   Shape{1, 4, 4, 1}});
  for (Small& s : small) {
    const std::string dir = fuzz::ScratchPath(absl::StrCat("seed-", s.name));
    Save(*s.model, s.input, dir);
    const std::string pieces = fuzz::ReadFileOrDie(dir + "/model.pb") + kSeparator +
                               fuzz::CheckpointPayload(fuzz::ReadFileOrDie(dir + "/weights.ckpt"));
    for (int crc : {0, 1}) {
      fuzz::WriteFileOrDie(absl::StrCat(out, "/small-", s.name, "-", crc),
                           std::string(1, static_cast<char>(2 | crc)) + pieces);
    }
  }
}

}  // namespace
}  // namespace sluice::train

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // parse failures are expected by the thousand
  if (const char* dir = std::getenv("SLUICE_FUZZ_SEEDS")) sluice::train::WriteSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  using namespace sluice::train;
  return fuzz::WithMode(data, size, [](uint8_t mode, absl::string_view rest) {
    static const std::string* own = new std::string(fuzz::ScratchPath("model"));
    std::string dir;
    absl::string_view pb = rest;
    if (mode & 2) {
      const std::vector<absl::string_view> pieces = fuzz::SplitPieces(rest);
      if (pieces.size() != 2) return 0;
      dir = *own;
      (void)::mkdir(dir.c_str(), 0700);
      pb = pieces[0];
      fuzz::WriteFileOrDie(dir + "/weights.ckpt", fuzz::FrameCheckpoint(pieces[1]));
    } else {
      dir = ZooDir((mode >> 2) % kZooSize);
    }
    fuzz::WriteFileOrDie(dir + "/model.pb", mode & 1 ? WithValidCrc(pb) : std::string(pb));
    absl::StatusOr<fit::LoadedModel> loaded = fit::LoadModel(dir, kLimits);
    if (loaded.ok()) CheckLoaded(*loaded, dir);
    return 0;
  });
}
