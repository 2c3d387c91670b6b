// Trains the cnn of TensorFlow's layers tutorial on Fashion-MNIST, fed by a sluice pipeline:
// the C++ version of `sluice train --model cnn`.
//
//   sluice convert fashion-mnist --out DATA
//   train_fashion_mnist DATA [EPOCHS] [LIMIT]
#include <sluice/sluice.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR [EPOCHS] [TRAIN_LIMIT]\n", argv[0]);
    return 2;
  }
  const std::string data = argv[1];
  const int64_t epochs = argc > 2 ? std::atoll(argv[2]) : 1;
  const int64_t limit = argc > 3 ? std::atoll(argv[3]) : -1;
  using namespace sluice;

  // Records -> shuffle -> decode JPEG to [28, 28, 1] floats in [0, 1] -> batch 64 -> prefetch.
  absl::StatusOr<Dataset> train_data = train::data::MakeImageDataset(
      {.files = data + "/train-*.tfrecord", .shuffle_buffer = 10000, .limit = limit, .seed = 1});
  absl::StatusOr<Dataset> test_data =
      train::data::MakeImageDataset({.files = data + "/test-*.tfrecord", .batch_size = 256});
  if (!train_data.ok() || !test_data.ok()) {
    std::fprintf(stderr, "%s\n",
                 train_data.ok() ? test_data.status().ToString().c_str()
                                 : train_data.status().ToString().c_str());
    return 1;
  }

  absl::StatusOr<std::unique_ptr<train::layers::Module>> model =
      train::models::MakeModel("cnn", {}, /*seed=*/1);
  train::optimizers::Adam optimizer;  // Keras defaults: learning rate 0.001
  train::fit::Trainer trainer(**model, optimizer);
  train::callbacks::TensorBoard tensorboard({.log_dir = "logs"});

  absl::StatusOr<train::fit::History> history =
      trainer.Fit(*train_data, {.epochs = epochs, .callbacks = {&tensorboard}});
  if (!history.ok()) {
    std::fprintf(stderr, "training failed: %s\n", history.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<train::callbacks::Logs> test = trainer.Evaluate(*test_data);
  if (!test.ok()) {
    std::fprintf(stderr, "evaluation failed: %s\n", test.status().ToString().c_str());
    return 1;
  }
  std::printf("test accuracy %.4f, loss %.4f; last epoch %.0f images/s\n", test->at("accuracy"),
              test->at("loss"), history->at("images_per_second").back());
  return 0;
}
