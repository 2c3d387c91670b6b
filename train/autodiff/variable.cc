#include "train/autodiff/variable.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/transfer.h"

namespace sluice::train::autodiff {

namespace {

Tensor CloneOrDie(const Tensor& initial, const std::string& name) {
  absl::StatusOr<Tensor> copy = backend::Clone(initial);
  if (!copy.ok()) {
    std::fprintf(stderr, "Variable '%s': cannot hold its initial value: %s\n", name.c_str(),
                 std::string(copy.status().message()).c_str());
    std::abort();
  }
  return *std::move(copy);
}

std::atomic<uint64_t> variable_moves{0};

}  // namespace

uint64_t VariableMoves() { return variable_moves.load(std::memory_order_relaxed); }

Variable::Variable(const Tensor& initial, std::string name, bool trainable)
    : value_(CloneOrDie(initial, name)), name_(std::move(name)), trainable_(trainable) {}

absl::Status Variable::MoveTo(const Device& device) {
  if (host_resident_ || value_.device() == device) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(Tensor moved, backend::CopyTo(value_, device));
  value_ = std::move(moved);
  variable_moves.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

const Tensor& Variable::value() const {
  if (updated()) internal::NotifyVariableRead(value_);
  return value_;
}

absl::Status Variable::Assign(const Tensor& values) {
  if (values.dtype() != value_.dtype() || values.shape() != value_.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Variable::Assign: variable '", name_, "' is ", DTypeName(value_.dtype()),
                     value_.shape().DebugString(), ", got ", DTypeName(values.dtype()),
                     values.shape().DebugString()));
  }
  return backend::CopyInto(values, value_);
}

absl::Status CheckUniqueNames(const std::vector<Variable*>& vars, absl::string_view who) {
  absl::flat_hash_map<absl::string_view, size_t> seen;
  for (size_t i = 0; i < vars.size(); ++i) {
    auto [it, inserted] = seen.emplace(vars[i]->name(), i);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": variables ", it->second, " and ", i, " are both named '", vars[i]->name(),
          "': give each layer's variables distinct names (a container prefixes its children's)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> HostSnapshot(const Tensor& t, HostValues host) {
  if (host == HostValues::kShare && t.device().is_cpu()) return t;
  return backend::CopyTo(t, Device::Cpu());
}

absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> SnapshotVariables(
    const std::vector<Variable*>& vars, HostValues host) {
  SLUICE_RETURN_IF_ERROR(CheckUniqueNames(vars, "saving variables"));
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(vars.size());
  // mutable_value(): a snapshot is not a use the tape should record.
  for (Variable* v : vars) {
    SLUICE_ASSIGN_OR_RETURN(Tensor value, HostSnapshot(v->mutable_value(), host));
    out.emplace_back(v->name(), std::move(value));
  }
  return out;
}

absl::Status AssignVariables(const std::vector<std::pair<std::string, Tensor>>& saved,
                             const std::vector<Variable*>& vars, absl::string_view source) {
  SLUICE_RETURN_IF_ERROR(CheckUniqueNames(vars, source));
  const size_t common = std::min(saved.size(), vars.size());
  for (size_t i = 0; i < common; ++i) {
    const std::string& found_name = saved[i].first;
    const Variable& v = *vars[i];
    if (found_name != v.name()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": variable ", i, ": expected '", v.name(), "' (the model's), found '",
          found_name, "' in the checkpoint: not this model's checkpoint"));
    }
    if (saved[i].second.shape() != v.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": variable ", i, " '", v.name(), "': expected shape ", v.shape().DebugString(),
          " (the model's), found ", saved[i].second.shape().DebugString(), " in the checkpoint"));
    }
  }
  if (saved.size() != vars.size()) {
    const bool model_has_more = vars.size() > saved.size();
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected ", vars.size(), " variables (the model's), found ",
                     saved.size(), " in the checkpoint; the first unmatched is ",
                     model_has_more ? "the model's '" : "the checkpoint's '",
                     model_has_more ? vars[common]->name() : saved[common].first, "'"));
  }
  for (size_t i = 0; i < vars.size(); ++i) SLUICE_RETURN_IF_ERROR(vars[i]->Assign(saved[i].second));
  return absl::OkStatus();
}

std::vector<std::string> FrozenNames(const std::vector<Variable*>& vars) {
  std::vector<std::string> names;
  for (const Variable* v : vars) {
    if (v->frozen()) names.push_back(v->name());
  }
  return names;
}

void SetFrozen(const std::vector<Variable*>& vars, const std::vector<std::string>& frozen) {
  const absl::flat_hash_set<std::string> names(frozen.begin(), frozen.end());
  for (Variable* v : vars) v->set_frozen(names.contains(v->name()));
}

}  // namespace sluice::train::autodiff
