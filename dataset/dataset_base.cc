#include "dataset/dataset_base.h"

#include <algorithm>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/buffer_pool.h"
#include "core/splitmix64.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "io/feature_wire.h"
#include "io/tfrecord_reader.h"

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

IteratorContext IteratorContext::ForInput(const std::string& owner_name, size_t index) const {
  if (index == 0) return *this;
  IteratorContext c = *this;
  // Its own domain, so that no Repeat or Interleave salt gives the same seed.
  constexpr uint64_t kInputSeedDomain = 0x1a9e7c0de5eed000ULL;
  c.seed = MixSeed(seed, kInputSeedDomain + index);
  c.name_prefix = InputPrefix(owner_name, index);
  return c;
}

std::string IteratorContext::InputPrefix(const std::string& owner_name, size_t index) const {
  return index == 0 ? name_prefix : absl::StrCat(name_prefix, owner_name, ".", index, ":");
}

namespace {

// The names the iterators of `dataset`'s inputs have under `ctx` (see ForInput).
std::vector<std::string> InputNames(const DatasetBase& dataset, const IteratorContext& ctx) {
  std::vector<std::string> names;
  names.reserve(dataset.inputs().size());
  for (size_t i = 0; i < dataset.inputs().size(); ++i) {
    names.push_back(ctx.InputPrefix(dataset.name(), i) + dataset.inputs()[i]->name());
  }
  return names;
}

}  // namespace

