#include "io/feature_wire.h"

#include <bit>
#include <cstring>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_context.h"
#include "core/status_macros.h"

namespace sluice::internal {

absl::Status WireReader::SkipGroup(const char* start, uint32_t number, int depth) {
  if (depth > kMaxGroupDepth) return Error(start, "groups nested too deeply");
  while (true) {
    if (done()) return Error(start, absl::StrCat("unterminated group (field ", number, ")"));
    const char* field_start = p_;
    uint32_t tag;
    const char* q = ParseTag(p_, end_, &tag);
    if (q != nullptr && (tag & 7) == static_cast<uint32_t>(WireType::kEndGroup)) {
      if ((tag >> 3) != number) {
        return Error(field_start, absl::StrCat("end-group tag for field ", tag >> 3,
                                               " closes the group of field ", number));
      }
      p_ = q;
      return absl::OkStatus();
    }
    WireField inner;
    SLUICE_RETURN_IF_ERROR(NextField(&inner, depth));
  }
}

absl::Status WireReader::Error(const char* at, absl::string_view what) const {
  return absl::DataLossError(absl::StrCat("malformed protobuf at byte ", at - origin_, ": ", what));
}

absl::Status WireReader::LengthError(const char* at, uint32_t number, uint64_t len,
                                     const char* payload) const {
  return Error(at, absl::StrCat("length-delimited field ", number, " declares ", len,
                                " bytes, only ", end_ - payload, " remain"));
}

absl::string_view FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kBytesList:
      return "bytes_list";
    case FeatureKind::kFloatList:
      return "float_list";
    case FeatureKind::kInt64List:
      return "int64_list";
    case FeatureKind::kNone:
      break;
  }
  return "no list";
}

FeatureKind FeatureKindOf(DType dtype) {
  switch (dtype) {
    case DType::kInt64:
      return FeatureKind::kInt64List;
    case DType::kFloat32:
      return FeatureKind::kFloatList;
    case DType::kBytes:
      return FeatureKind::kBytesList;
    default:
      return FeatureKind::kNone;
  }
}

absl::Status MergeFeature(absl::string_view feature, const char* origin, FeatureView* view) {
  WireReader reader(feature, origin);
  WireField field;
  while (!reader.done()) {
    SLUICE_RETURN_IF_ERROR(reader.Next(&field));
    if (field.type != WireType::kLen || field.number < 1 || field.number > 3) continue;
    const auto kind = static_cast<FeatureKind>(field.number);
    if (kind != view->kind) {
      view->lists.clear();
      view->kind = kind;
    }
    view->lists.push_back(field.bytes);
  }
  return absl::OkStatus();
}

namespace {

// Varints end at the bytes without their high bit, so counting those counts
// the values (each is then checked when decoded).
int64_t CountPackedVarints(absl::string_view packed) {
  int64_t n = 0;
  for (char c : packed) n += static_cast<uint8_t>(c) < 0x80;
  return n;
}

absl::Status DataLossAt(absl::string_view at, const char* origin, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("malformed protobuf at byte ", at.data() - origin, ": ", what));
}

absl::Status TooManyValues(absl::string_view at, const char* origin) {
  // CountValues and the decoders agree on well-formed input; this guards
  // the output buffer should they not.
  return DataLossAt(at, origin, "more values than counted");
}

absl::Status FewerValues() {
  return absl::DataLossError("malformed protobuf: fewer values than counted");
}

