#include "train/data/file_records.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/tensor.h"

namespace sluice::train::data {

Dataset FileRecords(const std::string& file, TFRecordOptions options) {
  options.with_index = true;
  const Tensor name = Tensor::Scalar<std::string>(file);
  return Dataset::TFRecord(file, options).Map([name](Element element) {
    element.push_back(name);
    return element;  // {record, index, file}
  });
}

absl::Status AtRecord(const absl::Status& status, absl::string_view file, int64_t index) {
  return WithContext(
      status, index < 0 ? absl::StrCat(file, ": ") : absl::StrCat(file, ": record ", index, ": "));
}

}  // namespace sluice::train::data
