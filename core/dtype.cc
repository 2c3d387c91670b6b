#include "core/dtype.h"

#include "absl/strings/str_cat.h"

namespace sluice {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return 1;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kFloat32:
      return 4;
    case DType::kBytes:
      return sizeof(std::string);
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat32:
      return "float32";
    case DType::kBytes:
      return "bytes";
  }
  return "unknown";
}

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (DType d : {DType::kUint8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kBytes}) {
    if (DTypeName(d) == name) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

}  // namespace sluice
