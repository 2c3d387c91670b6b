// Training loops of your own, with the installed package: a tf.GradientTape loop, Keras'
// overridden train_step (Fit still runs callbacks, progress and checkpoints around it), the
// seeds' DQN step (compile(loss='mse') and fit on one batch of targets) and gradient
// accumulation. Runs in a few seconds on random data (CI runs it).
#include <sluice/sluice.h>

#include <cstdio>
#include <random>
#include <vector>

using namespace sluice;  // NOLINT: an example
namespace layers = sluice::train::layers;
namespace ops = sluice::train::ops;  // the functional ops: ops::Mean is the reduction

// y = 3 x0 - 2 x1 + 1 with a little noise: {x float32 [n, 2], y float32 [n, 1]}.
Element LinearData(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(n * 2), y(n);
  for (int i = 0; i < n; ++i) {
    x[2 * i] = u(rng);
    x[2 * i + 1] = u(rng);
    y[i] = 3 * x[2 * i] - 2 * x[2 * i + 1] + 1 + 0.01f * u(rng);
  }
  return {*Tensor::FromVector(x, Shape{n, 2}), *Tensor::FromVector(y, Shape{n, 1})};
}

absl::Status TapeLoop() {
  // for x, y in dataset:
  //   with tf.GradientTape() as tape: loss = loss_fn(y, model(x, training=True))
  //   grads = tape.gradient(loss, model.trainable_variables)
  //   optimizer.apply_gradients(zip(grads, model.trainable_variables))
  layers::Sequential model{layers::Dense(1, layers::Activation::kLinear, {.seed = 1})};
  train::losses::MeanSquaredError loss_fn;
  train::optimizers::Sgd optimizer(train::optimizers::SgdOptions{.learning_rate = 0.1f});
  Dataset data = Dataset::FromTensorSlices(LinearData(512, 1)).Batch(32);
  double last = 0;
  for (int epoch = 0; epoch < 20; ++epoch) {
    std::unique_ptr<Iterator> it = data.MakeIterator();
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> batch, it->GetNext());
      if (!batch) break;
      train::autodiff::Tape tape;
      SLUICE_ASSIGN_OR_RETURN(Tensor y_pred, model.Forward((*batch)[0], /*training=*/true));
      SLUICE_ASSIGN_OR_RETURN(Tensor loss, loss_fn((*batch)[1], y_pred));
      std::vector<train::autodiff::Variable*> vars = model.TrainableVariables();
      SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> grads, tape.Gradient(loss, vars));
      SLUICE_RETURN_IF_ERROR(optimizer.Apply(grads, vars));
      last = loss.scalar<float>();  // the CPU: the loss is host memory
    }
  }
  std::printf("tape loop: last batch mse %.5f\n", last);
  if (last > 0.01) return absl::InternalError("the tape loop did not converge");
  return absl::OkStatus();
}

absl::Status CustomTrainStep() {
  // class MyModel(keras.Model): def train_step(self, data): ...
  layers::Sequential model{layers::Dense(16, layers::Activation::kRelu, {.seed = 2}),
                           layers::Dense(1, layers::Activation::kLinear, {.seed = 3})};
  train::optimizers::Adam adam(train::optimizers::AdamOptions{.learning_rate = 0.02f});
  int steps = 0;
  train::fit::Trainer trainer(
      model, adam,
      {.loss = std::make_shared<train::losses::Huber>(),
       .metrics = {{"mae"}},
       .train_step = [&](train::fit::TrainStepContext& ctx) -> absl::Status {
         ++steps;
         train::autodiff::Tape tape;
         SLUICE_ASSIGN_OR_RETURN(Tensor y_pred, ctx.model().Forward(ctx.x(), true));
         SLUICE_ASSIGN_OR_RETURN(Tensor loss, ctx.ComputeLoss(y_pred));  // compiled loss
         auto vars = ctx.model().TrainableVariables();
         SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(loss, vars));
         SLUICE_RETURN_IF_ERROR(ctx.ApplyGradients(grads, vars));
         return ctx.UpdateMetrics(loss, y_pred);  // compiled metrics
       }});
  Dataset data = Dataset::FromTensorSlices(LinearData(512, 2)).Batch(32);
  SLUICE_ASSIGN_OR_RETURN(train::fit::History h, trainer.Fit(data, {.epochs = 10, .verbose = 0}));
  std::printf("custom train_step: %d steps, huber %.5f, mae %.4f\n", steps, h.at("loss").back(),
              h.at("mae").back());
  return absl::OkStatus();
}

