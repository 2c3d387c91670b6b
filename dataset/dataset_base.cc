#include "dataset/dataset_base.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"

namespace sluice {
namespace {

// Marks a status as already named by the node it came from.
constexpr char kOriginPayload[] = "sluice.dev/origin";

// Nanoseconds spent in nested GetNext calls on this thread, so that a sync
// node's busy time excludes the time its inputs took.
thread_local int64_t tls_nested_ns = 0;

}  // namespace

IteratorContext IteratorContext::WithSalt(uint64_t extra) const {
  IteratorContext c = *this;
  c.salt = MixSeed(salt, extra);
  return c;
}

IteratorContext IteratorContext::ForInner(const std::string& owner_name, uint64_t index) const {
  IteratorContext c = WithSalt(index);
  c.name_prefix = absl::StrCat(name_prefix, owner_name, "/");
  return c;
}

// SplitMix64's finaliser over the combination: cheap, and every input bit
// affects every output bit.
uint64_t MixSeed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9e3779b97f4a7c15ull * (b + 1) + (a << 6) + (a >> 2);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t ElementSeed(const IteratorContext& ctx, int node_position, int64_t index) {
  return MixSeed(MixSeed(MixSeed(ctx.seed, ctx.salt), static_cast<uint64_t>(node_position)),
                 static_cast<uint64_t>(index));
}

DatasetBase::DatasetBase(std::string kind, std::vector<std::shared_ptr<const DatasetBase>> inputs)
    : kind_(std::move(kind)), inputs_(std::move(inputs)) {
  int depth = -1;
  for (const auto& in : inputs_) depth = std::max(depth, in->position());
  position_ = depth + 1;
  name_ = absl::StrCat(kind_, "[", position_, "]");
}

std::string DatasetBase::DebugString() const {
  if (inputs_.empty()) return Describe();
  std::string in;
  if (inputs_.size() == 1) {
    in = inputs_[0]->DebugString();
  } else {
    in = "(";
    for (size_t i = 0; i < inputs_.size(); ++i) {
      absl::StrAppend(&in, i ? ", " : "", inputs_[i]->DebugString());
    }
    in += ")";
  }
  return absl::StrCat(in, " -> ", Describe());
}

IteratorBase::IteratorBase(const DatasetBase* dataset, const IteratorContext& ctx, NodeKind kind)
    : dataset_(dataset),
      ctx_(ctx),
      name_(ctx.name_prefix + dataset->name()),
      kind_(kind),
      stats_(ctx.stats ? ctx.stats->GetOrCreate(name_, kind) : std::make_shared<NodeStats>()) {}

void IteratorBase::ExcludeFromOwnTime(int64_t ns) { tls_nested_ns += ns; }

absl::StatusOr<std::optional<Element>> IteratorBase::GetNext() {
  const int64_t outer_nested = tls_nested_ns;
  tls_nested_ns = 0;
  // The profiler's clock: a span below takes these times as they are.
  const int64_t start = profiler::NowNs();
  absl::StatusOr<std::optional<Element>> result = GetNextInternal();
  const int64_t elapsed = profiler::NowNs() - start;
  const int64_t own = std::max<int64_t>(0, elapsed - tls_nested_ns);
  tls_nested_ns = outer_nested + elapsed;
  (async() ? stats_->wait_ns : stats_->busy_ns).fetch_add(own, std::memory_order_relaxed);
  if (profiler::Active()) {
    if (span_name_ == nullptr) span_name_ = profiler::Intern(name_);
    profiler::RecordSpan("pipeline", span_name_, start, start + elapsed);
  }

  if (!result.ok()) return Annotate(result.status(), produced_);
  if (result->has_value()) {
    ++produced_;
    stats_->elements_produced.fetch_add(1, std::memory_order_relaxed);
    stats_->bytes_produced.fetch_add(static_cast<int64_t>(ElementByteSize(**result)),
                                     std::memory_order_relaxed);
  }
  return result;
}

const char* IteratorBase::WaitSpanName() {
  if (wait_span_name_ == nullptr) wait_span_name_ = profiler::Intern(name_ + " wait");
  return wait_span_name_;
}

absl::Status IteratorBase::Annotate(const absl::Status& status, int64_t element_index) const {
  if (status.ok() || status.GetPayload(kOriginPayload).has_value() ||
      status.code() == absl::StatusCode::kCancelled) {
    return status;
  }
  absl::Status named(status.code(),
                     absl::StrCat(name_, " at element ", element_index, ": ", status.message()));
  named.SetPayload(kOriginPayload, absl::Cord(name_));
  return named;
}

absl::Status IteratorBase::Save(proto::IteratorStateProto* state) {
  state->set_node(name_);
  (*state->mutable_ints())["__produced"] = produced_;
  return SaveInternal(state);
}

absl::Status IteratorBase::Restore(const proto::IteratorStateProto& state) {
  if (state.node() != name_) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint holds state for ", state.node(),
                                                      ", but the pipeline has ", name_, " here"));
  }
  auto it = state.ints().find("__produced");
  produced_ = it == state.ints().end() ? 0 : it->second;
  return RestoreInternal(state);
}

