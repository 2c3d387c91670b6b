// The transfer-learning flow of TensorFlow's image-classification guide, from a base trained
// elsewhere and imported from ONNX (PyTorch's torch.onnx.export, tf2onnx, a model zoo):
//   1. import the base (ResNet50(include_top=False, weights=...) in Keras);
//   2. cut it at its global average pooling, the layer named POOL (default "avgpool", PyTorch's
//      name in torchvision's ResNets);
//   3. freeze it and train the guide's head on it (Dense(256, relu), Dropout(0.5), Dense(classes))
//      on ImageDatasetFromDirectory photos with Keras' augmentation layers;
//   4. unfreeze it and fine-tune everything with Adam(1e-5);
//   5. save, load, export to ONNX and predict.
// It checks what the guide promises: the frozen variables do not change while the head learns,
// and the loss falls in both phases.
//
//   transfer_learning BASE.onnx [TREE [POOL]]
// Without TREE it writes a small synthetic tree of JPEGs (3 classes of stripes and checks) to a
// temporary folder, as CI runs it with tests/onnx/make_models.py's small base.
#include <sluice/sluice.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "synthetic_folders.h"

using namespace sluice;                    // NOLINT: an example
namespace layers = sluice::train::layers;  // keras.layers
namespace fs = std::filesystem;

// The loss over `data` in inference mode (no dropout, no augmentation): a measure of the fit
// that dropout's noise does not blur.
absl::StatusOr<double> Loss(train::fit::Trainer& trainer, const Dataset& data) {
  SLUICE_ASSIGN_OR_RETURN(train::callbacks::Logs logs, trainer.Evaluate(data));
  return logs.at("loss");
}

absl::Status Run(const std::string& onnx, std::string tree, const std::string& pool) {
  std::string temporary;
  if (tree.empty()) {
    temporary =
        (fs::temp_directory_path() / ("transfer_learning_" + std::to_string(getpid()))).string();
    tree = temporary + "/tree";
    SLUICE_RETURN_IF_ERROR(
        examples::WriteTree(tree, {{"horizontal", 0}, {"vertical", 1}, {"checks", 2}}));
  }
  SLUICE_ASSIGN_OR_RETURN(examples::Split data, examples::Load(tree));  // 32x32 RGB in [0, 1]

  // 1-2. The imported base, cut at its pooling: it shares the imported layers.
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<layers::Model> imported,
                          train::importing::ImportOnnx(onnx, {.height = 32, .width = 32}));
  SLUICE_ASSIGN_OR_RETURN(layers::SymbolicTensor features, imported->LayerOutput(pool));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<layers::Model> base,
                          layers::Model::Make(imported->inputs(), {features}, "base"));
  std::printf("imported %s: %zu layers, cut at '%s' (%lld features)\n", onnx.c_str(),
              imported->Children().size(), pool.c_str(),
              static_cast<long long>(features.shape().dim(1)));

  // 3. The guide's head on the frozen base.
  layers::SymbolicTensor x =
      layers::Apply(layers::Dense(256, layers::Activation::kRelu, {.seed = 1}), features);
  x = layers::Apply(layers::Dropout(0.5f, 2), x);
  x = layers::Apply(layers::Dense(data.classes, layers::DenseOptions{.seed = 3}), x, "logits");
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<layers::Model> model,
                          layers::Model::Make(imported->inputs(), {x}, "classifier"));
  base->set_trainable(false);
  std::vector<Tensor> before;
  for (train::autodiff::Variable* v : base->Variables()) before.push_back(v->value().Clone());
  train::optimizers::Adam head_adam(train::optimizers::AdamOptions{.learning_rate = 1e-3f});
  train::fit::Trainer head_trainer(*model, head_adam);
  SLUICE_ASSIGN_OR_RETURN(const double start, Loss(head_trainer, data.training));
  SLUICE_RETURN_IF_ERROR(
      head_trainer.Fit(data.training, {.epochs = 10, .seed = 7, .verbose = 0}).status());
  SLUICE_ASSIGN_OR_RETURN(const double headed, Loss(head_trainer, data.training));
  std::vector<train::autodiff::Variable*> frozen = base->Variables();
  for (size_t i = 0; i < frozen.size(); ++i) {
    if (!frozen[i]->value().Equals(before[i])) {
      return absl::InternalError(absl::StrCat("the frozen ", frozen[i]->name(), " changed"));
    }
  }
  std::printf("head on the frozen base: loss %.4f -> %.4f; the base's %zu variables unchanged\n",
              start, headed, frozen.size());

  // 4. Everything fine-tuned, slowly.
  base->set_trainable(true);
  train::optimizers::Adam tune_adam(train::optimizers::AdamOptions{.learning_rate = 1e-5f});
  train::fit::Trainer tune_trainer(*model, tune_adam);
  SLUICE_RETURN_IF_ERROR(
      tune_trainer.Fit(data.training, {.epochs = 5, .seed = 8, .verbose = 0}).status());
  SLUICE_ASSIGN_OR_RETURN(const double tuned, Loss(tune_trainer, data.training));
  SLUICE_ASSIGN_OR_RETURN(train::callbacks::Logs eval, tune_trainer.Evaluate(data.validation));
  std::printf("fine-tuned with Adam(1e-5): loss %.4f -> %.4f, validation accuracy %.3f\n", headed,
              tuned, eval.at("accuracy"));

  // 5. Save, load without this code, export, predict.
  const std::string saved = (temporary.empty() ? fs::temp_directory_path().string() : temporary) +
                            "/transfer_model_" + std::to_string(getpid());
  SLUICE_RETURN_IF_ERROR(
      train::fit::SaveModel(*model, Shape{1, 32, 32, 3}, saved, {.class_names = data.class_names}));
  SLUICE_ASSIGN_OR_RETURN(train::fit::LoadedModel loaded, train::fit::LoadModel(saved));
  SLUICE_RETURN_IF_ERROR(
      train::exporting::ExportOnnx(*loaded.model, loaded.input_shape, saved + "/model.onnx"));
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> batch, data.validation.MakeIterator()->GetNext());
  if (!batch) return absl::InternalError("no validation batch");
  SLUICE_ASSIGN_OR_RETURN(Tensor logits, loaded.model->Forward((*batch)[0], false));
  SLUICE_ASSIGN_OR_RETURN(Tensor ours, model->Forward((*batch)[0], false));
  std::printf("saved, loaded and exported to %s: %s predictions for %lld images\n", saved.c_str(),
              logits.Equals(ours) ? "the same" : "DIFFERENT",
              static_cast<long long>(logits.dim(0)));
  fs::remove_all(saved);
  if (!temporary.empty()) fs::remove_all(temporary);
  if (!logits.Equals(ours)) return absl::InternalError("the loaded model predicts differently");
  if (!(headed < start) || !(tuned < headed)) {
    return absl::InternalError("the loss did not fall in both phases");
  }
  return absl::OkStatus();
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s BASE.onnx [TREE [POOL]]\n", argv[0]);
    return 2;
  }
  absl::Status s = Run(argv[1], argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "avgpool");
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
