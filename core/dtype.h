#ifndef SLUICE_CORE_DTYPE_H_
#define SLUICE_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/float16.h"

namespace sluice {

// Element types a Tensor can hold. kBytes holds variable-length strings
// (std::string per element), like tf.string.
enum class DType : uint8_t {
  kUint8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kBytes,
};

// Size in bytes of one element (sizeof(std::string) for kBytes).
size_t DTypeSize(DType dtype);
// "uint8", "int32", "int64", "float16", "bfloat16", "float32", "bytes".
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> DTypeFromName(absl::string_view name);

// Maps a C++ type to its DType at compile time.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUint8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<Float16> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::kBytes;
};

}  // namespace sluice

#endif  // SLUICE_CORE_DTYPE_H_
