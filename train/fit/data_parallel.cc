#include "train/fit/data_parallel.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/monotonic_clock.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"

namespace sluice::train::fit {
namespace {

// One line per variable: what must agree between ranks.
std::string Fingerprint(layers::Module& model) {
  std::vector<std::string> lines;
  for (autodiff::Variable* v : model.Variables()) {
    const Tensor& t = v->value();
    lines.push_back(absl::StrCat("'", v->name(), "' ", DTypeName(t.dtype()),
                                 t.shape().DebugString(),
                                 v->trainable() ? "" : " (not trainable)"));
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace

DataParallel::DataParallel(distributed::Communicator& comm, int64_t bucket_bytes)
    : comm_(comm), bucket_bytes_(bucket_bytes) {}

void DataParallel::ResetOverlap() {
  allreduce_seconds_ = 0;
  exposed_seconds_ = 0;
}

absl::Status DataParallel::SyncModel(layers::Module& model) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> all, comm_.AllGatherBytes(Fingerprint(model)));
  const std::vector<std::string> ours = absl::StrSplit(all[0], '\n');
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const std::vector<std::string> theirs = absl::StrSplit(all[r], '\n');
    size_t i = 0;
    while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
    auto at = [&](const std::vector<std::string>& v) {
      return i < v.size() ? v[i] : std::string("nothing (no more variables)");
    };
    return absl::FailedPreconditionError(
        absl::StrCat("data-parallel: rank ", r, "'s model differs from rank 0's (", theirs.size(),
                     " and ", ours.size(), " variables): variable ", i + 1, " is ", at(ours),
                     " on rank 0 and ", at(theirs), " on rank ", r));
  }
  std::vector<Tensor> values;
  for (autodiff::Variable* v : model.Variables()) values.push_back(v->mutable_value());
  return comm_.Broadcast(std::move(values), /*root=*/0);
}

void DataParallel::BeginStep(const std::vector<autodiff::Variable*>& vars,
                             distributed::ReduceOp op) {
  op_ = op;
  buckets_.clear();
  start_order_.clear();
  bucket_of_.assign(vars.size(), 0);
  error_ = absl::OkStatus();
  busy_at_begin_ = comm_.busy_seconds();
  int64_t bytes = 0;
  for (size_t k = vars.size(); k-- > 0;) {
    const Tensor& t = vars[k]->value();
    const int64_t n = t.num_elements() * static_cast<int64_t>(DTypeSize(t.dtype()));
    if (buckets_.empty() || (bytes > 0 && bytes + n > bucket_bytes_)) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().members.push_back(k);
    bucket_of_[k] = buckets_.size() - 1;
    bytes += n;
  }
}

void DataParallel::Start(Bucket& bucket) {
  bucket.started = true;
  if (bucket.ready.empty()) return;
  start_order_.push_back(&bucket - buckets_.data());
  absl::StatusOr<distributed::PendingCollective> pending =
      comm_.StartAllReduce(std::move(bucket.ready), op_);
  bucket.ready.clear();
  if (!pending.ok()) {
    if (error_.ok()) error_ = pending.status();
    return;
  }
  bucket.pending = std::move(*pending);
}

autodiff::Tape::GradientReadyFn DataParallel::OnGradientReady() {
  return [this](size_t source, const Tensor& gradient) {
    if (source >= bucket_of_.size()) return;
    Bucket& b = buckets_[bucket_of_[source]];
    if (b.started) return;
    b.ready.push_back(gradient);
    if (b.ready.size() == b.members.size()) Start(b);
  };
}

absl::Status DataParallel::FinishStep(std::vector<std::optional<Tensor>>& grads) {
  // A bucket missing a gradient (a variable the loss does not reach) goes with what it has,
  // in bucket order: the same on every rank, which runs the same model.
  for (Bucket& b : buckets_) {
    if (!b.started) Start(b);
  }
  const double t0 = MonotonicSeconds();
  absl::Status status = error_;
  for (size_t i : start_order_) {
    if (!buckets_[i].pending) continue;
    // The profiler shows the exposed part of each bucket's all-reduce: the wait for it here.
    profiler::Span span("allreduce", profiler::Active()
                                         ? profiler::Intern(absl::StrCat("all-reduce bucket ", i))
                                         : nullptr);
    absl::Status s = buckets_[i].pending->Wait();
    if (status.ok()) status = s;
  }
  exposed_seconds_ += MonotonicSeconds() - t0;
  // Only this step's buckets ran since BeginStep: the step issues no other collective.
  allreduce_seconds_ += comm_.busy_seconds() - busy_at_begin_;
  buckets_.clear();
  return status;
}

absl::Status DataParallel::AllReduceMean(const std::vector<autodiff::Variable*>& vars,
                                         std::vector<std::optional<Tensor>>& grads) {
  BeginStep(vars);
  autodiff::Tape::GradientReadyFn ready = OnGradientReady();
  for (size_t k = grads.size(); k-- > 0;) {
    if (grads[k]) ready(k, *grads[k]);
  }
  return FinishStep(grads);
}

absl::StatusOr<std::vector<double>> DataParallel::Sum(std::vector<double> values) {
  SLUICE_RETURN_IF_ERROR(
      comm_.AllReduceValues(absl::MakeSpan(values), distributed::ReduceOp::kSum));
  return values;
}

}  // namespace sluice::train::fit