// Calls `fn(field, list)` for each field 1 of the feature's lists (one value, or a packed
// run of them), in order; other fields are skipped. Stops at the first error.
template <typename Fn>
absl::Status ForEachValueField(const FeatureView& view, const char* origin, Fn fn) {
  WireField field;
  for (absl::string_view list : view.lists) {
    WireReader reader(list, origin);
    while (!reader.done()) {
      SLUICE_RETURN_IF_ERROR(reader.Next(&field));
      if (field.number == 1) SLUICE_RETURN_IF_ERROR(fn(field, list));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeInt64s(const FeatureView& view, const char* origin, int64_t n, int64_t* out) {
  int64_t i = 0;
  SLUICE_RETURN_IF_ERROR(ForEachValueField(
      view, origin, [&](const WireField& field, absl::string_view list) -> absl::Status {
        return ForEachVarint(field, origin, "int64_list", [&](uint64_t v) -> absl::Status {
          if (i >= n) {
            return TooManyValues(field.type == WireType::kVarint ? list : field.bytes, origin);
          }
          out[i++] = static_cast<int64_t>(v);
          return absl::OkStatus();
        });
      }));
  return i == n ? absl::OkStatus() : FewerValues();
}

float FloatFromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

absl::Status DecodeFloats(const FeatureView& view, const char* origin, int64_t n, float* out) {
  int64_t i = 0;
  SLUICE_RETURN_IF_ERROR(ForEachValueField(
      view, origin, [&](const WireField& field, absl::string_view list) -> absl::Status {
        if (field.type == WireType::kFixed32) {
          if (i >= n) return TooManyValues(list, origin);
          out[i++] = FloatFromBits(static_cast<uint32_t>(field.value));
        } else if (field.type == WireType::kLen) {
          const size_t size = field.bytes.size();
          const int64_t count = static_cast<int64_t>(size / 4);
          if (size % 4 != 0) {
            return DataLossAt(field.bytes, origin,
                              absl::StrCat("packed float_list of ", size, " bytes"));
          }
          if (count > n - i) return TooManyValues(field.bytes, origin);
          const auto* p = reinterpret_cast<const unsigned char*>(field.bytes.data());
          if constexpr (std::endian::native == std::endian::little) {
            if (size > 0) std::memcpy(out + i, p, size);
          } else {
            for (int64_t k = 0; k < count; ++k, p += 4) {
              out[i + k] = FloatFromBits(uint32_t{p[0]} | uint32_t{p[1]} << 8 |
                                         uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
            }
          }
          i += count;
        }
        return absl::OkStatus();
      }));
  return i == n ? absl::OkStatus() : FewerValues();
}

absl::Status DecodeBytes(const FeatureView& view, const char* origin, int64_t n, std::string* out) {
  int64_t i = 0;
  SLUICE_RETURN_IF_ERROR(ForEachValueField(
      view, origin, [&](const WireField& field, absl::string_view list) -> absl::Status {
        if (field.type != WireType::kLen) return absl::OkStatus();
        if (i >= n) return TooManyValues(list, origin);
        out[i++].assign(field.bytes.data(), field.bytes.size());
        return absl::OkStatus();
      }));
  return i == n ? absl::OkStatus() : FewerValues();
}

}  // namespace

absl::StatusOr<int64_t> CountValues(const FeatureView& view, const char* origin) {
  int64_t n = 0;
  SLUICE_RETURN_IF_ERROR(ForEachValueField(
      view, origin, [&](const WireField& field, absl::string_view) -> absl::Status {
        switch (view.kind) {
          case FeatureKind::kBytesList:
            n += field.type == WireType::kLen;
            break;
          case FeatureKind::kInt64List:
            if (field.type == WireType::kVarint) {
              ++n;
            } else if (field.type == WireType::kLen) {
              if (!field.bytes.empty() && static_cast<uint8_t>(field.bytes.back()) >= 0x80) {
                return DataLossAt(field.bytes, origin, "packed int64_list ends inside a varint");
              }
              n += CountPackedVarints(field.bytes);
            }
            break;
          case FeatureKind::kFloatList:
            if (field.type == WireType::kFixed32) {
              ++n;
            } else if (field.type == WireType::kLen) {
              if (field.bytes.size() % 4 != 0) {
                return DataLossAt(field.bytes, origin,
                                  absl::StrCat("packed float_list of ", field.bytes.size(),
                                               " bytes, not a multiple of 4"));
              }
              n += static_cast<int64_t>(field.bytes.size() / 4);
            }
            break;
          case FeatureKind::kNone:
            break;
        }
        return absl::OkStatus();
      }));
  return n;
}

absl::Status DecodeValues(const FeatureView& view, const char* origin, int64_t n, Tensor* out,
                          int64_t offset) {
  if (offset < 0 || n < 0 || offset + n > out->num_elements()) {
    return absl::InternalError(absl::StrCat("DecodeValues: ", n, " values at ", offset,
                                            " do not fit ", out->shape().DebugString()));
  }
  switch (view.kind) {
    case FeatureKind::kInt64List:
      return DecodeInt64s(view, origin, n, out->data<int64_t>() + offset);
    case FeatureKind::kFloatList:
      return DecodeFloats(view, origin, n, out->data<float>() + offset);
    case FeatureKind::kBytesList:
      return DecodeBytes(view, origin, n, out->data<std::string>() + offset);
    case FeatureKind::kNone:
      break;
  }
  if (n != 0) return absl::InternalError("DecodeValues: values counted in a feature with no list");
  return absl::OkStatus();
}

absl::Status CollectMapValues(absl::string_view map, const char* origin, const FeatureIndex& index,
                              size_t* hint, absl::Span<MapSlot> slots) {
  WireReader reader(map, origin);
  WireField field;
  while (!reader.done()) {
    SLUICE_RETURN_IF_ERROR(reader.Next(&field));
    if (field.number != 1 || field.type != WireType::kLen) continue;
    // One map entry: a message with key = 1 and value = 2, in any order.
    WireReader entry(field.bytes, origin);
    absl::string_view key;  // An entry without a key has the empty key.
    absl::InlinedVector<absl::string_view, 1> values;
    while (!entry.done()) {
      SLUICE_RETURN_IF_ERROR(entry.Next(&field));
      if (field.type != WireType::kLen) continue;
      if (field.number == 1) {
        key = field.bytes;
      } else if (field.number == 2) {
        values.push_back(field.bytes);
      }
    }
    const int i = index.Find(key, hint);
    if (i < 0) continue;
    slots[i].present = true;
    slots[i].values = std::move(values);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> SlotFeature(const MapSlot& slot, const char* origin, FeatureView* view) {
  view->kind = FeatureKind::kNone;
  view->lists.clear();
  if (!slot.present) return false;
  for (absl::string_view value : slot.values)
    SLUICE_RETURN_IF_ERROR(MergeFeature(value, origin, view));
  return view->kind != FeatureKind::kNone;
}

absl::StatusOr<Tensor> FeatureTensor(absl::string_view name, const FeatureConfig& config,
                                     const FeatureView* view, const char* origin) {
  const DType dtype = ConfigDType(config);
  const auto* fixed = std::get_if<FixedLenFeature>(&config);
  if (view == nullptr) {
    if (fixed == nullptr) return Tensor(dtype, Shape{0});
    if (!fixed->default_value.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("feature '%s' is missing and has no default", name));
    }
    // A copy, so that a caller writing into its result cannot change the spec.
    return fixed->default_value->Clone();
  }
  const FeatureKind want = FeatureKindOf(dtype);
  if (view->kind != want) {
    return absl::InvalidArgumentError(absl::StrFormat("feature '%s': expected %s, got %s", name,
                                                      FeatureKindName(want),
                                                      FeatureKindName(view->kind)));
  }
  absl::StatusOr<int64_t> n = CountValues(*view, origin);
  if (!n.ok()) return Prefixed(absl::StrFormat("feature '%s': ", name), n.status());
  Tensor out;
  if (fixed == nullptr) {
    out = Tensor(dtype, Shape{*n});
  } else {
    if (*n != fixed->shape.num_elements()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("feature '%s': expected %d values for shape %s, got %d", name,
                          fixed->shape.num_elements(), fixed->shape.DebugString(), *n));
    }
    out = Tensor(dtype, fixed->shape);
  }
  absl::Status s = DecodeValues(*view, origin, *n, &out, 0);
  if (!s.ok()) return Prefixed(absl::StrFormat("feature '%s': ", name), s);
  return out;
}

absl::Status MaterializeFeatures(const FeatureSpec& spec, absl::Span<const MapSlot> slots,
                                 const char* origin, std::vector<Tensor>* out) {
  out->reserve(out->size() + spec.features.size());
  FeatureView view;
  for (size_t i = 0; i < spec.features.size(); ++i) {
    const auto& [name, config] = spec.features[i];
    absl::StatusOr<bool> present = SlotFeature(slots[i], origin, &view);
    if (!present.ok()) return Prefixed(absl::StrFormat("feature '%s': ", name), present.status());
    SLUICE_ASSIGN_OR_RETURN(Tensor t,
                            FeatureTensor(name, config, *present ? &view : nullptr, origin));
    out->push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return WithContext(status, prefix);
}

}  // namespace sluice::internal