absl::StatusOr<Element> IteratorBase::Recompute(SourceCursor& source) {
  absl::StatusOr<Element> e = RecomputeInternal(source);
  if (e.ok() || e.status().GetPayload(kOriginPayload).has_value()) return e;
  absl::Status named(
      e.status().code(),
      absl::StrCat(name_, " recomputing a checkpointed element: ", e.status().message()));
  named.SetPayload(kOriginPayload, absl::Cord(name_));
  return named;
}

absl::StatusOr<Element> IteratorBase::RecomputeInternal(SourceCursor& source) {
  (void)source;
  // Only a checkpoint this node never wrote holds a source for it.
  return absl::DataLossError(
      "the checkpoint holds a source for this node, which cannot "
      "recompute elements");
}

void IteratorBase::BufferedToProto(const absl::StatusOr<std::optional<Element>>& result,
                                   const ElementSource& source, proto::BufferedResult* out) const {
  if (SavesAsSource(result, source)) {
    out->mutable_source()->Add(source.begin(), source.end());
    return;
  }
  ResultToProto(result, out);
}

absl::StatusOr<absl::StatusOr<std::optional<Element>>> IteratorBase::BufferedFromProto(
    const proto::BufferedResult& proto, IteratorBase* input, ElementSource* source) {
  source->clear();
  if (proto.source_size() == 0) return ResultFromProto(proto);
  if (input == nullptr) {
    return absl::DataLossError("checkpoint: a buffered element saved as a source has no input");
  }
  source->assign(proto.source().begin(), proto.source().end());
  SourceCursor cursor(*source);
  SLUICE_ASSIGN_OR_RETURN(Element e, input->Recompute(cursor));
  if (!cursor.done()) {
    return absl::DataLossError(absl::StrCat("checkpoint: the saved source of an element of ",
                                            input->name(), " has integers left over"));
  }
  return absl::StatusOr<std::optional<Element>>(std::move(e));
}

absl::Status IteratorBase::SaveInput(IteratorBase* input, proto::IteratorStateProto* state) {
  state->add_input_present(input != nullptr);
  proto::IteratorStateProto* in = state->add_inputs();
  return input ? input->Save(in) : absl::OkStatus();
}

absl::StatusOr<const proto::IteratorStateProto*> IteratorBase::InputState(
    const proto::IteratorStateProto& state, int i) {
  if (i >= state.inputs_size() || i >= state.input_present_size()) {
    return absl::DataLossError(
        absl::StrCat("checkpoint of ", state.node(), " lacks the state of input ", i));
  }
  return state.input_present(i) ? &state.inputs(i) : nullptr;
}

