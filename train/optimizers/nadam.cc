#include "train/optimizers/nadam.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {
namespace {
constexpr char kUProduct[] = "u_product";
}  // namespace

Nadam::Nadam(NadamOptions options)
    : Optimizer(options.learning_rate, {"momentum", "velocity"}), options_(options) {}

double Nadam::MomentumAt(int64_t step) const {
  return options_.beta_1 * (1 - 0.5 * std::pow(0.96, static_cast<double>(step)));
}

// Keras advances its u_product once per apply, before the variables' updates; so does this.
void Nadam::BeginStep(int64_t step) { u_product_ *= MomentumAt(step); }

Optimizer::StepValues Nadam::ValuesAt(int64_t step, float lr) const {
  const double u_t = MomentumAt(step);
  const double u_next = MomentumAt(step + 1);
  const double product_next = u_product_ * u_next;
  return {
      .rate = static_cast<float>(lr * u_next / (1 - product_next)),
      .decay = lr * options_.weight_decay,
      .gradient_coefficient = static_cast<float>(lr * (1 - u_t) / (1 - u_product_)),
      .v_scale = static_cast<float>(
          1 / (1 - std::pow(static_cast<double>(options_.beta_2), static_cast<double>(step)))),
  };
}

backend::UpdateRule Nadam::Rule() const {
  return {.kind = backend::UpdateKind::kNadam,
          .beta_1 = options_.beta_1,
          .beta_2 = options_.beta_2,
          .epsilon = options_.epsilon};
}

std::vector<std::pair<std::string, double>> Nadam::ScalarState() const {
  return {{kUProduct, u_product_}};
}

absl::Status Nadam::RestoreScalarState(const std::vector<std::pair<std::string, double>>& scalars,
                                       int64_t iterations) {
  std::optional<double> u_product;
  for (const auto& [name, value] : scalars) {
    if (name != kUProduct) {
      return absl::InvalidArgumentError(absl::StrCat("Nadam::RestoreState: scalar '", name,
                                                     "' is not one of Nadam's (", kUProduct, ")"));
    }
    u_product = value;
  }
  // A state of no steps (a fresh one) starts the schedule; any other must carry it: the product
  // of the momentum schedule is not the optimizer's to guess.
  if (!u_product && iterations != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Nadam::RestoreState: a state of ", iterations,
                                                   " steps without its '", kUProduct,
                                                   "' (not saved by Nadam?)"));
  }
  u_product_ = u_product.value_or(1.0);
  return absl::OkStatus();
}

Nadam::Nadam(float learning_rate, NadamOptions options)
    : Nadam(WithLearningRate(options, learning_rate)) {}

Nadam::Nadam(std::shared_ptr<const LearningRateSchedule> schedule, NadamOptions options)
    : Nadam(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