// SplitMix64's finaliser over the combination: cheap, and every input bit
// affects every output bit.
uint64_t MixSeed(uint64_t a, uint64_t b) {
  return SplitMix64Finalize(a + kSplitMix64Golden * (b + 1) + (a << 6) + (a >> 2));
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

const ElementSpec& DatasetBase::element_spec() const {
  absl::call_once(element_spec_once_, [this] { element_spec_ = ComputeElementSpec(); });
  return element_spec_;
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
      output_signature_(dataset->output_signature()),
      ctx_(ctx),
      name_(ctx.name_prefix + dataset->name()),
      kind_(kind),
      stats_(ctx.stats
                 ? ctx.stats->GetOrCreate(name_, kind, [&] { return InputNames(*dataset, ctx); })
                 : std::make_shared<NodeStats>()) {}

void IteratorBase::ExcludeFromOwnTime(int64_t ns) { tls_nested_ns += ns; }

absl::StatusOr<std::optional<Element>> IteratorBase::GetNext() {
  // A node that pulls many inputs per output (a Shuffle filling its buffer, a Filter, a Skip)
  // stops at its next pull once the pipeline is cancelled: the destructor that cancelled it
  // waits for it.
  if (ctx_.cancellation != nullptr && ctx_.cancellation->cancelled()) {
    return absl::CancelledError("iterator destroyed");
  }
  const int64_t outer_nested = tls_nested_ns;
  tls_nested_ns = 0;
  // The profiler's clock: a span below takes these times as they are.
  const int64_t start = profiler::NowNs();
  absl::StatusOr<std::optional<Element>> result =
      ExceptionsAsStatus([this] { return GetNextInternal(); });
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
    if (output_signature_ != nullptr) {
      if (absl::Status s = output_signature_->Check(**result); !s.ok()) {
        return Annotate(absl::InvalidArgumentError(absl::StrCat(
                            "the element does not match the declared output_signature ",
                            output_signature_->DebugString(), ": ", s.message())),
                        produced_);
      }
    }
    ++produced_;
    stats_->elements_produced.fetch_add(1, std::memory_order_relaxed);
    stats_->bytes_produced.fetch_add(static_cast<int64_t>(ElementByteSize(**result)),
                                     std::memory_order_relaxed);
  }
  return result;
}

NextReadiness IteratorBase::WaitForNext(std::chrono::steady_clock::time_point deadline) {
  if (!async()) return WaitForNextInternal(deadline);
  const int64_t start = profiler::NowNs();
  const NextReadiness readiness = WaitForNextInternal(deadline);
  stats_->wait_ns.fetch_add(profiler::NowNs() - start, std::memory_order_relaxed);
  return readiness;
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
  absl::Status named =
      WithContext(status, absl::StrCat(name_, " at element ", element_index, ": "));
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
  absl::StatusOr<Element> e = ExceptionsAsStatus([&] { return RecomputeInternal(source); });
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

absl::Status IteratorBase::CheckRestored(const Element& element, const ElementSpec& spec) const {
  absl::Status s = spec.Check(element);
  if (s.ok()) return s;
  return absl::DataLossError(absl::StrCat("checkpoint of ", name_, " (", dataset_->Describe(),
                                          "): a buffered element is not ", spec.DebugString(), ": ",
                                          s.message()));
}

absl::Status IteratorBase::CheckRestored(const absl::StatusOr<std::optional<Element>>& result,
                                         const ElementSpec& spec) const {
  return result.ok() && result->has_value() ? CheckRestored(**result, spec) : absl::OkStatus();
}

absl::StatusOr<Element> IteratorBase::RestoreElement(const proto::ElementProto& proto,
                                                     const ElementSpec& spec) const {
  SLUICE_ASSIGN_OR_RETURN(Element e, ElementFromProto(proto));
  SLUICE_RETURN_IF_ERROR(CheckRestored(e, spec));
  return e;
}

absl::StatusOr<absl::StatusOr<std::optional<Element>>> IteratorBase::RestoreBuffered(
    const proto::BufferedResult& proto, IteratorBase* input, ElementSource* source,
    const ElementSpec& spec) const {
  SLUICE_ASSIGN_OR_RETURN(auto result, BufferedFromProto(proto, input, source));
  SLUICE_RETURN_IF_ERROR(CheckRestored(result, spec));
  return result;
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

absl::Status SerializeElementRecord(const Element& element, absl::string_view what,
                                    std::string* record) {
  const auto too_large = [&](uint64_t bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": an element of ", bytes,
                                                     " bytes is over the ", kDefaultMaxRecordBytes,
                                                     " bytes a record may hold"));
  };
  uint64_t values = 0;
  for (const Tensor& t : element) {
    if (t.dtype() != DType::kBytes) {
      values += t.byte_size();
    } else {
      for (const std::string& s : t.flat<std::string>()) values += s.size();
    }
  }
  if (values > kDefaultMaxRecordBytes) return too_large(values);
  proto::ElementProto p;
  ElementToProto(element, &p);
  const size_t bytes = p.ByteSizeLong();
  if (bytes > kDefaultMaxRecordBytes) return too_large(bytes);
  if (!p.SerializeToString(record)) {
    return absl::InternalError(absl::StrCat(what, ": cannot serialize an element"));
  }
  return absl::OkStatus();
}

namespace {

// Smaller values come from malloc: pooling them would only fill the pool.
constexpr size_t kPooledBytes = 64 << 10;

// One saved component as a tensor: the checks and the one copy that ElementFromProto and
// ElementFromSerialized share. `strings` is a container of kBytes values (protobuf's repeated
// field or string_views into serialized bytes). Values of kPooledBytes and more take their memory
// from `pool` when there is one.
template <typename Strings>
absl::StatusOr<Tensor> TensorFromSaved(int32_t dtype_value, absl::Span<const int64_t> dims,
                                       absl::string_view data, const Strings& strings,
                                       BufferPool* pool = nullptr) {
  if (dtype_value < 0 || dtype_value > static_cast<int>(DType::kBytes)) {
    return absl::DataLossError(absl::StrCat("bad dtype ", dtype_value, " in saved element"));
  }
  const DType dtype = static_cast<DType>(dtype_value);
  const absl::StatusOr<Shape> shape = Shape::FromUntrustedDims(dims);
  if (!shape.ok()) {
    return absl::DataLossError(absl::StrCat("saved element: ", shape.status().message()));
  }
  // The values must be present before the tensor is allocated: a corrupt shape cannot make
  // us allocate more than the saved bytes hold.
  const int64_t n = shape->num_elements();
  const int64_t count = static_cast<int64_t>(strings.size());
  if (dtype == DType::kBytes) {
    if (count != n) {
      return absl::DataLossError(absl::StrCat("saved bytes", shape->DebugString(), " tensor holds ",
                                              count, " strings, expected ", n));
    }
  } else if (const int64_t bytes = n * static_cast<int64_t>(DTypeSize(dtype));
             static_cast<int64_t>(data.size()) != bytes) {
    return absl::DataLossError(absl::StrCat("saved ", DTypeName(dtype), shape->DebugString(),
                                            " tensor holds ", data.size(), " bytes, expected ",
                                            bytes));
  }
  Tensor t = pool != nullptr && dtype != DType::kBytes && data.size() >= kPooledBytes
                 ? Tensor::FromBuffer(dtype, *shape, pool->Get(data.size())).value()
                 : Tensor(dtype, *shape);
  if (dtype == DType::kBytes) {
    auto out = t.flat<std::string>();
    for (int64_t i = 0; i < count; ++i) out[i] = std::string(strings[static_cast<int>(i)]);
  } else if (!data.empty()) {
    std::memcpy(t.raw_data(), data.data(), data.size());
  }
  return t;
}

// TensorProto's fields (dataset/proto/iterator_state.proto).
constexpr uint32_t kComponentsField = 1;  // ElementProto.components
constexpr uint32_t kDTypeField = 1;
constexpr uint32_t kShapeField = 2;
constexpr uint32_t kDataField = 3;
constexpr uint32_t kStringsField = 4;

// One serialized TensorProto, read as protobuf's parser reads it: the last dtype and data win,
// shape values and strings accumulate (shape packed, unpacked or both), fields of an unexpected
// wire type and unknown fields are skipped.
absl::StatusOr<Tensor> TensorFromSerialized(absl::string_view bytes, const char* origin,
                                            BufferPool* pool) {
  int32_t dtype = 0;
  absl::InlinedVector<int64_t, 4> dims;
  absl::string_view data;
  std::vector<absl::string_view> strings;
  internal::WireReader reader(bytes, origin);
  internal::WireField field;
  while (!reader.done()) {
    SLUICE_RETURN_IF_ERROR(reader.Next(&field));
    const bool len = field.type == internal::WireType::kLen;
    if (field.number == kDTypeField && field.type == internal::WireType::kVarint) {
      dtype = static_cast<int32_t>(field.value);  // int32 fields keep the low 32 bits
    } else if (field.number == kShapeField) {
      SLUICE_RETURN_IF_ERROR(
          internal::ForEachVarint(field, origin, "shape", [&](uint64_t v) -> absl::Status {
            dims.push_back(static_cast<int64_t>(v));
            return absl::OkStatus();
          }));
    } else if (field.number == kDataField && len) {
      data = field.bytes;
    } else if (field.number == kStringsField && len) {
      strings.push_back(field.bytes);
    }
  }
  return TensorFromSaved(dtype, dims, data, strings, pool);
}

}  // namespace

absl::StatusOr<Element> ElementFromProto(const proto::ElementProto& proto) {
  Element element;
  for (const proto::TensorProto& tp : proto.components()) {
    SLUICE_ASSIGN_OR_RETURN(Tensor t,
                            TensorFromSaved(tp.dtype(), tp.shape(), tp.data(), tp.strings()));
    element.push_back(std::move(t));
  }
  return element;
}

absl::StatusOr<Element> ElementFromSerialized(absl::string_view bytes, BufferPool* pool) {
  Element element;
  internal::WireReader reader(bytes, bytes.data());
  internal::WireField field;
  while (!reader.done()) {
    SLUICE_RETURN_IF_ERROR(reader.Next(&field));
    if (field.number != kComponentsField || field.type != internal::WireType::kLen) continue;
    SLUICE_ASSIGN_OR_RETURN(Tensor t, TensorFromSerialized(field.bytes, bytes.data(), pool));
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
