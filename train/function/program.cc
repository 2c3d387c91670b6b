#include "train/function/program.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"

namespace sluice::train::function {
namespace {

// Enough for every backend's kernels (CUDA's wants 256 for its vector loads); large blocks on
// pages, as the CPU allocator gives them: oneDNN's convolutions ran 10-15% slower on blocks
// only 256-aligned (cnn step, Intel Xeon).
constexpr size_t kAlignment = 256;
constexpr size_t kLargeAlignment = 4096;
constexpr size_t kLargeBytes = 64 * 1024;

size_t RoundUp(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// First fit of the slots in `order`: each at the lowest aligned offset clear of the placed slots
// whose lives overlap its own. Returns the arena's size; writes the offsets into `offsets`.
size_t FirstFit(const std::vector<SlotPlacement>& slots, const std::vector<size_t>& order,
                std::vector<size_t>& offsets) {
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t i : order) {
    const SlotPlacement& s = slots[i];
    const size_t alignment = s.alignment;
    const size_t bytes = RoundUp(s.bytes, alignment);
    std::vector<size_t> live;  // placed slots alive with this one, by offset
    for (size_t j : placed) {
      if (slots[j].first <= s.last && s.first <= slots[j].last) live.push_back(j);
    }
    std::sort(live.begin(), live.end(),
              [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
    size_t offset = 0;
    for (size_t j : live) {
      if (offsets[j] >= offset + bytes) break;  // the gap before j fits
      offset = std::max(
          offset, RoundUp(offsets[j] + RoundUp(slots[j].bytes, slots[j].alignment), alignment));
    }
    offsets[i] = offset;
    total = std::max(total, offset + bytes);
    placed.push_back(i);
  }
  return total;
}

}  // namespace

size_t PlaceSlots(std::vector<SlotPlacement>& slots) {
  // No order wins on every graph: the largest first, the longest-lived first, and in order of
  // first use (which packs a chain of layers tightly) are each tried, and the smallest arena kept.
  using Less = std::function<bool(const SlotPlacement&, const SlotPlacement&)>;
  const std::vector<Less> orders = {
      [](const SlotPlacement& a, const SlotPlacement& b) { return a.bytes > b.bytes; },
      [](const SlotPlacement& a, const SlotPlacement& b) {
        return a.last - a.first != b.last - b.first ? a.last - a.first > b.last - b.first
                                                    : a.bytes > b.bytes;
      },
      [](const SlotPlacement& a, const SlotPlacement& b) {
        return a.first != b.first ? a.first < b.first : a.bytes > b.bytes;
      },
  };
  size_t best = SIZE_MAX;
  std::vector<size_t> best_offsets, offsets(slots.size());
  for (const Less& less : orders) {
    std::vector<size_t> order(slots.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return less(slots[a], slots[b]); });
    const size_t total = FirstFit(slots, order, offsets);
    if (total < best) {
      best = total;
      best_offsets = offsets;
    }
  }
  for (size_t i = 0; i < slots.size(); ++i) slots[i].offset = best_offsets[i];
  return slots.empty() ? 0 : best;
}

absl::StatusOr<std::unique_ptr<Program>> Program::Plan(RecordingBackend& recorder,
                                                       std::vector<Tensor>& outputs,
                                                       bool device_graphs) {
  std::unique_ptr<Program> program(new Program(recorder.inner()));
  program->at_every_call_ = std::move(recorder.at_every_call());
  std::vector<RecordedSlot>& slots = recorder.slots();
  const int end = static_cast<int>(recorder.calls().size());
  // The outputs' slots live to the end; an output the calls never wrote (a constant) stays as is.
  std::vector<Argument> output_args(outputs.size());
  std::vector<char> is_output(slots.size(), 0);
  for (size_t i = 0; i < outputs.size(); ++i) {
    output_args[i] = recorder.ArgumentOf(outputs[i]);
    const int slot = output_args[i].slot;
    if (slot >= 0 && slots[slot].first >= 0 && !slots[slot].produced) {
      is_output[slot] = 1;
      slots[slot].last = end;
    } else {
      output_args[i].slot = -1;
    }
  }
  // Escaped blocks stay where they are; the others that a call used go to the arena.
  std::vector<std::shared_ptr<Buffer>> pinned(slots.size());
  std::vector<SlotPlacement> placements;
  std::vector<int> placement_of(slots.size(), -1);
  for (size_t i = 0; i < slots.size(); ++i) {
    const RecordedSlot& s = slots[i];
    if (s.first < 0 || s.produced) continue;
    if (!is_output[i]) {
      if (std::shared_ptr<Buffer> alive = s.buffer.lock()) {
        program->pinned_bytes_ += alive->size();
        pinned[i] = std::move(alive);
        continue;
      }
    }
    placement_of[i] = static_cast<int>(placements.size());
    placements.push_back(
        SlotPlacement{.bytes = s.bytes,
                      .first = s.first,
                      .last = s.last,
                      .alignment = s.bytes >= kLargeBytes ? kLargeAlignment : kAlignment});
  }
  program->arena_bytes_ = PlaceSlots(placements);
  // The trace's freed intermediates sit idle in the allocator's cache: the arena replaces them.
  SLUICE_RETURN_IF_ERROR(recorder.inner().ReleaseCachedMemory());
  std::shared_ptr<Buffer> arena;
  if (program->arena_bytes_ > 0) {
    SLUICE_ASSIGN_OR_RETURN(program->arena_,
                            recorder.inner().Allocate(
                                DType::kUint8, Shape{static_cast<int64_t>(program->arena_bytes_)}));
    arena = program->arena_.buffer();
  }
  program->produced_.resize(slots.size());
  for (RecordedCall& call : recorder.calls()) {
    BoundCall bound;
    for (size_t a = 0; a < call.args.size(); ++a) {
      Argument& arg = call.args[a];
      if (arg.slot < 0) {
        bound.tensors.push_back(arg.external);
      } else if (slots[arg.slot].produced) {
        bound.tensors.emplace_back();
        bound.produced_args.emplace_back(a, arg.slot);
      } else if (pinned[arg.slot]) {
        SLUICE_ASSIGN_OR_RETURN(
            Tensor t, Tensor::FromBuffer(arg.dtype, arg.shape, pinned[arg.slot], arg.offset));
        bound.tensors.push_back(std::move(t));
      } else {
        const SlotPlacement& p = placements[placement_of[arg.slot]];
        SLUICE_ASSIGN_OR_RETURN(
            Tensor t, Tensor::FromBuffer(arg.dtype, arg.shape, arena, p.offset + arg.offset));
        bound.tensors.push_back(std::move(t));
      }
      arg.external = Tensor();  // held by the bound tensor now
    }
    bound.call = std::move(call);
    program->calls_.push_back(std::move(bound));
  }
  recorder.calls().clear();
  program->produced_by_graph_.assign(slots.size(), 0);
  // Runs of calls without host work become graphs where the backend captures them; the host-work
  // calls between them run one by one.
  const bool graphs = device_graphs && recorder.inner().CapturesGraphs();
  std::vector<Segment>& segments = program->segments_;
  for (size_t i = 0; i < program->calls_.size(); ++i) {
    const bool capture = graphs && !program->calls_[i].call.host_work;
    if (segments.empty() || capture != segments.back().capture) {
      segments.push_back(Segment{.begin = i, .end = i + 1, .capture = capture});
    } else {
      segments.back().end = i + 1;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Argument& arg = output_args[i];
    if (arg.slot < 0) continue;
    const SlotPlacement& p = placements[placement_of[arg.slot]];
    SLUICE_ASSIGN_OR_RETURN(outputs[i],
                            Tensor::FromBuffer(arg.dtype, arg.shape, arena, p.offset + arg.offset));
  }
  return program;
}

int Program::device_graphs() const {
  int n = 0;
  for (const Segment& segment : segments_) n += segment.graph != nullptr;
  return n;
}

absl::Status Program::RunCalls(size_t begin, size_t end, bool spans) {
  for (size_t i = begin; i < end; ++i) {
    BoundCall& bound = calls_[i];
    // The profile of a compiled step: each replayed kernel by name (the eager step's layer and
    // backward spans come from code a replay does not run).
    std::optional<profiler::Span> span;
    if (spans) span.emplace("replay", bound.call.name);
    for (const auto& [arg, slot] : bound.produced_args) bound.tensors[arg] = produced_[slot];
    if (bound.call.run_producing) {
      SLUICE_ASSIGN_OR_RETURN(Tensor workspace, bound.call.run_producing(backend_, bound.tensors));
      if (bound.call.produces >= 0) produced_[bound.call.produces] = std::move(workspace);
    } else {
      absl::Status status = bound.call.run(backend_, bound.tensors);
      if (!status.ok() && bound.call.check) return status;
      if (!status.ok()) {
        return WithContext(status, absl::StrCat("replaying ", bound.call.name, ": "));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Program::CaptureAndLaunch(Segment& segment) {
  absl::StatusOr<std::unique_ptr<backend::DeviceGraph>> graph;
  {
    profiler::Span span("replay", "capture device graph");
    graph = backend_.Capture([&] { return RunCalls(segment.begin, segment.end, false); });
  }
  if (!graph.ok()) {
    // No later segment is captured either: a graph would freeze the address of a workspace
    // (Pool2DForward's) that this segment, now run call by call, makes anew at every replay.
    for (Segment& s : segments_) s.capture = false;
    if (capture_error_.ok()) {
      capture_error_ = WithContext(
          graph.status(), absl::StrCat("capturing calls ", segment.begin, " to ", segment.end - 1,
                                       " (", calls_[segment.begin].call.name, " to ",
                                       calls_[segment.end - 1].call.name, ") as a device graph: "));
    }
    return RunCalls(segment.begin, segment.end, true);
  }
  segment.graph = *std::move(graph);
  for (size_t i = segment.begin; i < segment.end; ++i) {
    if (calls_[i].call.produces >= 0) produced_by_graph_[calls_[i].call.produces] = 1;
  }
  return segment.graph->Launch();
}

absl::Status Program::Replay() {
  for (Segment& segment : segments_) {
    if (segment.graph) {
      profiler::Span span("replay", "device graph");
      SLUICE_RETURN_IF_ERROR(segment.graph->Launch());
    } else if (segment.capture) {
      SLUICE_RETURN_IF_ERROR(CaptureAndLaunch(segment));
    } else {
      SLUICE_RETURN_IF_ERROR(RunCalls(segment.begin, segment.end, true));
    }
  }
  for (size_t slot = 0; slot < produced_.size(); ++slot) {
    if (!produced_by_graph_[slot]) produced_[slot] = Tensor();
  }
  for (const std::function<void()>& fn : at_every_call_) fn();
  return absl::OkStatus();
}

}  // namespace sluice::train::function
