// The seeds' image-classification flow (section 4.1) in C++, with the installed package:
//   1. ImageDatasetFromDirectory over class folders, a training and a validation subset;
//   2. augmentation in the pipeline (RandomFlip, RandomRotation(0.1), RandomZoom(0.1)) and
//      Rescaling;
//   3. a convolutional base trained with a head on a first folder tree;
//   4. the base frozen and a new head trained for a second tree, with callbacks;
//   5. the base unfrozen and everything fine-tuned at a lower learning rate.
//   6. the model saved to a directory and loaded without this program's objects (its own layer
//      registered), predicting the same, and exported as ONNX for other runtimes.
//
//   image_folders [TREE_A TREE_B]
// Without arguments it writes two small synthetic trees of JPEGs to a temporary folder (CI runs it
// so, in a few seconds): tree A has 3 classes (horizontal stripes, vertical stripes, checks), tree
// B has 2 (fine and coarse checks).
#include <sluice/sluice.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "synthetic_folders.h"

using namespace sluice;                    // NOLINT: an example
namespace layers = sluice::train::layers;  // keras.layers
namespace fs = std::filesystem;
using examples::Load;
using examples::Split;
using examples::WriteTree;

// keras.Sequential([base, Dense(classes)]) over a shared base: the functional API's
// `outputs = Dense(n)(base(inputs, training=...))`, so that a second head can share the base.
// With base_inference, the base always runs as in inference (Keras' advice for fine-tuning: its
// BatchNorm layers keep the statistics they learned, even once unfrozen). A layer of one's own:
// GetConfig and a registered factory let SaveModel and LoadModel handle it.
class WithHead : public layers::Module {
 public:
  WithHead(std::shared_ptr<layers::Module> base, std::unique_ptr<layers::Module> head,
           bool base_inference)
      : base_(std::move(base)), head_(std::move(head)), base_inference_(base_inference) {}
  std::string name() const override { return "with_head"; }
  std::vector<Module*> Children() override { return {base_.get(), head_.get()}; }
  std::vector<train::autodiff::Variable*> Variables() override {
    return layers::ChildVariables(*this);
  }
  absl::StatusOr<Tensor> Forward(const Tensor& x, bool training) override {
    SLUICE_ASSIGN_OR_RETURN(Tensor features, base_->Forward(x, training && !base_inference_));
    return head_->Forward(features, training);
  }
  absl::StatusOr<layers::LayerConfig> GetConfig() override {
    SLUICE_ASSIGN_OR_RETURN(layers::LayerConfig base, base_->GetConfig());
    SLUICE_ASSIGN_OR_RETURN(layers::LayerConfig head, head_->GetConfig());
    return layers::LayerConfig{.class_name = "WithHead",
                               .ints = {{"base_inference", base_inference_}},
                               .layers = {std::move(base), std::move(head)}};
  }
  static absl::Status Register() {
    return layers::RegisterLayer(
        "WithHead",
        [](const layers::LayerConfig& c) -> absl::StatusOr<std::unique_ptr<layers::Module>> {
          if (c.layers.size() != 2) return absl::InvalidArgumentError("WithHead: 2 layers");
          SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<layers::Module> base,
                                  layers::LayerFromConfig(c.layers[0]));
          SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<layers::Module> head,
                                  layers::LayerFromConfig(c.layers[1]));
          return std::make_unique<WithHead>(std::move(base), std::move(head),
                                            c.IntOr("base_inference", 0) != 0);
        });
  }

 private:
  std::shared_ptr<layers::Module> base_;
  std::unique_ptr<layers::Module> head_;
  bool base_inference_;
};

std::unique_ptr<layers::Module> Head(int64_t classes, uint64_t seed) {
  return std::make_unique<layers::Dense>(classes, layers::Activation::kLinear,
                                         layers::DenseOptions{.seed = seed});
}

absl::StatusOr<double> FitAndEvaluate(layers::Module& model, const Split& data, float lr,
                                      int64_t epochs, const char* what) {
  train::optimizers::Adam adam(train::optimizers::AdamOptions{.learning_rate = lr});
  train::fit::Trainer trainer(model, adam);
  train::callbacks::EarlyStopping early_stopping(
      {.monitor = "val_loss", .patience = 8, .restore_best_weights = true});
  train::callbacks::ReduceLROnPlateau reduce_lr({.monitor = "val_loss", .patience = 2});
  SLUICE_ASSIGN_OR_RETURN(train::fit::History history,
                          trainer.Fit(data.training, {.epochs = epochs,
                                                      .validation_data = data.validation,
                                                      .callbacks = {&early_stopping, &reduce_lr},
                                                      .seed = 7,
                                                      .verbose = 0}));
  SLUICE_ASSIGN_OR_RETURN(train::callbacks::Logs eval, trainer.Evaluate(data.validation));
  std::printf("%s: %zu epochs, validation accuracy %.3f\n", what, history.epochs.size(),
              eval.at("accuracy"));
  return eval.at("accuracy");
}

