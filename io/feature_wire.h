#ifndef SLUICE_IO_FEATURE_WIRE_H_
#define SLUICE_IO_FEATURE_WIRE_H_

// The protobuf wire-format walk shared by the Example and SequenceExample
// parsers: they read serialized bytes directly, without building protobuf
// messages, and keep string_views into the input until the final copy into
// tensors. Internal: use io/example_parser.h and io/sequence_example_parser.h.

#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "io/feature_spec.h"

namespace sluice::internal {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// One field of a message.
struct WireField {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t value = 0;       // kVarint, kFixed64 and kFixed32 fields
  absl::string_view bytes;  // kLen fields: the payload, a view into the input
};

// Reads a base-128 varint from [p, end). Returns the position after it, or
// nullptr when the input ends inside it or it runs past 10 bytes.
inline const char* ParseVarint(const char* p, const char* end, uint64_t* value) {
  if (p < end && static_cast<uint8_t>(*p) < 0x80) {  // The common one-byte case.
    *value = static_cast<uint8_t>(*p);
    return p + 1;
  }
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t b = static_cast<uint8_t>(*p++);
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) {
      *value = result;
      return p;
    }
  }
  return nullptr;
}

// Reads a field tag: a varint of at most 5 bytes, whose bits past 32 are
// dropped, exactly as protobuf's parser reads tags. Returns the position after
// it, or nullptr.
inline const char* ParseTag(const char* p, const char* end, uint32_t* tag) {
  uint32_t result = 0;
  for (int i = 0; i < 5 && p < end; ++i) {
    const uint8_t b = static_cast<uint8_t>(*p++);
    result |= static_cast<uint32_t>(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *tag = result;
      return p;
    }
  }
  return nullptr;
}

// Walks the fields of one serialized message in order. Every length is
// checked against the bytes that remain, so malformed input yields a DataLoss
// error (naming the byte offset from `origin`, the start of the whole input),
// never an over-read. Groups (wire types 3 and 4, from proto2 writers) are
// skipped whole and reported as one kStartGroup field.
class WireReader {
 public:
  WireReader(absl::string_view message, const char* origin)
      : p_(message.data()), end_(message.data() + message.size()), origin_(origin) {}

  bool done() const { return p_ >= end_; }

  absl::Status Next(WireField* field) { return NextField(field, /*depth=*/0); }

 private:
  // Groups nest; bounding the depth bounds the recursion on hostile input.
  static constexpr int kMaxGroupDepth = 64;

  absl::Status NextField(WireField* field, int depth) {
    const char* start = p_;
    uint32_t tag;
    const char* q = ParseTag(p_, end_, &tag);
    if (q == nullptr) return Error(start, "truncated or overlong field tag");
    // Field number 0 is never valid, whatever the wire type: protobuf refuses the message.
    if ((tag >> 3) == 0) return Error(start, "invalid field number 0");
    field->number = tag >> 3;
    field->type = static_cast<WireType>(tag & 7);
    p_ = q;
    switch (field->type) {
      case WireType::kVarint:
        q = ParseVarint(p_, end_, &field->value);
        if (q == nullptr) return Error(start, "truncated or overlong varint");
        p_ = q;
        return absl::OkStatus();
      case WireType::kLen: {
        uint64_t len;
        q = ParseVarint(p_, end_, &len);
        if (q == nullptr) return Error(start, "truncated or overlong length");
        if (len > static_cast<uint64_t>(end_ - q)) return LengthError(start, field->number, len, q);
        field->bytes = absl::string_view(q, static_cast<size_t>(len));
        p_ = q + len;
        return absl::OkStatus();
      }
      case WireType::kFixed64:
        return ReadFixed(start, 8, field);
      case WireType::kFixed32:
        return ReadFixed(start, 4, field);
      case WireType::kStartGroup:
        return SkipGroup(start, field->number, depth + 1);
      case WireType::kEndGroup:
        return Error(start, "end-group tag without a matching start-group");
    }
    return Error(start, "invalid wire type");
  }

  absl::Status ReadFixed(const char* start, int size, WireField* field) {
    if (end_ - p_ < size) return Error(start, "truncated fixed-width field");
    uint64_t v = 0;
    for (int i = size - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p_[i]);
    field->value = v;
    p_ += size;
    return absl::OkStatus();
  }
  absl::Status SkipGroup(const char* start, uint32_t number, int depth);
  absl::Status Error(const char* at, absl::string_view what) const;
  absl::Status LengthError(const char* at, uint32_t number, uint64_t len,
                           const char* payload) const;

