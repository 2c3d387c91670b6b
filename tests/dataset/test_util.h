#ifndef SLUICE_TESTS_DATASET_TEST_UTIL_H_
#define SLUICE_TESTS_DATASET_TEST_UTIL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/config.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/iterator.h"
#include "gtest/gtest.h"

namespace sluice::testing {

// The contract: destroying an iterator mid-stream returns within 100 ms.
// Sanitizers slow every instruction down several times, so their builds get
// a proportionally larger bound for the same check.
#if defined(ABSL_HAVE_THREAD_SANITIZER) || defined(ABSL_HAVE_ADDRESS_SANITIZER)
inline constexpr int64_t kCancelBudgetMs = 500;
#else
inline constexpr int64_t kCancelBudgetMs = 100;
#endif

// Every element of `it` until the end; the first error stops it.
inline absl::StatusOr<std::vector<Element>> Drain(Iterator& it, int64_t limit = -1) {
  std::vector<Element> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.GetNext());
    if (!e) break;
    out.push_back(std::move(*e));
  }
  return out;
}

// Every element of `ds`, each checked against ds.element_spec(): a spec stricter than what the
// op yields would make its valid checkpoints unrestorable.
inline absl::StatusOr<std::vector<Element>> Collect(const Dataset& ds) {
  auto it = ds.MakeIterator();
  absl::StatusOr<std::vector<Element>> out = Drain(*it);
  if (out.ok()) {
    const ElementSpec spec = ds.element_spec();
    for (size_t i = 0; i < out->size(); ++i) {
      const absl::Status s = spec.Check((*out)[i]);
      EXPECT_TRUE(s.ok()) << ds.DebugString() << ": element " << i << " is not its element_spec "
                          << spec.DebugString() << ": " << s;
    }
  }
  return out;
}

// The int64 scalar first component of each element.
inline std::vector<int64_t> Ints(const std::vector<Element>& elements) {
  std::vector<int64_t> out;
  for (const Element& e : elements) out.push_back(e.at(0).flat<int64_t>()[0]);
  return out;
}

// The int64 scalar first component of an element.
inline int64_t Value(const Element& e) { return e[0].scalar<int64_t>(); }

// A context for driving internal (non-sticky) iterators directly.
inline IteratorContext TestContext(int threads = 2) {
  IteratorContext ctx;
  ctx.runtime = std::make_shared<Runtime>(threads);
  ctx.cancellation = std::make_shared<CancellationManager>();
  ctx.stats = std::make_shared<StatsRegistry>();
  return ctx;
}

// x -> Range(10x, 10x + x): x elements (FlatMap's and Interleave's inner datasets).
inline absl::StatusOr<Dataset> Tens(Element e) {
  const int64_t x = Value(e);
  return Dataset::Range(x * 10, x * 10 + x);
}

// x -> three elements carrying their Map seeds.
inline absl::StatusOr<Dataset> InnerSeeds(Element) {
  return Dataset::Range(3).Map([](Element, const ElementContext& c) -> absl::StatusOr<Element> {
    return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(c.seed >> 1))};
  });
}

inline std::vector<int64_t> Iota(int64_t start, int64_t stop) {
  std::vector<int64_t> v;
  for (int64_t i = start; i < stop; ++i) v.push_back(i);
  return v;
}

// The whole of the iteration `start` (an iterator's Save before its first element) begins: each
// new iterator of a dataset is another iteration (another shuffle order, other random draws).
inline absl::StatusOr<std::vector<Element>> CollectFrom(const Dataset& ds,
                                                        const std::string& start) {
  auto it = ds.MakeIterator();
  SLUICE_RETURN_IF_ERROR(it->Restore(start));
  return Drain(*it);
}

// Checks the checkpoint contract: for every k in `ks`, read k elements,
// save, restore into a fresh iterator, read the rest; the two halves equal
// an uninterrupted run of the same iteration.
inline void ExpectCheckpointsResumeExactly(const Dataset& ds, const std::vector<int64_t>& ks) {
  for (int64_t k : ks) {
    auto it = ds.MakeIterator();
    auto start = it->Save();
    ASSERT_TRUE(start.ok()) << start.status();
    auto full = CollectFrom(ds, *start);
    ASSERT_TRUE(full.ok()) << full.status();
    auto first = Drain(*it, k);
    ASSERT_TRUE(first.ok()) << first.status();
    auto saved = it->Save();
    ASSERT_TRUE(saved.ok()) << "k=" << k << ": " << saved.status();
    it.reset();
    auto fresh = ds.MakeIterator();
    absl::Status restored = fresh->Restore(*saved);
    ASSERT_TRUE(restored.ok()) << "k=" << k << ": " << restored;
    auto rest = Drain(*fresh);
    ASSERT_TRUE(rest.ok()) << rest.status();
    std::vector<Element> joined = std::move(*first);
    for (auto& e : *rest) joined.push_back(std::move(e));
    ASSERT_EQ(joined.size(), full->size()) << "k=" << k;
    for (size_t i = 0; i < joined.size(); ++i) {
      ASSERT_TRUE(ElementsEqual(joined[i], (*full)[i]))
          << "k=" << k << " element " << i << ": " << ElementDebugString(joined[i]) << " vs "
          << ElementDebugString((*full)[i]);
    }
  }
}

// A map function that blocks once armed: the first call after Arm() notifies `entered` and
// waits for Release() (at most 30 s). For tests of what a cancellation does while a pipeline is
// inside a user function.
class BlockingMapGate {
 public:
  void Arm() { armed_ = true; }
  void Release() { release_.Notify(); }
  absl::Notification& entered() { return entered_; }
  // The map function: the identity, blocking as above.
  std::function<absl::StatusOr<Element>(Element)> Fn() {
    return [this](Element e) -> absl::StatusOr<Element> {
      if (armed_.load() && !blocked_.exchange(true)) {
        entered_.Notify();
        release_.WaitForNotificationWithTimeout(absl::Seconds(30));
      }
      return e;
    };
  }

 private:
  std::atomic<bool> armed_{false}, blocked_{false};
  absl::Notification entered_, release_;
};

// Restores `checkpoint` into a fresh iterator of `ds` on a thread of its own, which the armed
// `gate` stops inside a map function recomputing a saved element, and cancels the pipeline from
// another thread meanwhile. Returns whether that cancellation returned before the function was
// released (within 10 s): a node that restores holding a lock its cancellation callback takes
// makes it wait for the whole restore. Then releases the function and joins both threads.
inline bool CancellationReturnsDuringRestore(const Dataset& ds, const std::string& checkpoint,
                                             BlockingMapGate& gate) {
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  gate.Arm();
  std::thread restorer([&] { it->Restore(checkpoint).IgnoreError(); });
  const bool entered = gate.entered().WaitForNotificationWithTimeout(absl::Seconds(10));
  absl::Notification cancelled;
  std::thread canceller([&] {
    it->context().cancellation->Cancel();
    cancelled.Notify();
  });
  const bool returned = cancelled.WaitForNotificationWithTimeout(absl::Seconds(10));
  gate.Release();
  canceller.join();
  restorer.join();
  EXPECT_TRUE(entered) << "the restore never reached the map function";
  return entered && returned;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_DATASET_TEST_UTIL_H_
