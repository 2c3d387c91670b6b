#ifndef SLUICE_TRAIN_LAYERS_SEQUENTIAL_H_
#define SLUICE_TRAIN_LAYERS_SEQUENTIAL_H_

#include <concepts>
#include <initializer_list>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

// One entry of Sequential's initialiser list: a layer by value (moved) or a unique_ptr to one,
// so that both `Sequential({Dense(64, Activation::kRelu), Dense(10)})` and
// `Sequential({std::make_unique<Dense>(10)})` compile. `module` is mutable because an
// initializer_list's elements are const, and Sequential moves them out.
struct LayerEntry {
  template <typename M>
  requires std::derived_from<M, Module> LayerEntry(std::unique_ptr<M> m)
      : module(std::move(m)) {}  // NOLINT: implicit by design
  template <typename M>
  requires(std::derived_from<std::remove_cvref_t<M>, Module> && !std::is_lvalue_reference_v<M>)
      LayerEntry(M&& m)  // NOLINT: implicit by design
      : module(std::make_unique<std::remove_cvref_t<M>>(std::move(m))) {}
  mutable std::unique_ptr<Module> module;
};

// keras.Sequential: runs its modules in order; its variables are theirs, in order (trainable
// ones first in Variables()). Module i's variables are named "i/<name>" ("0/dense/kernel",
// "2/dense/kernel"), so that they stay unique, also those a lazy layer creates on its first
// call. An error inside module i names it: "layer 1 (dense): ...".
//
// RecomputeLayers(begin, end) makes modules [begin, end) one recomputed segment (RecomputeGrad,
// tf.recompute_grad; PyTorch's checkpoint_sequential): under a tape only the segment's input and
// output are kept, and its activations are computed again in the backward pass. The modules,
// their variables and names stay where they are, so a checkpoint loads with or without it.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::unique_ptr<Module>> modules);
  Sequential(std::initializer_list<LayerEntry> layers);

  Sequential& Add(std::unique_ptr<Module> module);
  // InvalidArgument for an empty range, one past size(), or one that overlaps another segment.
  absl::Status RecomputeLayers(size_t begin, size_t end);
  // The recomputed segments, [begin, end) each, in order.
  const std::vector<std::pair<size_t, size_t>>& recomputed_segments() const { return segments_; }
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "sequential"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  std::vector<autodiff::Variable*> Variables() override { return ChildVariables(*this); }
  std::vector<Module*> Children() override;
  size_t size() const { return modules_.size(); }
  Module& module(size_t i) { return *modules_[i]; }
  // Module i's output shape in the last call (Summary's "Output Shape"); unset before any.
  const std::optional<Shape>& output_shape(size_t i) const { return output_shapes_[i]; }

 private:
  // Modules [begin, end) in order, each error named by its layer.
  absl::StatusOr<Tensor> RunLayers(size_t begin, size_t end, Tensor x, bool training);
  // Prefixes module i's variables that are not named yet (those created since the last call).
  void NameNewVariables(size_t i);
  // "layer i (dense)", made once (interned, so that profiler spans may point at it): how errors,
  // check-numerics messages and the profiler's forward spans name module i.
  const char* LayerLabel(size_t i);

  std::vector<std::unique_ptr<Module>> modules_;
  std::vector<std::optional<Shape>> output_shapes_;
  absl::flat_hash_set<const autodiff::Variable*> named_;
  bool all_named_ = true;  // false while some module may still create variables
  std::vector<const char*> layer_labels_;
  std::vector<std::pair<size_t, size_t>> segments_;  // sorted by begin, disjoint
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_SEQUENTIAL_H_
