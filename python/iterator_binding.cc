#include "python/iterator_binding.h"

#include <pthread.h>
#include <pybind11/stl.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "dataset/iterator.h"
#include "python/errors.h"
#include "python/gil.h"
#include "python/py_function.h"
#include "python/tensor_binding.h"

namespace sluice::python {
namespace {

// The version of the dict state_dict() returns.
constexpr int kStateVersion = 1;

// How often a waiting next() takes the GIL to run Python's signal handlers (Ctrl-C).
constexpr auto kSignalCheckInterval = std::chrono::milliseconds(50);

using Result = absl::StatusOr<std::optional<Element>>;

// The error text of a next() on an iterator closed at exit (CloseAll).
constexpr char kClosedAtExit[] = "the iterator was closed at interpreter exit";

// One C++ iterator and the thread that calls its GetNext, so that the Python thread waiting for
// an element can wake up for signals: a blocking GetNext cannot be interrupted, a wait on a
// condition variable can. An interrupted next() leaves its request running; the element it brings
// is the next call's, so none is lost. Where the pipeline ends with a Prefetch, next() instead
// waits for its buffer itself (Iterator::WaitForNext, which it can leave for a signal) and then
// calls GetNext on the Python thread, which returns at once: the hand-off to the fetching thread
// and back cost two more wake-ups, 40-90 us an element on 2 cores.
// Shared by the Python object and whoever closes it: a close may finish on another thread, after
// the Python object is gone (PyIterator's destructor). Every method runs without the GIL.
class IteratorCore {
 public:
  explicit IteratorCore(const Dataset& dataset) : iterator_(dataset.MakeIterator()) {}
  ~IteratorCore() { Close(); }
  IteratorCore(const IteratorCore&) = delete;
  IteratorCore& operator=(const IteratorCore&) = delete;

  // Cancels the pipeline, joins the fetching thread (whose GetNext, an interrupted next()'s,
  // the cancellation ends) and destroys the C++ iterator, which joins the pipeline's threads:
  // without the GIL, as they may be waiting for it to run a Python map function. Idempotent; a
  // second caller meanwhile waits for the first. next() then raises.
  void Close() {
    if (Forked()) return;
    MutexLock closing(&close_mu_);
    if (closed_) return;
    {
      MutexLock l(&mu_);
      stop_ = true;
      // Another Python thread's next() may be in a GetNext of its own (CloseAll at exit), or a
      // state_dict() in a Save.
      while (direct_ || users_ > 0) cv_.Wait(&mu_);
    }
    iterator_->Cancel();
    cv_.SignalAll();
    // No thread starts after stop_ (StartFetching), so thread_ is this thread's to join.
    if (thread_.joinable()) thread_.join();
    iterator_.reset();
    closed_ = true;
  }

  // Whether this is a child of fork and the iterator its parent's: the threads that served it are
  // not the child's, nor maybe the locks they held, so the child leaves everything as it is (and
  // never destroys it: a condition variable a parent's thread waited on cannot be). Such an
  // iterator is closed in the child: Stopped() says so, which every Python method asks first, so
  // none of the methods below it is reached there.
  bool Forked() const { return generation_ != ForkGeneration(); }

  bool Stopped() {
    if (Forked()) return true;
    MutexLock l(&mu_);
    return stop_;
  }

  // Whether a request is running or its result waits to be taken.
  bool Pending() {
    MutexLock l(&mu_);
    return requested_ || result_.has_value();
  }