absl::Status Run(std::string tree_a, std::string tree_b) {
  std::string temporary;
  if (tree_a.empty()) {
    temporary =
        (fs::temp_directory_path() / ("image_folders_" + std::to_string(getpid()))).string();
    tree_a = temporary + "/a";
    tree_b = temporary + "/b";
    SLUICE_RETURN_IF_ERROR(WriteTree(tree_a, {{"horizontal", 0}, {"vertical", 1}, {"checks", 2}}));
    SLUICE_RETURN_IF_ERROR(WriteTree(tree_b, {{"fine", 2}, {"coarse", 3}}));
  }
  SLUICE_ASSIGN_OR_RETURN(Split a, Load(tree_a));
  SLUICE_ASSIGN_OR_RETURN(Split b, Load(tree_b));

  // The base: two conv blocks and global average pooling. (BatchNorm's momentum is 0.9, not
  // Keras' 0.99: a few dozen steps must move the moving statistics.)
  auto base = std::make_shared<layers::Sequential>(std::initializer_list<layers::LayerEntry>{
      layers::Conv2D(16, 3, {.conv = {.padding = train::ops::Padding::kSame}, .seed = 1}),
      layers::BatchNorm({.momentum = 0.9f}), layers::ReLU(), layers::MaxPool(),
      layers::Conv2D(32, 3, {.conv = {.padding = train::ops::Padding::kSame}, .seed = 2}),
      layers::BatchNorm({.momentum = 0.9f}), layers::ReLU(), layers::GlobalAvgPool()});
  WithHead model_a(base, Head(a.classes, 3), /*base_inference=*/false);
  SLUICE_RETURN_IF_ERROR(model_a.Build(Shape{1, 32, 32, 3}));
  SLUICE_ASSIGN_OR_RETURN(double accuracy_a, FitAndEvaluate(model_a, a, 0.003f, 30, "tree A"));

  // A new head for tree B on the frozen base (base_model.trainable = False), then fine-tuning.
  WithHead model_b(base, Head(b.classes, 4), /*base_inference=*/true);
  SLUICE_RETURN_IF_ERROR(model_b.Build(Shape{1, 32, 32, 3}));
  base->set_trainable(false);
  SLUICE_ASSIGN_OR_RETURN(double head_only,
                          FitAndEvaluate(model_b, b, 0.01f, 10, "tree B, new head"));
  base->set_trainable(true);
  SLUICE_ASSIGN_OR_RETURN(double fine_tuned,
                          FitAndEvaluate(model_b, b, 0.001f, 10, "tree B, fine-tuned"));

  // model.save(dir), then load_model(dir) without this code's objects: the same predictions.
  const std::string saved = (temporary.empty() ? fs::temp_directory_path().string() : temporary) +
                            "/final_model_" + std::to_string(getpid());
  SLUICE_RETURN_IF_ERROR(WithHead::Register());
  SLUICE_RETURN_IF_ERROR(
      train::fit::SaveModel(model_b, Shape{1, 32, 32, 3}, saved, {.class_names = b.class_names}));
  SLUICE_ASSIGN_OR_RETURN(train::fit::LoadedModel loaded, train::fit::LoadModel(saved));
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> batch, b.validation.MakeIterator()->GetNext());
  if (!batch) return absl::InternalError("no validation batch");
  SLUICE_ASSIGN_OR_RETURN(Tensor before, model_b.Forward((*batch)[0], false));
  SLUICE_ASSIGN_OR_RETURN(Tensor after, loaded.model->Forward((*batch)[0], false));
  std::printf("saved to %s and loaded: %s predictions (classes %s, %s)\n", saved.c_str(),
              before.Equals(after) ? "the same" : "DIFFERENT", loaded.class_names[0].c_str(),
              loaded.class_names[1].c_str());
  // model.export(...): ONNX for ONNX Runtime, TensorRT or OpenVINO. WithHead runs its base then
  // its head, which the exporter is told, as it cannot see into a layer of one's own.
  const std::string onnx = saved + "/model.onnx";
  SLUICE_RETURN_IF_ERROR(train::exporting::ExportOnnx(*loaded.model, loaded.input_shape, onnx,
                                                      {.sequential_layers = {"with_head"}}));
  std::printf("exported %s (%lld bytes)\n", onnx.c_str(),
              static_cast<long long>(fs::file_size(onnx)));
  fs::remove_all(saved);
  if (!before.Equals(after)) return absl::InternalError("the loaded model predicts differently");
  if (!temporary.empty()) fs::remove_all(temporary);
  if (accuracy_a < 0.9 || head_only < 0.9 || fine_tuned < 0.9) {
    return absl::InternalError("the models did not learn the synthetic patterns");
  }
  return absl::OkStatus();
}

int main(int argc, char** argv) {
  if (argc != 1 && argc != 3) {
    std::fprintf(stderr, "usage: %s [TREE_A TREE_B]\n", argv[0]);
    return 2;
  }
  absl::Status s = Run(argc == 3 ? argv[1] : "", argc == 3 ? argv[2] : "");
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
