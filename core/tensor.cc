#include "core/tensor.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

std::shared_ptr<Buffer> AllocateFor(DType dtype, int64_t n) {
  // A negative dimension; new[] throws the same for a negative length.
  if (n < 0) throw std::bad_array_new_length();
  const size_t bytes = static_cast<size_t>(n) * DTypeSize(dtype);
  if (dtype != DType::kBytes) return Buffer::Allocate(bytes);
  auto buffer = Buffer::Allocate(bytes, [n](void* p) {
    auto* s = static_cast<std::string*>(p);
    for (int64_t i = 0; i < n; ++i) s[i].~basic_string();
  });
  auto* s = static_cast<std::string*>(buffer->data());
  for (int64_t i = 0; i < n; ++i) new (&s[i]) std::string();
  return buffer;
}

template <typename T>
void AppendValues(const Tensor& t, int max_values, std::string* out) {
  const T* p = t.data<T>();
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n && i < max_values; ++i) {
    if (i > 0) out->append(", ");
    if constexpr (std::is_same_v<T, std::string>) {
      absl::StrAppend(out, "\"", absl::CHexEscape(p[i]), "\"");
    } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      absl::StrAppend(out, static_cast<float>(p[i]));
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      absl::StrAppend(out, static_cast<int>(p[i]));
    } else {
      absl::StrAppend(out, p[i]);
    }
  }
  if (n > max_values) out->append(", ...");
}

}  // namespace

Tensor::Tensor() : dtype_(DType::kFloat32), shape_({0}) {}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(AllocateFor(dtype, shape_.num_elements())) {}

absl::StatusOr<Tensor> Tensor::FromBuffer(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer,
                                          size_t byte_offset) {
  if (dtype == DType::kBytes) {
    return absl::InvalidArgumentError("FromBuffer: bytes tensors own their strings");
  }
  const size_t need = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  if (buffer == nullptr || byte_offset + need > buffer->size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FromBuffer: ", DTypeName(dtype), shape.DebugString(), " needs ", need, " bytes at offset ",
        byte_offset, ", buffer has ", buffer ? buffer->size() : 0));
  }
  return Tensor(dtype, std::move(shape), std::move(buffer), byte_offset);
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  if (dtype != DType::kBytes) std::memset(t.raw_data(), 0, t.byte_size());
  return t;
}

size_t Tensor::byte_size() const {
  if (dtype_ != DType::kBytes) return static_cast<size_t>(num_elements()) * DTypeSize(dtype_);
  size_t total = 0;
  for (const std::string& s : flat<std::string>()) total += s.size();
  return total;
}

size_t Tensor::RowBytes() const {
  int64_t row = 1;
  for (int i = 1; i < rank(); ++i) row *= shape_.dim(i);
  return static_cast<size_t>(row) * DTypeSize(dtype_);
}

absl::StatusOr<Tensor> Tensor::Slice(int64_t begin, int64_t end) const {
  if (rank() == 0) return absl::InvalidArgumentError("Slice: cannot slice a scalar");
  if (begin < 0 || end < begin || end > shape_.dim(0)) {
    return absl::OutOfRangeError(absl::StrCat("Slice: rows [", begin, ", ", end,
                                              ") out of range for shape ", shape_.DebugString()));
  }
  Shape s = shape_;
  s.set_dim(0, end - begin);
  return Tensor(dtype_, std::move(s), buffer_, offset_ + static_cast<size_t>(begin) * RowBytes());
}

absl::StatusOr<Tensor> Tensor::SubTensor(int64_t i) const {
  if (rank() == 0) return absl::InvalidArgumentError("SubTensor: cannot index a scalar");
  if (i < 0 || i >= shape_.dim(0)) {
    return absl::OutOfRangeError(
        absl::StrCat("SubTensor: row ", i, " out of range for shape ", shape_.DebugString()));
  }
  Shape s = shape_;
  s.RemoveDim(0);
  return Tensor(dtype_, std::move(s), buffer_, offset_ + static_cast<size_t>(i) * RowBytes());
}

