#include "python/iterator_binding.h"

#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "dataset/iterator.h"
#include "python/errors.h"
#include "python/py_function.h"
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
// is the next call's, so none is lost. Where the pipeline ends with a Prefetch, next() instead
// waits for its buffer itself (Iterator::WaitForNext, which it can leave for a signal) and then
// calls GetNext on the Python thread, which returns at once: the hand-off to the fetching thread
// and back cost two more wake-ups, 40-90 us an element on 2 cores.
class PyIterator {
 public:
  explicit PyIterator(const Dataset& dataset) : iterator_(dataset.MakeIterator()) {
    Live().insert(this);
  }

  ~PyIterator() {
    Live().erase(this);
    Close();
  }

  // Cancels the pipeline, joins the fetching thread (whose GetNext, an interrupted next()'s,
  // the cancellation ends) and destroys the C++ iterator, which joins the pipeline's threads,
  // without the GIL: they may be waiting for it to run a Python map function. Idempotent; next()
  // then raises.
  void Close() {
    py::gil_scoped_release release;
    {
      MutexLock l(&mu_);
      stop_ = true;
      // Another Python thread's next() may be in a GetNext of its own (CloseAll at exit).
      while (direct_) cv_.Wait(&mu_);
    }
    if (iterator_ != nullptr) iterator_->Cancel();
    cv_.SignalAll();
    if (thread_.joinable()) thread_.join();
    iterator_.reset();
  }

  // Closes every live iterator at exit, before the interpreter finalizes, and waits for the
  // Python calls their pipelines' threads are still making (which a closed iterator does not
  // wait for: they finish on their own). A pipeline thread that asked for the GIL later would be
  // stopped for good by Python, in the middle of C++ code.
  static void CloseAll() {
    StopPythonCalls();
    for (PyIterator* it : Live()) it->Close();
    py::gil_scoped_release release;  // the calls still running need it to finish
    WaitForPythonCalls();
  }

  py::object Next() {
    if (ended_) throw py::stop_iteration();
    CheckOpen();
    Result result = Wait();
    if (!result.ok()) RaiseSticky(result.status());
    if (!result->has_value()) {
      ended_ = true;
      throw py::stop_iteration();
    }
    started_ = returned_ = true;
    return ElementToPython(**result);
  }

  py::dict StateDict() {
    CheckOpen();
    if (Pending()) {
      throw py::value_error(
          "state_dict(): an interrupted next() still holds an element; call next() first");
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
    CheckOpen();
    if (started_ || Pending()) {
      throw py::value_error(
          "load_state_dict() must come before the first next(): call it on a fresh iter(dataset)");
    }
    if (!state.contains("version") || !state.contains("iterator")) {
      throw py::value_error(
          "load_state_dict(): not a sluice iterator state (no 'version' and 'iterator' keys)");
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
  // Raises the iterator's error: the first time as ThrowStatus makes it, then that same
  // exception object, with the traceback it first had (raising an object again appends to its
  // traceback), however many other errors the process has seen since.
  [[noreturn]] void RaiseSticky(const absl::Status& status) {
    if (!sticky_) {
      try {
        ThrowStatus(status);
      } catch (py::error_already_set& error) {
        sticky_ = error.value();
        PyObject* traceback = PyException_GetTraceback(sticky_.ptr());  // a new reference
        sticky_traceback_ = py::reinterpret_steal<py::object>(
            traceback != nullptr ? traceback : py::none().release().ptr());
        throw;
      }
    }
    PyException_SetTraceback(sticky_.ptr(), sticky_traceback_.ptr());
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(sticky_.ptr())), sticky_.ptr());
    throw py::error_already_set();
  }

  void CheckOpen() const {
    if (iterator_ == nullptr) throw py::value_error("the iterator was closed at interpreter exit");
  }

  // Whether a request is running or its result waits to be taken.
  bool Pending() {
    MutexLock l(&mu_);
    return requested_ || result_.has_value();
  }

  // Ready when a result is there; otherwise makes a request unless one is running (another
  // Python thread's next() may have taken the result this one's request brought).
  bool ReadyOrRequest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (result_) return true;
    if (!requested_ && !direct_) {
      requested_ = true;
      cv_.SignalAll();
    }
    return false;
  }

