#include "train/autodiff/check_numerics.h"

#include <atomic>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/sum_all.h"
#include "train/backend/trace_hooks.h"
#include "train/backend/transfer.h"

namespace sluice::train::autodiff {
namespace {

std::atomic<bool> enabled{false};

struct Context {
  std::string layer;  // "layer 1 (sequential) / layer 0 (dense)"
  int64_t step = -1;
  std::string last_op;
};
thread_local Context context;
thread_local const char* last_op_name = nullptr;

// `layer` is the layer scope when the op ran (a replay has none of its own); the step is read
// when the check runs, so that a replayed check names the step it checks.
absl::Status CheckNow(const std::string& what, const std::string& layer, const Tensor& t) {
  if (t.num_elements() == 0) return absl::OkStatus();
  if (t.dtype() == DType::kBFloat16 || t.dtype() == DType::kFloat16) {
    // Mixed precision keeps activations in 16 bits between layers: checked as float32, exactly.
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("CheckNumerics", {&t}));
    SLUICE_ASSIGN_OR_RETURN(Tensor wide, backend->Allocate(DType::kFloat32, t.shape()));
    SLUICE_RETURN_IF_ERROR(backend->Cast(t, wide));
    return CheckNow(what, layer, wide);
  }
  if (t.dtype() != DType::kFloat32) return absl::OkStatus();
  // A NaN or an Inf anywhere makes the sum non-finite; a finite sum proves every element is.
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, backend::SumAll(t));
  SLUICE_ASSIGN_OR_RETURN(Tensor host_sum, backend::ToHost(sum));
  if (std::isfinite(host_sum.data<float>()[0])) return absl::OkStatus();
  // Only now is t read back, to find the first non-finite element.
  SLUICE_ASSIGN_OR_RETURN(Tensor host, backend::ToHost(t));
  const float* p = host.data<float>();
  int64_t at = 0;
  while (at < host.num_elements() && std::isfinite(p[at])) ++at;
  if (at == host.num_elements()) return absl::OkStatus();  // finite values whose sum overflowed
  const float value = p[at];
  return absl::InvalidArgumentError(
      absl::StrCat("check numerics: ", what, layer.empty() ? "" : " in ", layer,
                   context.step >= 0 ? absl::StrCat(" at step ", context.step) : "", " produced ",
                   std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf"), " (element ", at,
                   " of ", t.shape().DebugString(), ")"));
}

// In a traced step the check is recorded too, and runs again after the kernels at every replay.
absl::Status Check(std::string what, const Tensor& t) {
  return backend::CheckAtEveryReplay(
      "CheckNumerics", t, [what = std::move(what), layer = context.layer](const Tensor& x) {
        return CheckNow(what, layer, x);
      });
}

}  // namespace

void EnableCheckNumerics() { enabled.store(true, std::memory_order_relaxed); }
void DisableCheckNumerics() { enabled.store(false, std::memory_order_relaxed); }
bool CheckNumericsEnabled() { return enabled.load(std::memory_order_relaxed); }

absl::Status CheckNumerics(const char* op, const Tensor& output) {
  last_op_name = op;
  if (!CheckNumericsEnabled()) return absl::OkStatus();
  context.last_op = context.layer.empty() ? op : absl::StrCat(op, " in ", context.layer);
  return Check(op, output);
}

absl::Status CheckGradientNumerics(const std::string& op, const Tensor& gradient) {
  if (!CheckNumericsEnabled()) return absl::OkStatus();
  return Check(absl::StrCat("the gradient of ", op), gradient);
}

std::string LastCheckedOp() { return context.last_op; }
const char* LastOpName() { return last_op_name; }

NumericsLayerScope::NumericsLayerScope(std::string layer) : previous_size_(context.layer.size()) {
  context.layer =
      context.layer.empty() ? std::move(layer) : absl::StrCat(context.layer, " / ", layer);
}

NumericsLayerScope::~NumericsLayerScope() { context.layer.resize(previous_size_); }

void SetNumericsStep(int64_t step) { context.step = step; }

}  // namespace sluice::train::autodiff
