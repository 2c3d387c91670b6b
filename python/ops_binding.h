#ifndef SLUICE_PYTHON_OPS_BINDING_H_
#define SLUICE_PYTHON_OPS_BINDING_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataset/batch_rows.h"
#include "dataset/dataset.h"
#include "dataset/element_spec.h"
#include "ops/random_resized_crop.h"

// sluice.ops: the C++ element functions (parse, decode, crop, flip, normalize, Keras'
// augmentation layers) as Python objects that Dataset.map runs without calling back into Python,
// composed in order.
namespace sluice::python {

namespace py = pybind11;

// One built-in function of an element, on one of its components.
struct OpStep {
  std::string description;  // "decode_jpeg(channels=3)"
  MapFn fn;
  // The element_spec after this step, given the one before (tf.data learns it by tracing);
  // unset, or an unknown result: unknown. Map checks every element against it.
  std::function<ElementSpec(const ElementSpec&)> spec;
  // What DecodeAndRandomResizedCrop can do inside its resize (ResizeOutput): a compose() of a
  // crop followed by a flip and/or a float32 normalize of the same component runs as one call,
  // one pass over the output, bitwise the same as the steps one by one.
  enum class Fusable { kNone, kCrop, kFlip, kNormalize };
  Fusable fusable = Fusable::kNone;
  int component = 0;
  int64_t out_h = 0, out_w = 0;     // kCrop
  RandomResizedCropOptions crop;    // kCrop
  std::vector<float> mean, stddev;  // kNormalize
};

// sluice.ops.Op: steps applied in order.
struct PyOp {
  std::vector<std::shared_ptr<const OpStep>> steps;
  std::string Description() const;
};

// The element_spec of `input`'s elements after `op`: unknown where a step's is.
ElementSpec OutputSpec(const PyOp& op, const ElementSpec& input);

// The steps as one Map function, fusing what can be fused. With batch_size > 0 (the Map is right
// before a Batch of that size) and a fused crop last, the crop writes each result into its row of
// the batch (dataset/batch_rows.h), which the Batch then takes without a copy.
MapFn CompileOp(const PyOp& op, int64_t batch_size = 0);

// Registers the sluice.ops and sluice.io submodules of `m`.
void RegisterOps(py::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_OPS_BINDING_H_
