// sluice's side of bench/optimizer_rules_vs_pytorch.py: one optimizer run over given gradients,
// writing the weights after every step. Files are raw little-endian float32:
//   optimizer_trajectories --optimizer rmsprop|adagrad|adadelta|adamax|nadam
//       [--lr X] [--rho X] [--momentum X] [--centered 0|1] [--epsilon X]
//       [--initial_accumulator_value X] [--beta_1 X] [--beta_2 X]
//       --weights W0 --gradients G --steps S --out OUT
// W0 holds the n initial weights, G the S x n gradients, and OUT gets the S x n weights. An
// option left out keeps Keras' default.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "core/tensor.h"
#include "train/autodiff/variable.h"
#include "train/optimizers/adadelta.h"
#include "train/optimizers/adagrad.h"
#include "train/optimizers/adamax.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/rmsprop.h"

namespace sluice {
namespace {

using train::optimizers::Optimizer;

std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

int Fail(const std::string& message) {
  std::cerr << "optimizer_trajectories: " << message << "\n";
  return 2;
}

int Run(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key.rfind("--", 0) != 0) return Fail("expected --name value pairs, got " + key);
    args[key.substr(2)] = argv[i + 1];
  }
  auto number = [&](const std::string& name, float fallback) {
    auto it = args.find(name);
    float value = fallback;
    if (it != args.end() && !absl::SimpleAtof(it->second, &value)) {
      std::cerr << "optimizer_trajectories: --" << name << " is not a number\n";
      std::exit(2);
    }
    args.erase(name);
    return value;
  };
  const std::string name = args["optimizer"];
  args.erase("optimizer");
  const std::string weights_path = args["weights"], gradients_path = args["gradients"],
                    out_path = args["out"];
  args.erase("weights");
  args.erase("gradients");
  args.erase("out");
  const int steps = static_cast<int>(number("steps", 0));
  std::unique_ptr<Optimizer> optimizer;
  namespace o = train::optimizers;
  if (name == "rmsprop") {
    const o::RmspropOptions d;
    optimizer = std::make_unique<o::Rmsprop>(
        o::RmspropOptions{.learning_rate = number("lr", d.learning_rate),
                          .rho = number("rho", d.rho),
                          .momentum = number("momentum", d.momentum),
                          .epsilon = number("epsilon", d.epsilon),
                          .centered = number("centered", 0) != 0});
  } else if (name == "adagrad") {
    const o::AdagradOptions d;
    optimizer = std::make_unique<o::Adagrad>(
        o::AdagradOptions{.learning_rate = number("lr", d.learning_rate),
                          .initial_accumulator_value =
                              number("initial_accumulator_value", d.initial_accumulator_value),
                          .epsilon = number("epsilon", d.epsilon)});
  } else if (name == "adadelta") {
    const o::AdadeltaOptions d;
    optimizer = std::make_unique<o::Adadelta>(
        o::AdadeltaOptions{.learning_rate = number("lr", d.learning_rate),
                           .rho = number("rho", d.rho),
                           .epsilon = number("epsilon", d.epsilon)});
  } else if (name == "adamax" || name == "nadam") {
    const o::AdamaxOptions d;
    const float lr = number("lr", d.learning_rate), beta_1 = number("beta_1", d.beta_1),
                beta_2 = number("beta_2", d.beta_2), epsilon = number("epsilon", d.epsilon);
    if (name == "adamax") {
      optimizer = std::make_unique<o::Adamax>(o::AdamaxOptions{
          .learning_rate = lr, .beta_1 = beta_1, .beta_2 = beta_2, .epsilon = epsilon});
    } else {
      optimizer = std::make_unique<o::Nadam>(o::NadamOptions{
          .learning_rate = lr, .beta_1 = beta_1, .beta_2 = beta_2, .epsilon = epsilon});
    }
  } else {
    return Fail("--optimizer takes rmsprop, adagrad, adadelta, adamax or nadam, not '" + name +
                "'");
  }
  if (!args.empty()) return Fail("--" + args.begin()->first + " does not apply to " + name);

  const std::vector<float> w0 = ReadFloats(weights_path);
  const std::vector<float> grads = ReadFloats(gradients_path);
  const auto n = static_cast<int64_t>(w0.size());
  if (n == 0 || steps <= 0 || grads.size() != static_cast<size_t>(steps * n)) {
    return Fail("want n > 0 weights and steps x n gradients");
  }
  train::autodiff::Variable w(Tensor::FromVector(w0), "w");
  std::vector<float> out;
  out.reserve(grads.size());
  for (int t = 0; t < steps; ++t) {
    std::vector<float> g(grads.begin() + t * n, grads.begin() + (t + 1) * n);
    absl::Status status = optimizer->Apply({Tensor::FromVector(g)}, {&w});
    if (!status.ok()) return Fail(status.ToString());
    const float* p = w.value().data<float>();
    out.insert(out.end(), p, p + n);
  }
  std::ofstream file(out_path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(out.data()),
             static_cast<std::streamsize>(out.size() * sizeof(float)));
  return file ? 0 : Fail("cannot write " + out_path);
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Run(argc, argv); }