absl::StatusOr<Tensor> Tensor::Reshape(Shape shape) const {
  if (shape.num_elements() != num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("Reshape: cannot reshape ", shape_.DebugString(),
                                                   " (", num_elements(), " elements) to ",
                                                   shape.DebugString()));
  }
  return Tensor(dtype_, std::move(shape), buffer_, offset_);
}

Tensor Tensor::Clone() const {
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::kBytes) {
    auto src = flat<std::string>();
    auto dst = t.flat<std::string>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else if (num_elements() > 0) {
    std::memcpy(t.raw_data(), raw_data(), byte_size());
  }
  return t;
}

absl::Status Tensor::CopyIntoRow(int64_t i, const Tensor& src) {
  if (rank() == 0 || i < 0 || i >= shape_.dim(0)) {
    return absl::OutOfRangeError(
        absl::StrCat("CopyIntoRow: row ", i, " out of range for shape ", shape_.DebugString()));
  }
  bool same = src.dtype() == dtype_ && src.rank() + 1 == rank();
  for (int d = 0; same && d < src.rank(); ++d) same = src.dim(d) == shape_.dim(d + 1);
  if (!same) {
    return absl::InvalidArgumentError(
        absl::StrCat("CopyIntoRow: cannot copy ", DTypeName(src.dtype()), src.shape().DebugString(),
                     " into a row of ", DTypeName(dtype_), shape_.DebugString()));
  }
  if (dtype_ == DType::kBytes) {
    std::string* dst = data<std::string>() + i * src.num_elements();
    const std::string* s = src.data<std::string>();
    for (int64_t k = 0; k < src.num_elements(); ++k) dst[k] = s[k];
  } else {
    const size_t row = RowBytes();
    if (row > 0) std::memcpy(static_cast<char*>(raw_data()) + i * row, src.raw_data(), row);
  }
  return absl::OkStatus();
}

bool Tensor::Equals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (dtype_ == DType::kBytes) {
    auto a = flat<std::string>();
    auto b = other.flat<std::string>();
    return std::equal(a.begin(), a.end(), b.begin());
  }
  const size_t n = byte_size();
  return n == 0 || std::memcmp(raw_data(), other.raw_data(), n) == 0;
}

void Tensor::ScalarMisuse(DType wanted) const {
  std::fprintf(stderr,
               "Tensor::scalar<%s>() on a tensor of %s, shape %s (%lld elements): it reads the "
               "one element of a tensor of its own type\n",
               std::string(DTypeName(wanted)).c_str(), std::string(DTypeName(dtype_)).c_str(),
               shape_.DebugString().c_str(), static_cast<long long>(num_elements()));
  std::abort();
}

std::string Tensor::DebugString(int max_values) const {
  std::string out = absl::StrCat(DTypeName(dtype_), shape_.DebugString(), " {");
  if (!device().is_cpu()) {
    absl::StrAppend(&out, "on ", device().DebugString());
  } else if (buffer_ != nullptr) {
    switch (dtype_) {
      case DType::kUint8:
        AppendValues<uint8_t>(*this, max_values, &out);
        break;
      case DType::kInt32:
        AppendValues<int32_t>(*this, max_values, &out);
        break;
      case DType::kInt64:
        AppendValues<int64_t>(*this, max_values, &out);
        break;
      case DType::kFloat16:
        AppendValues<Float16>(*this, max_values, &out);
        break;
      case DType::kBFloat16:
        AppendValues<BFloat16>(*this, max_values, &out);
        break;
      case DType::kFloat32:
        AppendValues<float>(*this, max_values, &out);
        break;
      case DType::kBytes:
        AppendValues<std::string>(*this, max_values, &out);
        break;
    }
  }
  out.append("}");
  return out;
}

}  // namespace sluice