absl::Status IteratorBase::RestoreInput(IteratorBase* input, const proto::IteratorStateProto& state,
                                        int i) {
  SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, i));
  return in ? input->Restore(*in) : absl::OkStatus();
}

absl::StatusOr<int64_t> SavedInt(const proto::IteratorStateProto& state, const std::string& key) {
  auto it = state.ints().find(key);
  if (it == state.ints().end()) {
    return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " lacks '", key, "'"));
  }
  return it->second;
}

void ElementToProto(const Element& element, proto::ElementProto* out) {
  for (const Tensor& t : element) {
    proto::TensorProto* tp = out->add_components();
    tp->set_dtype(static_cast<int>(t.dtype()));
    for (int64_t d : t.shape().dims()) tp->add_shape(d);
    if (t.dtype() == DType::kBytes) {
      for (const std::string& s : t.flat<std::string>()) tp->add_strings(s);
    } else {
      tp->set_data(static_cast<const char*>(t.raw_data()), t.byte_size());
    }
  }
}

absl::StatusOr<Element> ElementFromProto(const proto::ElementProto& proto) {
  Element element;
  for (const proto::TensorProto& tp : proto.components()) {
    if (tp.dtype() < 0 || tp.dtype() > static_cast<int>(DType::kBytes)) {
      return absl::DataLossError(absl::StrCat("bad dtype ", tp.dtype(), " in saved element"));
    }
    const DType dtype = static_cast<DType>(tp.dtype());
    const absl::StatusOr<Shape> shape = Shape::FromUntrustedDims(tp.shape());
    if (!shape.ok()) {
      return absl::DataLossError(absl::StrCat("saved element: ", shape.status().message()));
    }
    // The values must be present before the tensor is allocated: a corrupt shape cannot make
    // us allocate more than the saved bytes hold.
    const int64_t n = shape->num_elements();
    if (dtype == DType::kBytes) {
      if (tp.strings_size() != n) {
        return absl::DataLossError(absl::StrCat("saved bytes", shape->DebugString(),
                                                " tensor holds ", tp.strings_size(),
                                                " strings, expected ", n));
      }
    } else if (const int64_t bytes = n * static_cast<int64_t>(DTypeSize(dtype));
               static_cast<int64_t>(tp.data().size()) != bytes) {
      return absl::DataLossError(absl::StrCat("saved ", DTypeName(dtype), shape->DebugString(),
                                              " tensor holds ", tp.data().size(),
                                              " bytes, expected ", bytes));
    }
    Tensor t(dtype, *shape);
    if (dtype == DType::kBytes) {
      auto out = t.flat<std::string>();
      for (int i = 0; i < tp.strings_size(); ++i) out[i] = tp.strings(i);
    } else if (!tp.data().empty()) {
      std::memcpy(t.raw_data(), tp.data().data(), tp.data().size());
    }
    element.push_back(std::move(t));
  }
  return element;
}

void ResultToProto(const absl::StatusOr<std::optional<Element>>& result,
                   proto::BufferedResult* out) {
  if (!result.ok()) {
    out->set_status_code(static_cast<int>(result.status().code()));
    out->set_status_message(std::string(result.status().message()));
  } else if (!result->has_value()) {
    out->set_end_of_sequence(true);
  } else {
    ElementToProto(**result, out->mutable_element());
  }
}

absl::StatusOr<absl::StatusOr<std::optional<Element>>> ResultFromProto(
    const proto::BufferedResult& proto) {
  using Result = absl::StatusOr<std::optional<Element>>;
  if (proto.status_code() != 0) {
    absl::Status s(static_cast<absl::StatusCode>(proto.status_code()), proto.status_message());
    s.SetPayload(kOriginPayload, absl::Cord("restored"));  // Already named when it was saved.
    return Result(s);
  }
  if (proto.end_of_sequence()) return Result(std::nullopt);
  SLUICE_ASSIGN_OR_RETURN(Element e, ElementFromProto(proto.element()));
  return Result(std::move(e));
}

}  // namespace sluice
