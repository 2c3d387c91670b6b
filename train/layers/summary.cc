#include "train/layers/summary.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/layers/model.h"
#include "train/layers/sequential.h"
#include "train/layers/symbolic_tensor.h"

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

}  // namespace

std::string Summary(Module& model) {
  struct Row {
    std::string layer, shape, params, connected;
  };
  std::vector<Row> rows;
  auto* sequential = dynamic_cast<Sequential*>(&model);
  auto* functional = dynamic_cast<Model*>(&model);
  if (functional != nullptr) {
    // Keras' functional summary: a row per call, a shared layer's parameters on its first.
    absl::flat_hash_set<const Module*> counted;
    const std::vector<Model::Step>& steps = functional->steps();
    for (const Model::Step& step : steps) {
      Row row{.shape = BatchShapeString(step.node->shape), .params = "0", .connected = "-"};
      if (step.layer == nullptr) {
        row.layer = absl::StrCat(step.name, " (input)");
      } else {
        row.layer = absl::StrCat(step.name, " (", step.layer->name(), ")");
        if (!step.layer->trainable()) absl::StrAppend(&row.layer, " (frozen)");
        if (counted.insert(step.layer).second) {
          const Counts c = CountParameters(*step.layer);
          row.params = Grouped(c.trainable + c.non_trainable);
        }
        std::vector<std::string> from;
        for (int i : step.inputs) from.push_back(steps[i].name);
        row.connected = absl::StrJoin(from, ", ");
      }
      rows.push_back(std::move(row));
    }
  } else {
    std::vector<Module*> children = model.Children();
    if (children.empty()) children.push_back(&model);
    for (size_t i = 0; i < children.size(); ++i) {
      Module& m = *children[i];
      std::string shape = "?";
      if (!m.built()) {
        shape = "unbuilt";
      } else if (sequential != nullptr && sequential->output_shape(i)) {
        shape = BatchShapeString(*sequential->output_shape(i));
      }
      const Counts c = CountParameters(m);
      std::string layer =
          children.size() == 1 && &m == &model ? m.name() : absl::StrCat(i, "/", m.name());
      if (!m.trainable()) absl::StrAppend(&layer, " (frozen)");
      rows.push_back({std::move(layer), std::move(shape), Grouped(c.trainable + c.non_trainable)});
    }
  }
  size_t w0 = 24, w1 = 20, w2 = 12;  // as wide as Keras' columns, or the widest entry
  for (const Row& r : rows) {
    w0 = std::max(w0, r.layer.size() + 2);
    w1 = std::max(w1, r.shape.size() + 2);
    w2 = std::max(w2, r.params.size() + 2);
  }
  size_t width = w0 + w1 + w2;
  if (functional != nullptr) {
    size_t w3 = 12;
    for (const Row& r : rows) w3 = std::max(w3, r.connected.size());
    width += w3;
  }
  auto line = [&](const std::string& a, const std::string& b, const std::string& c,
                  const std::string& d) {
    std::string out =
        absl::StrFormat("%-*s%-*s%-*s%s", static_cast<int>(w0), a, static_cast<int>(w1), b,
                        static_cast<int>(w2), c, functional != nullptr ? d : "");
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = absl::StrCat("Model: \"", model.name(), "\"\n", std::string(width, '_'), "\n");
  absl::StrAppend(&out, line("Layer", "Output Shape", "Param #", "Connected to"));
  absl::StrAppend(&out, std::string(width, '='), "\n");
  for (const Row& r : rows) absl::StrAppend(&out, line(r.layer, r.shape, r.params, r.connected));
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