  const char* p_;
  const char* end_;
  const char* origin_;
};

// Calls fn(value) for each value that one occurrence of a repeated varint field holds: its value
// when unpacked (kVarint), each value of the run when packed (kLen); other wire types hold none.
// fn returns a Status, and its first error stops the walk. A truncated packed value is a DataLoss
// error naming its byte offset from `origin` and `what` (the field).
template <typename Fn>
absl::Status ForEachVarint(const WireField& field, const char* origin, absl::string_view what,
                           Fn&& fn) {
  if (field.type == WireType::kVarint) return fn(field.value);
  if (field.type != WireType::kLen) return absl::OkStatus();
  const char* p = field.bytes.data();
  const char* end = p + field.bytes.size();
  while (p < end) {
    uint64_t v;
    const char* q = ParseVarint(p, end, &v);
    if (q == nullptr) {
      return absl::DataLossError(absl::StrCat("malformed protobuf at byte ", p - origin,
                                              ": truncated or overlong varint in packed ", what));
    }
    SLUICE_RETURN_IF_ERROR(fn(v));
    p = q;
  }
  return absl::OkStatus();
}

// Which list a tf.train.Feature holds (its oneof case; the values are the
// field numbers).
enum class FeatureKind : uint8_t { kNone = 0, kBytesList = 1, kFloatList = 2, kInt64List = 3 };

// "bytes_list", "float_list", "int64_list"; "no list" for kNone.
absl::string_view FeatureKindName(FeatureKind kind);
// The kind that holds values of `dtype` (kInt64, kFloat32 or kBytes).
FeatureKind FeatureKindOf(DType dtype);

// The values of one tf.train.Feature, still serialized: the payloads of its
// list messages, in order.
struct FeatureView {
  FeatureKind kind = FeatureKind::kNone;
  absl::InlinedVector<absl::string_view, 1> lists;
};

// Applies one serialized Feature message to *view as protobuf's parser would:
// a list of the kind already held is appended (a repeated message field
// merges), a list of another kind replaces it (oneof). Unknown fields are
// skipped.
absl::Status MergeFeature(absl::string_view feature, const char* origin, FeatureView* view);

// The number of values in the view's lists. Int64 and float lists may be
// packed, unpacked or both (occurrences concatenate).
absl::StatusOr<int64_t> CountValues(const FeatureView& view, const char* origin);

// Writes the view's `n` values (n from CountValues) into elements
// [offset, offset + n) of `out`, whose dtype matches the view's kind.
absl::Status DecodeValues(const FeatureView& view, const char* origin, int64_t n, Tensor* out,
                          int64_t offset);

// For one spec entry, the payloads of the value field (2) of the last map
// entry with its name, when one was seen.
struct MapSlot {
  bool present = false;
  absl::InlinedVector<absl::string_view, 1> values;
};

// Walks one serialized map<string, Message> (a Features or FeatureLists
// message: repeated entries of key = 1, value = 2), filling the slot of every
// key in `index`: the last entry with a key wins, as in protobuf; value
// occurrences inside one entry are kept for merging; keys may follow values.
absl::Status CollectMapValues(absl::string_view map, const char* origin, const FeatureIndex& index,
                              size_t* hint, absl::Span<MapSlot> slots);

// Merges a slot's Feature payloads into one view; false when the feature is
// absent (no entry, or an entry whose Feature holds no list).
absl::StatusOr<bool> SlotFeature(const MapSlot& slot, const char* origin, FeatureView* view);

// The tensor for one Example (or SequenceExample context) spec entry, from
// the feature's values, or its default when `view` is null (absent). Errors
// name the feature.
absl::StatusOr<Tensor> FeatureTensor(absl::string_view name, const FeatureConfig& config,
                                     const FeatureView* view, const char* origin);

// Parses a Features message's spec entries into tensors in spec order: the
// shared core of ParseExample and the SequenceExample context.
absl::Status MaterializeFeatures(const FeatureSpec& spec, absl::Span<const MapSlot> slots,
                                 const char* origin, std::vector<Tensor>* out);

// `status` with `prefix` put before its message.
absl::Status Prefixed(absl::string_view prefix, const absl::Status& status);

}  // namespace sluice::internal

#endif  // SLUICE_IO_FEATURE_WIRE_H_
