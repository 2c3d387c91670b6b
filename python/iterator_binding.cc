#include "python/iterator_binding.h"

#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dataset/iterator.h"
#include "python/errors.h"
#include "python/tensor_binding.h"

namespace sluice::python {
namespace {

// The version of the dict state_dict() returns.
constexpr int kStateVersion = 1;

// How often a waiting next() takes the GIL to run Python's signal handlers (Ctrl-C).
constexpr auto kSignalCheckInterval = std::chrono::milliseconds(50);

using Result = absl::StatusOr<std::optional<Element>>;

// One C++ iterator and the thread that calls its GetNext, so that the Python thread waiting for
// an element can wake up for signals: a blocking GetNext cannot be interrupted, a wait on a
// condition variable can. An interrupted next() leaves its request running; the element it brings
// is the next call's, so none is lost.
class PyIterator {
 public:
  explicit PyIterator(const Dataset& dataset) : iterator_(dataset.MakeIterator()) {}

  // Joins the fetching thread (which may be finishing a GetNext) and destroys the C++ iterator,
  // which joins the pipeline's threads, without the GIL: they may be waiting for it to run a
  // Python map function.
  ~PyIterator() {
    py::gil_scoped_release release;
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    iterator_.reset();
  }

  py::object Next() {
    if (ended_) throw py::stop_iteration();
    Result result = Wait();
    if (!result.ok()) ThrowStatus(result.status());
    if (!result->has_value()) {
      ended_ = true;
      throw py::stop_iteration();
    }
    started_ = true;
    return ElementToPython(**result);
  }

  py::dict StateDict() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (requested_ || result_) {
        throw py::value_error(
            "state_dict(): an interrupted next() still holds an element; call next() first");
      }
    }
    absl::StatusOr<std::string> saved;
    {
      py::gil_scoped_release release;
      saved = iterator_->Save();
    }
    if (!saved.ok()) ThrowStatus(saved.status());
    py::dict state;
    state["version"] = kStateVersion;
    state["iterator"] = py::bytes(*saved);
    return state;
  }

  void LoadStateDict(const py::dict& state) {
    bool pending;
    {
      std::lock_guard<std::mutex> l(mu_);
      pending = requested_ || result_.has_value();
    }
    if (started_ || pending) {
      throw py::value_error(
          "load_state_dict() must come before the first next(): call it on a fresh iter(dataset)");
    }
    if (!state.contains("version") || !state.contains("iterator")) {
      throw py::value_error(
          "load_state_dict(): not a sluice iterator state (no 'version' and "
          "'iterator' keys)");
    }
    const int version = state["version"].cast<int>();
    if (version != kStateVersion) {
      throw py::value_error(absl::StrCat("load_state_dict(): state version ", version,
                                         ", this sluice reads version ", kStateVersion));
    }
    const std::string checkpoint = state["iterator"].cast<std::string>();
    absl::Status restored;
    {
      py::gil_scoped_release release;
      restored = iterator_->Restore(checkpoint);
    }
    if (!restored.ok()) ThrowStatus(restored);
    started_ = true;  // a second restore is an error in C++ too
  }

 private:
  // The next result: asks the fetching thread for one unless a request is running, then waits
  // for it without the GIL, taking the GIL every kSignalCheckInterval for signal handlers. A
  // handler's exception (KeyboardInterrupt) propagates and leaves the request running.
  Result Wait() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!thread_.joinable()) thread_ = std::thread([this] { Fetch(); });
    }
    // Ready when a result is there; otherwise a request is made unless one is running (another
    // Python thread's next() may have taken the result this one's request brought).
    auto ready = [this] {
      if (result_) return true;
      if (!requested_) {
        requested_ = true;
        cv_.notify_all();
      }
      return false;
    };
    while (true) {
      {
        py::gil_scoped_release release;
        std::unique_lock<std::mutex> l(mu_);
        if (cv_.wait_for(l, kSignalCheckInterval, ready)) {
          Result result = *std::move(result_);
          result_.reset();
          return result;
        }
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

  // The fetching thread: one GetNext per request.
  void Fetch() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      cv_.wait(l, [this] { return stop_ || requested_; });
      if (stop_) return;
      l.unlock();
      Result result = iterator_->GetNext();
      l.lock();
      requested_ = false;
      result_ = std::move(result);
      cv_.notify_all();
    }
  }

  std::unique_ptr<Iterator> iterator_;
  bool started_ = false;  // a next() returned, or a state was loaded (touched under the GIL)
  bool ended_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;        // guarded by mu_
  std::optional<Result> result_;  // guarded by mu_
  bool stop_ = false;             // guarded by mu_
  std::thread thread_;
};

}  // namespace

py::object MakePyIterator(const Dataset& dataset) {
  return py::cast(std::make_unique<PyIterator>(dataset));
}

void RegisterIterator(py::module_& m) {
  py::class_<PyIterator>(m, "Iterator", R"doc(
iter(dataset): yields the dataset's elements. next() waits without the GIL; Ctrl-C
interrupts it (the element it was waiting for is the next call's).
)doc")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyIterator::Next)
      .def("state_dict", &PyIterator::StateDict,
           "The position, as {'version': 1, 'iterator': bytes} (the C++ iterator's checkpoint), "
           "which nests in a training checkpoint (torch.save, pickle).")
      .def("load_state_dict", &PyIterator::LoadStateDict, py::arg("state_dict"),
           "Continues exactly where the iterator state_dict() came from was, on a fresh "
           "iter(dataset) of the same pipeline.")
      .def(py::pickle(
          [](const PyIterator&) -> py::tuple {
            throw py::type_error(
                "sluice.Iterator cannot be pickled; save iterator.state_dict() instead");
          },
          [](const py::tuple&) -> std::unique_ptr<PyIterator> {
            throw py::type_error("sluice.Iterator");
          }));
}

}  // namespace sluice::python