  // The next result, taken on this thread once the iterator has it at hand, waiting up to
  // kSignalCheckInterval for it (`*not_yet` then). Nothing where the iterator cannot wait so
  // (`*unknown`), where it is closed, or where a request of the fetching thread is under way or
  // waiting to be taken (it comes first).
  std::optional<Result> TakeWhenReady(bool* not_yet, bool* unknown) {
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

  // Starts the fetching thread unless it runs; false once closed.
  bool StartFetching() {
    MutexLock l(&mu_);
    if (stop_) return false;
    if (!thread_.joinable()) thread_ = std::thread([this] { Fetch(); });
    return true;
  }

  // Waits up to kSignalCheckInterval for the fetching thread's result, requesting one unless a
  // request runs (another Python thread's next() may have taken the result this one's request
  // brought). `*closed` when the iterator is closed.
  std::optional<Result> WaitForResult(bool* closed) {
    MutexLock l(&mu_);
    const auto deadline = std::chrono::steady_clock::now() + kSignalCheckInterval;
    while (!stop_ && !ReadyOrRequest() && std::chrono::steady_clock::now() < deadline) {
      cv_.WaitUntil(&mu_, deadline);
    }
    if (result_) {
      Result result = *std::move(result_);
      result_.reset();
      return result;
    }
    *closed = stop_;
    return std::nullopt;
  }

  // `use(iterator)` unless the iterator is closed (nullopt then); Close waits for it.
  template <typename F>
  auto Use(F use) -> std::optional<decltype(use(std::declval<Iterator&>()))> {
    {
      MutexLock l(&mu_);
      if (stop_) return std::nullopt;
      ++users_;
    }
    absl::Cleanup done = [this] {
      {
        MutexLock l(&mu_);
        --users_;
      }
      cv_.SignalAll();
    };
    return use(*iterator_);
  }

 private:
  bool ReadyOrRequest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (result_) return true;
    if (!requested_ && !direct_) {
      requested_ = true;
      cv_.SignalAll();
    }
    return false;
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

  const int generation_ = ForkGeneration();
  Mutex close_mu_;
  bool closed_ ABSL_GUARDED_BY(close_mu_) = false;
  // Reset by Close only, once stop_ holds back every other use.
  std::unique_ptr<Iterator> iterator_;
  std::thread thread_;  // started under mu_ before stop_ (StartFetching); joined by Close

  Mutex mu_;
  CondVar cv_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  bool direct_ ABSL_GUARDED_BY(mu_) = false;  // a next() is in GetNext on its own thread
  int users_ ABSL_GUARDED_BY(mu_) = 0;        // Use calls running
  std::optional<Result> result_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

// Closes iterators off the threads that dropped them (PyIterator's destructor), one after
// another, on a thread that runs while there are some to close. Exit waits for them (HoldExit).
class DeferredCloses {
 public:
  static void Add(std::shared_ptr<IteratorCore> core) { Instance()->Push(std::move(core)); }

  // A child of fork starts with none: the parent's queue, its lock and its thread are the
  // parent's (the cores in it are left, as Forked() says).
  static void AfterForkInChild() { Instance() = new DeferredCloses; }

 private:
  static DeferredCloses*& Instance() {
    static DeferredCloses* closes = new DeferredCloses;  // never destroyed: its thread may
    return closes;                                       // outlive exit
  }

  void Push(std::shared_ptr<IteratorCore> core) {
    HoldExit();
    MutexLock l(&mu_);
    queue_.push_back(std::move(core));
    if (running_) return;
    running_ = true;
    try {
      std::thread([this] { Run(); }).detach();
    } catch (const std::system_error&) {
      // No thread to be had: leave them unclosed (their pipelines stay as they are) rather than
      // close here, on what may be one of their own threads.
      running_ = false;
      for (std::shared_ptr<IteratorCore>& left : queue_) {
        new std::shared_ptr<IteratorCore>(std::move(left));
        ReleaseExitHold();
      }
      queue_.clear();
    }
  }

  void Run() {
    while (true) {
      std::shared_ptr<IteratorCore> core;
      {
        MutexLock l(&mu_);
        if (queue_.empty()) {
          running_ = false;
          return;
        }
        core = std::move(queue_.front());
        queue_.pop_front();
      }
      core->Close();
      core.reset();
      ReleaseExitHold();
    }
  }

  Mutex mu_;
  std::deque<std::shared_ptr<IteratorCore>> queue_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
};

// The Python iterator: its state as Python sees it (touched with the GIL held) and its core.
class PyIterator {
 public:
  explicit PyIterator(const Dataset& dataset) : core_(std::make_shared<IteratorCore>(dataset)) {
    Live().insert(core_);
  }

  ~PyIterator() {
    Live().erase(core_);
    if (core_->Forked()) {
      new std::shared_ptr<IteratorCore>(std::move(core_));  // never destroyed (Forked)
      return;
    }
    if (InPipelinePythonCall()) {
      // Dropped on a thread of a pipeline, inside its Python call (the cyclic GC runs anywhere):
      // closing here would join that thread itself when the pipeline is this iterator's. Another
      // thread closes it once the call returns; exit waits for it.
      DeferredCloses::Add(std::move(core_));
      return;
    }
    ReleaseGil release;
    core_->Close();
  }

  // Closes every live iterator at exit, before the interpreter finalizes, and waits for the
  // Python calls their pipelines' threads are still making (which a closed iterator does not
  // wait for: they finish on their own), and for the closes other threads are finishing. A
  // pipeline thread that asked for the GIL later would be stopped for good by Python, in the
  // middle of C++ code. Iterators destroyed meanwhile on other threads keep their cores alive
  // here until closed.
  static void CloseAll() {
    StopPythonCalls();
    const std::vector<std::shared_ptr<IteratorCore>> live(Live().begin(), Live().end());
    ReleaseGil release;  // the calls still running need it to finish
    for (const std::shared_ptr<IteratorCore>& core : live) core->Close();
    WaitForPythonCalls();
  }

  py::object Next() {
    if (ended_) throw py::stop_iteration();
    CheckOpen();
    std::optional<Result> result = Wait();
    if (!result) RaiseClosed();
    if (!result->ok()) RaiseSticky(result->status());
    if (!(*result)->has_value()) {
      ended_ = true;
      throw py::stop_iteration();
    }
    started_ = returned_ = true;
    return ElementToPython(***result);
  }

  py::dict StateDict() {
    CheckOpen();
    if (core_->Pending()) {
      throw py::value_error(
          "state_dict(): an interrupted next() still holds an element; call next() first");
    }
    std::optional<absl::StatusOr<std::string>> saved;
    {
      ReleaseGil release;
      saved = core_->Use([](Iterator& it) { return it.Save(); });
    }
    if (!saved) RaiseClosed();
    if (!saved->ok()) ThrowStatus(saved->status());
    py::dict state;
    state["version"] = kStateVersion;
    state["iterator"] = py::bytes(**saved);
    return state;
  }

  void LoadStateDict(const py::dict& state) {
    CheckOpen();
    if (started_ || core_->Pending()) {
      throw py::value_error(
          "load_state_dict() must come before the first next(): call it on a fresh iter(dataset)");
    }
    if (!state.contains("version") || !state.contains("iterator")) {
      throw py::value_error(
          "load_state_dict(): not a sluice iterator state (no 'version' and 'iterator' keys)");
    }
    auto type_name = [](py::handle v) {
      return std::string(py::str(v.get_type().attr("__name__")));
    };
    const py::object version = state["version"], saved = state["iterator"];
    // An int, or what stands for one (a NumPy integer: operator.index).
    if (!PyIndex_Check(version.ptr())) {
      throw py::type_error(
          absl::StrCat("load_state_dict(): 'version' must be an int, not ", type_name(version)));
    }
    PyObject* index = PyNumber_Index(version.ptr());
    if (index == nullptr) throw py::error_already_set();
    if (!py::reinterpret_steal<py::object>(index).equal(py::int_(kStateVersion))) {
      throw py::value_error(absl::StrCat("load_state_dict(): state version ",
                                         std::string(py::repr(version)),
                                         ", this sluice reads version ", kStateVersion));
    }
    // bytes, or a bytearray or memoryview of them (PyBytes_FromObject takes the buffer protocol).
    if (py::isinstance<py::str>(saved) || !PyObject_CheckBuffer(saved.ptr())) {
      throw py::type_error(
          absl::StrCat("load_state_dict(): 'iterator' must be bytes, not ", type_name(saved)));
    }
    PyObject* as_bytes = PyBytes_FromObject(saved.ptr());
    if (as_bytes == nullptr) throw py::error_already_set();
    const std::string checkpoint = py::reinterpret_steal<py::bytes>(as_bytes);
    std::optional<absl::Status> restored;
    {
      ReleaseGil release;
      restored = core_->Use([&](Iterator& it) { return it.Restore(checkpoint); });
    }
    if (!restored) RaiseClosed();
    if (!restored->ok()) ThrowStatus(*restored);
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

  [[noreturn]] void RaiseClosed() {
    ParkIfExitingElsewhere();
    if (core_->Forked()) {
      throw py::value_error(
          "the iterator was made before os.fork(), by the parent process, whose threads serve "
          "it: iterate it there, or make a new one in this process");
    }
    throw py::value_error(kClosedAtExit);
  }

  void CheckOpen() {
    if (core_->Stopped()) RaiseClosed();
  }

  // The next result (nullopt once closed): waits for the fetching thread without the GIL,
  // taking the GIL every kSignalCheckInterval for signal handlers. A handler's exception
  // (KeyboardInterrupt) propagates and leaves the request running.
  std::optional<Result> Wait() {
    while (waits_itself_) {
      bool not_yet = false, unknown = false;
      std::optional<Result> taken;
      {
        ReleaseGil release;
        taken = core_->TakeWhenReady(&not_yet, &unknown);
      }
      if (taken) return taken;
      // Past the first element, a pipeline that cannot wait itself never will: skip the attempt.
      if (unknown && returned_) waits_itself_ = false;
      if (!not_yet) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    if (!core_->StartFetching()) return std::nullopt;
    while (true) {
      bool closed = false;
      std::optional<Result> result;
      {
        ReleaseGil release;
        result = core_->WaitForResult(&closed);
      }
      if (result || closed) return result;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

  // The iterators' cores not yet closed by their Python object's destructor (touched with the
  // GIL held).
  static std::set<std::shared_ptr<IteratorCore>>& Live() {
    static auto* live = new std::set<std::shared_ptr<IteratorCore>>;
    return *live;
  }

  std::shared_ptr<IteratorCore> core_;
  // Touched only with the GIL held (Python calls the methods above with it).
  bool started_ = false;  // a next() returned, or a state was loaded
  bool ended_ = false;
  bool returned_ = false;        // a next() returned an element
  bool waits_itself_ = true;     // until the pipeline says it cannot (no final Prefetch)
  py::object sticky_;            // the exception next() raised for the iterator's error
  py::object sticky_traceback_;  // its traceback then (None when it had none)
};

}  // namespace

py::object MakePyIterator(const Dataset& dataset) {
  return py::cast(std::make_unique<PyIterator>(dataset));
}

void RegisterIterator(py::module_& m) {
  pthread_atfork(nullptr, nullptr, &DeferredCloses::AfterForkInChild);
  py::module_::import("atexit").attr("register")(py::cpp_function(&PyIterator::CloseAll));
  py::class_<PyIterator>(m, "Iterator", R"doc(
iter(dataset): yields the dataset's elements. next() waits without the GIL; Ctrl-C
interrupts it (the element it was waiting for is the next call's).
)doc")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyIterator::Next,
           "The next element: a tuple of its components (one component alone). Raises "
           "StopIteration at the end, the pipeline's error (the same exception object again on "
           "later calls), or ValueError after the iterator was closed at exit.")
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
