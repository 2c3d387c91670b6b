#include "train/layers/summary.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/layers/sequential.h"

namespace sluice::train::layers {
namespace {

struct Counts {
  int64_t trainable = 0;
  int64_t non_trainable = 0;
};

Counts CountParameters(Module& m) {
  Counts c;
  for (autodiff::Variable* v : m.Variables()) {
    if (v->host_resident()) continue;
    (v->updated() ? c.trainable : c.non_trainable) += v->shape().num_elements();
  }
  return c;
}

// 1234567 -> "1,234,567".
std::string Grouped(int64_t n) {
  std::string digits = absl::StrCat(n);
  std::string out;
  const int first = static_cast<int>(digits.size()) % 3;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && static_cast<int>(i) % 3 == first) out += ',';
    out += digits[i];
  }
  return out;
}

// [B, 10] -> "(None, 10)", as Keras prints a batch of unknown size.
std::string BatchShape(const Shape& shape) {
  std::vector<std::string> dims = {"None"};
  for (int i = 1; i < shape.rank(); ++i) dims.push_back(absl::StrCat(shape.dim(i)));
  return absl::StrCat("(", absl::StrJoin(dims, ", "), ")");
}

}  // namespace

std::string Summary(Module& model) {
  struct Row {
    std::string layer, shape, params;
  };
  std::vector<Row> rows;
  auto* sequential = dynamic_cast<Sequential*>(&model);
  std::vector<Module*> children = model.Children();
  if (children.empty()) children.push_back(&model);
  for (size_t i = 0; i < children.size(); ++i) {
    Module& m = *children[i];
    std::string shape = "?";
    if (!m.built()) {
      shape = "unbuilt";
    } else if (sequential != nullptr && sequential->output_shape(i)) {
      shape = BatchShape(*sequential->output_shape(i));
    }
    const Counts c = CountParameters(m);
    std::string layer =
        children.size() == 1 && &m == &model ? m.name() : absl::StrCat(i, "/", m.name());
    if (!m.trainable()) absl::StrAppend(&layer, " (frozen)");
    rows.push_back({std::move(layer), std::move(shape), Grouped(c.trainable + c.non_trainable)});
  }
  size_t w0 = 24, w1 = 20;  // as wide as Keras' columns, or the widest entry
  for (const Row& r : rows) {
    w0 = std::max(w0, r.layer.size() + 2);
    w1 = std::max(w1, r.shape.size() + 2);
  }
  const size_t width = w0 + w1 + 12;
  std::string out = absl::StrCat("Model: \"", model.name(), "\"\n", std::string(width, '_'), "\n");
  absl::StrAppendFormat(&out, "%-*s%-*s%s\n", static_cast<int>(w0), "Layer", static_cast<int>(w1),
                        "Output Shape", "Param #");
  absl::StrAppend(&out, std::string(width, '='), "\n");
  for (const Row& r : rows) {
    absl::StrAppendFormat(&out, "%-*s%-*s%s\n", static_cast<int>(w0), r.layer, static_cast<int>(w1),
                          r.shape, r.params);
  }
  const Counts total = CountParameters(model);
  absl::StrAppend(&out, std::string(width, '='), "\n",
                  "Total params: ", Grouped(total.trainable + total.non_trainable), "\n",
                  "Trainable params: ", Grouped(total.trainable), "\n",
                  "Non-trainable params: ", Grouped(total.non_trainable), "\n",
                  std::string(width, '_'), "\n");
  return out;
}

absl::StatusOr<std::string> Summary(Module& model, const Shape& input_shape) {
  SLUICE_RETURN_IF_ERROR(model.Build(input_shape));
  SLUICE_RETURN_IF_ERROR(CallOnZeros(model, input_shape, model.device()));
  return Summary(model);
}

}  // namespace sluice::train::layers
