#include "ops/cast.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/float16.h"

namespace sluice {
namespace {

template <typename T>
constexpr bool kIsInteger = std::is_integral_v<T>;

// The value as float32 or int64, whichever represents the source type exactly.
template <typename S>
auto Widen(S v) {
  if constexpr (kIsInteger<S>) {
    return static_cast<int64_t>(v);
  } else {
    return static_cast<float>(v);
  }
}

template <typename D, typename S>
D Convert(S v) {
  if constexpr (kIsInteger<D>) {
    constexpr int64_t kMin = std::numeric_limits<D>::min();
    constexpr int64_t kMax = std::numeric_limits<D>::max();
    if constexpr (kIsInteger<S>) {
      const int64_t x = v;
      return static_cast<D>(x < kMin ? kMin : (x > kMax ? kMax : x));
    } else {
      // Compare in double, where both bounds of every target type are exact (int64's max rounds
      // up to 2^63, which no in-range value reaches).
      const double x = static_cast<double>(static_cast<float>(v));
      if (std::isnan(x)) return 0;
      if (x <= static_cast<double>(kMin)) return static_cast<D>(kMin);
      if (x >= static_cast<double>(kMax)) return static_cast<D>(kMax);
      return static_cast<D>(x);  // Truncates toward zero.
    }
  } else if constexpr (std::is_same_v<D, float>) {
    return static_cast<float>(Widen(v));
  } else {  // Float16 or BFloat16.
    return D(static_cast<float>(Widen(v)));
  }
}

template <typename D, typename S>
void ConvertAll(const Tensor& from, Tensor& to) {
  const S* in = from.data<S>();
  D* out = to.data<D>();
  const int64_t n = from.num_elements();
  for (int64_t i = 0; i < n; ++i) out[i] = Convert<D, S>(in[i]);
}

// Calls f(D{}) with a value of the C++ type of `dtype`.
template <typename F>
void VisitNumeric(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kUint8:
      return f(uint8_t{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    case DType::kFloat16:
      return f(Float16{});
    case DType::kBFloat16:
      return f(BFloat16{});
    case DType::kFloat32:
      return f(float{});
    case DType::kBytes:
      return;
  }
}

}  // namespace

absl::StatusOr<Tensor> Cast(const Tensor& tensor, DType dtype) {
  if (tensor.dtype() == DType::kBytes || dtype == DType::kBytes) {
    return absl::InvalidArgumentError(absl::StrCat("Cast: cannot cast ", DTypeName(tensor.dtype()),
                                                   " to ", DTypeName(dtype),
                                                   " (only between numeric dtypes)"));
  }
  if (tensor.dtype() == dtype) return tensor;
  Tensor out(dtype, tensor.shape());
  VisitNumeric(tensor.dtype(), [&](auto s) {
    VisitNumeric(dtype, [&](auto d) { ConvertAll<decltype(d), decltype(s)>(tensor, out); });
  });
  return out;
}

}  // namespace sluice