absl::Status DqnStep() {
  // The seeds' DQN: model.compile(loss='mse', optimizer=Adam(lr)); then, per replay batch,
  // target_f = model.predict(state); target_f[action] = reward + gamma * max(Q(next_state));
  // model.fit(state, target_f, epochs=1, verbose=0).
  const int kStates = 4, kActions = 2, kBatch = 32;
  layers::Sequential q{layers::Dense(24, layers::Activation::kRelu, {.seed = 4}),
                       layers::Dense(24, layers::Activation::kRelu, {.seed = 5}),
                       layers::Dense(kActions, layers::Activation::kLinear, {.seed = 6})};
  train::optimizers::Adam adam(train::optimizers::AdamOptions{.learning_rate = 0.001f});
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<train::losses::Loss> mse,
                          train::losses::LossFromName("mse"));
  train::fit::Trainer trainer(q, adam, {.loss = std::move(mse)});
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1, 1);
  double first = 0, last = 0;
  for (int round = 0; round < 50; ++round) {
    std::vector<float> states(kBatch * kStates);
    for (float& s : states) s = u(rng);
    SLUICE_ASSIGN_OR_RETURN(Tensor state, Tensor::FromVector(states, Shape{kBatch, kStates}));
    SLUICE_ASSIGN_OR_RETURN(
        Tensor target_f, trainer.Predict(Dataset::FromTensorSlices(Element{state}).Batch(kBatch)));
    for (int i = 0; i < kBatch; ++i) {
      const float reward = states[i * kStates] > 0 ? 1.0f : 0.0f;  // a made-up environment
      target_f.data<float>()[i * kActions + (i % kActions)] = reward;
    }
    SLUICE_ASSIGN_OR_RETURN(
        train::fit::History h,
        trainer.Fit(Dataset::FromTensorSlices({state, target_f}).Batch(kBatch), {.verbose = 0}));
    (round == 0 ? first : last) = h.at("loss").back();
  }
  std::printf("dqn: mse %.4f on the first replay batch, %.4f on the last\n", first, last);
  return absl::OkStatus();
}

absl::Status GradientAccumulation() {
  // Four micro-batches of 8 per update: the gradient of one batch of 32.
  layers::Sequential model{layers::Dense(1, layers::Activation::kLinear, {.seed = 9})};
  train::optimizers::Sgd sgd(train::optimizers::SgdOptions{.learning_rate = 0.1f});
  train::fit::Trainer trainer(model, sgd,
                              {.loss = std::make_shared<train::losses::MeanSquaredError>()});
  Dataset data = Dataset::FromTensorSlices(LinearData(512, 3)).Batch(8);
  SLUICE_ASSIGN_OR_RETURN(train::fit::History h,
                          trainer.Fit(data, {.epochs = 5, .accumulation_steps = 4, .verbose = 0}));
  std::printf("accumulation: %lld optimizer steps for %lld micro-batches, mse %.5f\n",
              static_cast<long long>(sgd.iterations()), static_cast<long long>(5 * 512 / 8),
              h.at("loss").back());
  return absl::OkStatus();
}

int main() {
  for (absl::Status (*f)() : {TapeLoop, CustomTrainStep, DqnStep, GradientAccumulation}) {
    absl::Status s = f();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
