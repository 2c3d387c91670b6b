#include "python/errors.h"

#include <Python.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/os_error.h"
#include "python/gil.h"

namespace sluice::python {
namespace {

constexpr char kPayloadUrl[] = "sluice/python-exception";

// Exceptions from Python callbacks, by id, until ThrowStatus raises them. Only touched with the
// GIL held. Bounded: an error that IgnoreErrors drops is never raised, so old entries go. Never
// destroyed: its objects must not be released after the interpreter has gone.
struct PendingExceptions {
  static constexpr size_t kMax = 64;
  // The newest entries keep their frames' locals, for a debugger's post-mortem of the error that
  // next() raises; older ones lose them (ClearFrames).
  static constexpr size_t kWithLocals = 2;
  struct Entry {
    uint64_t id;
    std::string message;  // the Status's message as made, before any context was put in front
    py::object exception;
  };
  std::deque<Entry> entries;
  uint64_t next_id = 1;
};

PendingExceptions& Pending() {
  static auto* pending = new PendingExceptions;
  return *pending;
}

PyObject* data_loss_error = nullptr;

// Drops the local variables of the frames an exception's traceback holds (and those of its cause
// and context), keeping the lines a traceback prints. An error that IgnoreErrors drops is never
// raised, and its frames would keep the map function's arguments, views of whole batches, alive.
void ClearFrames(const py::object& exception) {
  try {
    py::object clear_frames = py::module_::import("traceback").attr("clear_frames");
    py::object e = exception;
    for (int depth = 0; depth < 8 && !e.is_none(); ++depth) {
      py::object traceback = e.attr("__traceback__");
      if (!traceback.is_none()) clear_frames(traceback);
      py::object next = e.attr("__cause__");
      e = next.is_none() ? e.attr("__context__") : next;
    }
  } catch (py::error_already_set&) {
    // Only memory is at stake; the error stays as it was.
  }
}

// The exception a status came from: by its payload (WithContext and the pipeline's node names
// keep it), or, where some wrapper rebuilt the status without its payloads, by the message's end.
// Newest first.
const py::object* FindException(const absl::Status& status) {
  const auto& entries = Pending().entries;
  uint64_t id = 0;
  if (auto payload = status.GetPayload(kPayloadUrl);
      payload && absl::SimpleAtoi(std::string(*payload), &id)) {
    for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
      if (e->id == id) return &e->exception;
    }
  }
  for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
    if (absl::EndsWith(status.message(), e->message)) return &e->exception;
  }
  return nullptr;
}

}  // namespace

void RegisterErrors(py::module_& m) {
  // A reference the module keeps, and this file too (never released: classes live as long as the
  // interpreter).
  static py::exception<void> cls(m, "DataLossError", PyExc_IOError);
  cls.doc() =
      "A file's bytes are corrupt or cut short (absl::StatusCode::kDataLoss): a TFRecord whose "
      "CRC does not match, a truncated JPEG. The message names the file, the record and the byte "
      "offset.";
  data_loss_error = cls.ptr();
}

py::handle ExceptionTypeFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
      return PyExc_ValueError;
    case absl::StatusCode::kNotFound:
      return PyExc_FileNotFoundError;
    case absl::StatusCode::kAlreadyExists:
      return PyExc_FileExistsError;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return PyExc_PermissionError;
    case absl::StatusCode::kResourceExhausted:
      return PyExc_MemoryError;
    case absl::StatusCode::kDataLoss:
      return data_loss_error;
    case absl::StatusCode::kOutOfRange:
      // The end of a sequence is StopIteration, from the iterator itself: an OutOfRange status
      // is a position past an end (a restore, a window).
      return PyExc_IndexError;
    case absl::StatusCode::kUnimplemented:
      return PyExc_NotImplementedError;
    case absl::StatusCode::kDeadlineExceeded:
      return PyExc_TimeoutError;
    case absl::StatusCode::kUnavailable:
      return PyExc_ConnectionError;
    default:  // kCancelled, kUnknown, kFailedPrecondition, kAborted, kInternal
      return PyExc_RuntimeError;
  }
}

