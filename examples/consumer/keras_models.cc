// Building and compiling models as in Keras, with the installed package: a Sequential whose
// layers learn their input sizes, Summary, compile(loss, metrics)/fit/evaluate, the seeds' model
// with kernel_regularizer and BatchNormalization, fine-tuning a frozen base, and a custom layer
// with a Build hook. Runs in a few seconds on random data (CI runs it).
#include <sluice/sluice.h>

#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace sluice;                    // NOLINT: an example
namespace layers = sluice::train::layers;  // keras.layers
namespace losses = sluice::train::losses;  // keras.losses

// 512 points of 8 features in 3 separable classes: {x float32 [512, 8], y int64 [512]}.
Dataset Blobs(int batch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> noise(-0.5f, 0.5f);
  std::vector<float> x(512 * 8);
  std::vector<int64_t> y(512);
  for (int i = 0; i < 512; ++i) {
    y[i] = i % 3;
    for (int j = 0; j < 8; ++j) x[i * 8 + j] = noise(rng) + (j == y[i] ? 2.0f : 0.0f);
  }
  return Dataset::FromTensorSlices({*Tensor::FromVector(x, Shape{512, 8}), Tensor::FromVector(y)})
      .Batch(batch);
}

// A custom layer: y = x w, its kernel made when Build learns the input size (Keras' build()).
class MyDense : public layers::Module {
 public:
  explicit MyDense(int64_t units) : units_(units) {}
  std::string name() const override { return "my_dense"; }
  bool built() override { return kernel_.has_value(); }
  absl::Status Build(const Shape& input_shape) override {
    if (kernel_) return absl::OkStatus();  // variables are created once
    kernel_.emplace(layers::Initialize(layers::Initializer::kGlorotUniform,
                                       Shape{input_shape.dim(1), units_}, /*seed=*/3),
                    "my_dense/kernel");
    return absl::OkStatus();
  }
  std::vector<train::autodiff::Variable*> Variables() override {
    if (!kernel_) return {};
    return {&*kernel_};
  }
  absl::StatusOr<Tensor> Forward(const Tensor& x, bool training) override {
    SLUICE_RETURN_IF_ERROR(Build(x.shape()));
    return train::ops::MatMul(x, kernel_->value());
  }

 private:
  int64_t units_;
  std::optional<train::autodiff::Variable> kernel_;
};

absl::Status Run() {
  // keras.Sequential([Dense(32, activation='relu'), Dense(3)]): input sizes come from the data.
  layers::Sequential model{layers::Dense(32, layers::Activation::kRelu, {.seed = 1}),
                           layers::Dense(3, layers::Activation::kLinear, {.seed = 2})};
  SLUICE_RETURN_IF_ERROR(model.Build(Shape{1, 8}));
  std::printf("%s", layers::Summary(model).c_str());

  // model.compile(optimizer='adam', loss=SparseCategoricalCrossentropy(from_logits=True),
  //               metrics=['accuracy']); model.fit(...); model.evaluate(...)
  train::optimizers::Adam adam(train::optimizers::AdamOptions{.learning_rate = 0.01f});
  train::fit::Trainer trainer(
      model, adam,
      {.loss = std::make_shared<losses::SparseCategoricalCrossentropy>(
           losses::SparseCategoricalCrossentropyOptions{.from_logits = true}),
       .metrics = {{"accuracy"}}});
  SLUICE_ASSIGN_OR_RETURN(train::fit::History h,
                          trainer.Fit(Blobs(32), {.epochs = 3, .verbose = 0}));
  SLUICE_ASSIGN_OR_RETURN(train::callbacks::Logs eval, trainer.Evaluate(Blobs(128)));
  std::printf("sequential: loss %.4f, accuracy %.3f\n", eval.at("loss"), eval.at("accuracy"));

  // The seeds' model: Dense(64, kernel_regularizer=l2(0.02)), BatchNormalization, Dropout.
  layers::Sequential regularized{
      layers::Dense(64, layers::Activation::kRelu,
                    {.seed = 4, .kernel_regularizer = layers::Regularizer::L2(0.02f)}),
      layers::BatchNorm(), layers::Dropout(0.2f, /*seed=*/5), layers::Dense(3)};
  train::optimizers::Adam adam2(train::optimizers::AdamOptions{.learning_rate = 0.01f});
  train::fit::Trainer regularized_trainer(regularized, adam2);
  SLUICE_ASSIGN_OR_RETURN(h, regularized_trainer.Fit(Blobs(32), {.epochs = 3, .verbose = 0}));
  std::printf("regularized: loss %.4f (with the l2 penalty), accuracy %.3f\n", h.at("loss").back(),
              h.at("accuracy").back());

  // Fine-tuning (the seeds' section 4.1): train a new head on a frozen base, then unfreeze the
  // base and go on at a lower learning rate.
  layers::Module& base = model.module(0);
  base.set_trainable(false);  // base_model.trainable = False
  SLUICE_ASSIGN_OR_RETURN(h, trainer.Fit(Blobs(32), {.epochs = 1, .verbose = 0}));
  base.set_trainable(true);
  adam.set_learning_rate(0.001f);
  SLUICE_ASSIGN_OR_RETURN(h, trainer.Fit(Blobs(32), {.epochs = 2, .verbose = 0}));
  std::printf("fine-tuned: accuracy %.3f\n", h.at("accuracy").back());

  // Custom layers in a Sequential: their variables are named "0/my_dense/kernel", ...
  layers::Sequential custom{MyDense(16), layers::ReLU(), MyDense(3)};
  train::optimizers::Adam adam3(train::optimizers::AdamOptions{.learning_rate = 0.01f});
  train::fit::Trainer custom_trainer(custom, adam3);
  SLUICE_ASSIGN_OR_RETURN(h, custom_trainer.Fit(Blobs(32), {.epochs = 3, .verbose = 0}));
  std::printf("custom layers %s, %s: accuracy %.3f\n", custom.Variables()[0]->name().c_str(),
              custom.Variables()[1]->name().c_str(), h.at("accuracy").back());
  if (h.at("accuracy").back() < 0.9) return absl::InternalError("the custom model did not learn");
  return absl::OkStatus();
}

int main() {
  absl::Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
