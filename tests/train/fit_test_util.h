// Shared by the Trainer and callback tests: a small separable dataset, a tiny classifier and a
// callback that records what Fit tells it.
#ifndef SLUICE_TESTS_TRAIN_FIT_TEST_UTIL_H_
#define SLUICE_TESTS_TRAIN_FIT_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataset/dataset.h"
#include "tests/train/gradient_check.h"
#include "train/callbacks/callback.h"
#include "train/fit/trainer.h"
#include "train/layers/avg_pool.h"
#include "train/layers/dense.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/max_pool.h"
#include "train/layers/relu.h"
#include "train/layers/sequential.h"
#include "train/optimizers/adadelta.h"
#include "train/optimizers/adagrad.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamax.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/rmsprop.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::testing {

inline constexpr int64_t kFeatures = 4;
inline constexpr int64_t kClasses = 3;

// n points, label i % 3, at a class centre (2 on the label's axis) plus noise in [-0.6, 0.6]
// on every axis: linearly separable. {images float32 [n, 4], labels int64 [n]}.
inline Element Blobs(int64_t n, uint32_t seed) {
  Tensor images = RandomTensor({n, kFeatures}, seed, -0.6f, 0.6f);
  std::vector<int64_t> labels(n);
  float* x = images.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    labels[i] = i % kClasses;
    x[i * kFeatures + labels[i]] += 2.0f;
  }
  return {images, Tensor::FromVector(labels)};
}

inline Dataset BlobsDataset(int64_t n, uint32_t seed, int64_t batch) {
  return Dataset::FromTensorSlices(Blobs(n, seed)).Batch(batch);
}

// 4 -> 16 (ReLU) -> 3.
// Sets every variable of `model` to `value`, standing in for an epoch of training.
inline void Fill(layers::Module& model, float value) {
  for (autodiff::Variable* v : model.Variables()) {
    for (float& x : v->mutable_value().flat<float>()) x = value;
  }
}

inline std::unique_ptr<layers::Sequential> TinyModel(uint64_t seed, int64_t hidden = 16) {
  auto model = std::make_unique<layers::Sequential>();
  model->Add(std::make_unique<layers::Dense>(kFeatures, hidden, layers::DenseOptions{.seed = seed}))
      .Add(std::make_unique<layers::ReLU>())
      .Add(std::make_unique<layers::Dense>(hidden, kClasses,
                                           layers::DenseOptions{.seed = seed + 100}));
  return model;
}

// Every optimizer, each with its options that change the update (momentum, weight decay,
// centering), by name: for tests that train with each.
using MakeOptimizer = std::function<std::unique_ptr<optimizers::Optimizer>()>;
inline std::vector<std::pair<std::string, MakeOptimizer>> EveryOptimizer() {
  return {
      {"sgd", [] { return std::make_unique<optimizers::Sgd>(); }},
      {"sgd momentum decay",
       [] {
         return std::make_unique<optimizers::Sgd>(optimizers::SgdOptions{
             .learning_rate = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f});
       }},
      {"adam", [] { return std::make_unique<optimizers::Adam>(); }},
      {"adamw", [] { return std::make_unique<optimizers::AdamW>(); }},
      {"rmsprop momentum centered decay",
       [] {
         return std::make_unique<optimizers::Rmsprop>(
             optimizers::RmspropOptions{.momentum = 0.9f, .centered = true, .weight_decay = 0.01f});
       }},
      {"rmsprop", [] { return std::make_unique<optimizers::Rmsprop>(); }},
      {"adagrad", [] { return std::make_unique<optimizers::Adagrad>(); }},
      {"adadelta", [] { return std::make_unique<optimizers::Adadelta>(1.0f); }},
      {"adamax", [] { return std::make_unique<optimizers::Adamax>(); }},
      {"nadam", [] { return std::make_unique<optimizers::Nadam>(); }},
  };
}

// Records the calls and logs; optional hooks run inside them.
class RecordingCallback : public callbacks::Callback {
 public:
  absl::Status OnTrainBegin(const callbacks::Logs& logs) override {
    events.push_back("train_begin");
    return absl::OkStatus();
  }
  absl::Status OnTrainEnd(const callbacks::Logs& logs) override {
    events.push_back("train_end");
    return absl::OkStatus();
  }
  absl::Status OnEpochBegin(int64_t epoch, const callbacks::Logs& logs) override {
    events.push_back(absl::StrCat("epoch_begin ", epoch));
    return absl::OkStatus();
  }
  absl::Status OnEpochEnd(int64_t epoch, const callbacks::Logs& logs) override {
    events.push_back(absl::StrCat("epoch_end ", epoch));
    epoch_logs.push_back(logs);
    return on_epoch_end ? on_epoch_end(epoch, logs) : absl::OkStatus();
  }
  absl::Status OnBatchEnd(int64_t batch, const callbacks::Logs& logs) override {
    events.push_back(absl::StrCat("batch ", batch));
    batch_losses.push_back(logs.at("loss"));
    batch_logs.push_back(logs);
    return on_batch_end ? on_batch_end(batch, logs) : absl::OkStatus();
  }

  std::vector<std::string> events;
  std::vector<double> batch_losses;
  std::vector<callbacks::Logs> batch_logs;
  std::vector<callbacks::Logs> epoch_logs;
  std::function<absl::Status(int64_t, const callbacks::Logs&)> on_epoch_end;
  std::function<absl::Status(int64_t, const callbacks::Logs&)> on_batch_end;
};

}  // namespace sluice::train::testing

#endif  // SLUICE_TESTS_TRAIN_FIT_TEST_UTIL_H_
