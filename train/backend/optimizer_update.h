#ifndef SLUICE_TRAIN_BACKEND_OPTIMIZER_UPDATE_H_
#define SLUICE_TRAIN_BACKEND_OPTIMIZER_UPDATE_H_

#include <array>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace sluice::train::backend {

// What Backend::OptimizerUpdate applies: the Keras rule and its constants. What changes from
// step to step is in the update's step tensor (backend.h's StepScalar).
enum class UpdateKind : int { kSgd, kAdam, kRmsprop, kAdagrad, kAdadelta, kAdamax, kNadam };
struct UpdateRule {
  UpdateKind kind = UpdateKind::kSgd;
  float momentum = 0;     // SGD and RMSprop; 0: no momentum slot
  bool nesterov = false;  // SGD
  float beta_1 = 0;       // Adam, Adamax, Nadam
  float beta_2 = 0;
  float rho = 0;          // RMSprop, Adadelta
  bool centered = false;  // RMSprop
  float epsilon = 0;      // all but SGD
};

// The most slots a rule keeps per variable.
inline constexpr int kMaxUpdateSlots = 3;

// One variable of an update, its gradient and its slots in the rule's order, each of the
// variable's element count:
//   SGD:      velocity (present when momentum != 0, else null);
//   Adam:     m, v;
//   RMSprop:  velocity, average_gradient (present when centered), momentum (present when
//             momentum != 0);
//   Adagrad:  accumulator;
//   Adadelta: accumulated_grad, accumulated_delta;
//   Adamax:   m, u;
//   Nadam:    m, v.
// The slots not listed are null.
struct UpdateOperands {
  Tensor* w = nullptr;
  const Tensor* g = nullptr;
  std::array<Tensor*, kMaxUpdateSlots> slots = {};
};

// Whether `rule` reads slot `j` of each variable (the table above).
bool UpdateUsesSlot(const UpdateRule& rule, int j);

// The update's name in profiles, traces and errors: "SgdUpdate", "AdamUpdate", ...
const char* UpdateName(UpdateKind kind);

// OK when every operand is float32, on `step`'s device, with its variable's element count, the
// rule's slots are there (and no others), no variable comes twice, and `step` holds the step's
// scalars (CheckStepScalars). The error names the variable's position in `vars` and the operand.
absl::Status CheckUpdate(const UpdateRule& rule, absl::Span<const UpdateOperands> vars,
                         const Tensor& step);

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_OPTIMIZER_UPDATE_H_