void ThrowStatus(const absl::Status& status) {
  if (const py::object* exception = FindException(status)) {
    // The same object every time: an iterator's error is sticky.
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception->ptr())), exception->ptr());
    throw py::error_already_set();
  }
  const std::string message(status.message());
  const py::handle type = ExceptionTypeFor(status.code());
  // Paths need not be UTF-8: their bytes come back as Python's file functions give them.
  py::object text = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
      message.data(), static_cast<Py_ssize_t>(message.size()), "surrogateescape"));
  if (!text) throw py::error_already_set();
  if (const std::optional<int> error_number = ErrnoOf(status);
      error_number && type.ptr() == PyExc_RuntimeError) {
    // An OS error whose code says little (FailedPrecondition, Unknown): OSError(errno, message)
    // is the subclass Python's own file functions raise for the number (IsADirectoryError for
    // EISDIR, plain OSError for EIO), with .errno set. Codes with a type of their own keep it.
    py::object error = py::reinterpret_steal<py::object>(
        PyObject_CallFunction(PyExc_OSError, "iO", *error_number, text.ptr()));
    if (!error) throw py::error_already_set();
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    throw py::error_already_set();
  }
  PyErr_SetObject(type.ptr(), text.ptr());
  throw py::error_already_set();
}

absl::Status StatusFromPythonError(py::error_already_set& error, absl::string_view where) {
  absl::StatusCode code = absl::StatusCode::kUnknown;
  if (error.matches(PyExc_ValueError) || error.matches(PyExc_TypeError)) {
    code = absl::StatusCode::kInvalidArgument;
  } else if (error.matches(PyExc_FileNotFoundError)) {
    code = absl::StatusCode::kNotFound;
  } else if (error.matches(PyExc_MemoryError)) {
    code = absl::StatusCode::kResourceExhausted;
  } else if (data_loss_error != nullptr && error.matches(data_loss_error)) {
    code = absl::StatusCode::kDataLoss;
  } else if (error.matches(PyExc_NotImplementedError)) {
    code = absl::StatusCode::kUnimplemented;
  } else if (error.matches(PyExc_KeyboardInterrupt)) {
    code = absl::StatusCode::kCancelled;
  }
  py::object value = error.value();
  // Raised again later from next(): it keeps the traceback into the map function.
  PyObject* traceback = PyException_GetTraceback(value.ptr());  // a new reference
  if (traceback == nullptr && error.trace()) {
    PyException_SetTraceback(value.ptr(), error.trace().ptr());
  }
  Py_XDECREF(traceback);
  std::string type_name = py::str(error.type().attr("__name__"));
  if (error.matches(PyExc_StopIteration) || error.matches(PyExc_StopAsyncIteration)) {
    // Raised again from next(), a StopIteration would end the caller's loop as if the data had
    // ended. As PEP 479 does for generators: a RuntimeError whose cause is the StopIteration.
    const std::string message = absl::StrCat(where, " raised ", type_name);
    PyObject* wrapped = PyObject_CallFunction(PyExc_RuntimeError, "s", message.c_str());
    if (wrapped == nullptr) throw py::error_already_set();
    PyException_SetCause(wrapped, value.release().ptr());  // takes the reference
    value = py::reinterpret_steal<py::object>(wrapped);
    type_name = "RuntimeError";
  }
  std::string text = py::str(value);
  absl::Status status(code, absl::StrCat(where, ": ", type_name, ": ", text));
  PendingExceptions& pending = Pending();
  const uint64_t id = pending.next_id++;
  pending.entries.push_back({id, std::string(status.message()), std::move(value)});
  if (pending.entries.size() > PendingExceptions::kMax) pending.entries.pop_front();
  if (pending.entries.size() > PendingExceptions::kWithLocals) {
    ClearFrames(
        pending.entries[pending.entries.size() - 1 - PendingExceptions::kWithLocals].exception);
  }
  status.SetPayload(kPayloadUrl, absl::Cord(absl::StrCat(id)));
  return status;
}

std::function<absl::Status()> InterruptCheck::Check() {
  return [this]() -> absl::Status {
    AcquireGil gil;  // on the thread that released it (ReleaseGil)
    if (PyErr_CheckSignals() == 0) return absl::OkStatus();
    interrupted_.emplace();  // takes the exception the handler set
    return absl::CancelledError("interrupted");
  };
}

void InterruptCheck::ThrowIfInterrupted() {
  if (interrupted_) throw *std::move(interrupted_);
}

}  // namespace sluice::python