  // The next result: waits for the fetching thread without the GIL, taking the GIL every
  // kSignalCheckInterval for signal handlers. A handler's exception (KeyboardInterrupt)
  // propagates and leaves the request running.
  Result Wait() {
    while (waits_itself_) {
      bool not_yet = false, unknown = false;
      if (std::optional<Result> taken = TakeWhenReady(&not_yet, &unknown)) {
        return *std::move(taken);
      }
      // Past the first element, a pipeline that cannot wait itself never will: skip the attempt.
      if (unknown && returned_) waits_itself_ = false;
      if (!not_yet) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { Fetch(); });
    while (true) {
      {
        py::gil_scoped_release release;
        MutexLock l(&mu_);
        const auto deadline = std::chrono::steady_clock::now() + kSignalCheckInterval;
        while (!ReadyOrRequest() && std::chrono::steady_clock::now() < deadline) {
          cv_.WaitUntil(&mu_, deadline);
        }
        if (result_) {
          Result result = *std::move(result_);
          result_.reset();
          return result;
        }
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

  // The next result, taken on this thread without the GIL once the iterator has it at hand, waiting
  // up to kSignalCheckInterval for it (`*not_yet` then). Nothing where the iterator cannot wait so
  // (`*unknown`), or a request of the fetching thread is under way or waiting to be taken (it comes
  // first).
  std::optional<Result> TakeWhenReady(bool* not_yet, bool* unknown) {
    py::gil_scoped_release release;
    {
      MutexLock l(&mu_);
      if (stop_ || requested_ || result_.has_value() || direct_) return std::nullopt;
      direct_ = true;  // no request starts meanwhile
    }
    // Cleared however this returns: Close waits for it.
    absl::Cleanup done = [this] {
      {
        MutexLock l(&mu_);
        direct_ = false;
      }
      cv_.SignalAll();  // another thread's next() may wait to request, or Close to finish
    };
    switch (iterator_->WaitForNext(std::chrono::steady_clock::now() + kSignalCheckInterval)) {
      case NextReadiness::kReady:
        return iterator_->GetNext();
      case NextReadiness::kNotYet:
        *not_yet = true;
        return std::nullopt;
      case NextReadiness::kUnknown:
        *unknown = true;
        return std::nullopt;
    }
    return std::nullopt;
  }

  // The fetching thread: one GetNext per request.
  void Fetch() {
    while (true) {
      {
        MutexLock l(&mu_);
        while (!stop_ && !requested_) cv_.Wait(&mu_);
        if (stop_) return;
      }
      Result result = iterator_->GetNext();
      {
        MutexLock l(&mu_);
        requested_ = false;
        result_ = std::move(result);
      }
      cv_.SignalAll();
    }
  }

  // The iterators not yet destroyed (touched with the GIL held).
  static std::set<PyIterator*>& Live() {
    static auto* live = new std::set<PyIterator*>;
    return *live;
  }

  std::unique_ptr<Iterator> iterator_;
  // Touched only with the GIL held (Python calls the methods above with it).
  bool started_ = false;  // a next() returned, or a state was loaded
  bool ended_ = false;
  bool returned_ = false;        // a next() returned an element
  bool waits_itself_ = true;     // until the pipeline says it cannot (no final Prefetch)
  py::object sticky_;            // the exception next() raised for the iterator's error
  py::object sticky_traceback_;  // its traceback then (None when it had none)
  std::thread thread_;           // started by the first next(); joined by the destructor

  Mutex mu_;
  CondVar cv_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  bool direct_ ABSL_GUARDED_BY(mu_) = false;  // a next() is in GetNext on its own thread
  std::optional<Result> result_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

py::object MakePyIterator(const Dataset& dataset) {
  return py::cast(std::make_unique<PyIterator>(dataset));
}

void RegisterIterator(py::module_& m) {
  py::module_::import("atexit").attr("register")(py::cpp_function(&PyIterator::CloseAll));
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
