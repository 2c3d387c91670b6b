"""sluice: tf.data's pipeline in C++, from Python.

    import sluice
    ds = (sluice.Dataset.list_files("train-*.tfrecord", seed=7)
          .interleave(sluice.Dataset.tfrecord, num_parallel_calls=sluice.AUTOTUNE)
          .map([sluice.ops.parse_example(features),
                sluice.ops.decode_and_random_resized_crop(224),
                sluice.ops.random_flip_left_right(),
                sluice.ops.normalize(sluice.IMAGENET_MEAN, sluice.IMAGENET_STD)],
               num_parallel_calls=sluice.AUTOTUNE)
          .batch(64, drop_remainder=True)
          .prefetch(sluice.AUTOTUNE))
    for images, labels in ds:
        x = torch.from_dlpack(images)  # no copy

See docs/python.md.
"""

import importlib as _importlib
import sys as _sys
import warnings as _warnings

# The C++ module reaches NumPy's C API through numpy.core.multiarray (pybind11 before 2.12 asks
# for that name), which NumPy 2 keeps as a deprecated alias of numpy._core.multiarray: the
# alias is made where it is missing, and its warnings are not the user's.
with _warnings.catch_warnings():
    _warnings.simplefilter("ignore", DeprecationWarning)
    try:
        _importlib.import_module("numpy.core.multiarray")
    except ImportError:
        try:
            _sys.modules["numpy.core.multiarray"] = _importlib.import_module(
                "numpy._core.multiarray")
        except ImportError:
            pass  # no NumPy: the module says so
    from ._sluice import (
        AUTOTUNE,
        INFINITE_CARDINALITY,
        UNKNOWN_CARDINALITY,
        DataLossError,
        Dataset,
        Iterator,
        Options,
        Tensor,
        __version__,
        bench,
        cuda,
        image_dataset_from_directory,
        io,
        ops,
    )
    from ._sluice import _testing  # noqa: F401  (tests/python)

# The statistics torchvision's ImageNet models are trained with (RGB, on [0, 1] values).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class _NumpyIterator:
    """What as_numpy_iterator returns: the dataset's iterator, each component converted; its
    position saves and restores as the iterator's does (state_dict, load_state_dict)."""

    def __init__(self, iterator):
        import numpy

        self._iterator = iterator
        self._asarray = numpy.asarray

    def __iter__(self):
        return self

    def _convert(self, value):
        return self._asarray(value) if isinstance(value, Tensor) else value

    def __next__(self):
        if self._iterator is None:
            raise StopIteration
        element = next(self._iterator)
        if isinstance(element, tuple):
            return tuple(self._convert(v) for v in element)
        return self._convert(element)

    def close(self):
        """Stops the pipeline now (its threads, its open files), as a generator's close()."""
        self._iterator = None

    def _open(self, what):
        if self._iterator is None:
            raise ValueError(f"{what}: the as_numpy_iterator was closed")
        return self._iterator

    def state_dict(self):
        return self._open("state_dict()").state_dict()

    def load_state_dict(self, state_dict):
        self._open("load_state_dict()").load_state_dict(state_dict)


def _as_numpy_iterator(self):
    """tf.data's as_numpy_iterator: each component as a NumPy array viewing its tensor (bytes
    stay bytes); no copy. Checkpoints as iter(dataset) does: state_dict(), load_state_dict()."""
    return _NumpyIterator(iter(self))


Dataset.as_numpy_iterator = _as_numpy_iterator


def _apply(self, transformation_func):
    """tf.data's apply: transformation_func(self), which must return a sluice.Dataset."""
    result = transformation_func(self)
    if not isinstance(result, Dataset):
        raise TypeError(
            f"apply: transformation_func must return a sluice.Dataset, not {type(result).__name__}"
        )
    return result


Dataset.apply = _apply


# The transformations that read elements on the host: refused after prefetch_to_device put them
# on a GPU (tf.data's rule: prefetch_to_device is the last step).
# shuffle and prefetch too: their checkpoints copy the elements they hold on the host. The C++
# pipeline refuses the same when its iterator starts (dataset/device_elements.h).
_READS_ELEMENTS = {"map", "filter", "batch", "padded_batch", "unbatch", "cache", "snapshot", "save",
                   "window", "scan", "interleave", "flat_map", "as_numpy_iterator", "shuffle",
                   "prefetch"}


def _device_of(*values):
    """Where prefetch_to_device put the elements of the first of `values` (datasets, or tuples
    and lists of datasets, as zip takes them) that it put on a device; None when none. Looks one
    level into a tuple or list, and only while its items are datasets (not through a long list of
    numbers)."""
    for value in values:
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if not isinstance(item, Dataset):
                break
            device = getattr(item, "_device", None)
            if device is not None:
                return device
    return None


def _device_checked(name, method):
    """Dataset.<name> that knows where prefetch_to_device put the elements: refused for a
    transformation that reads them on the host, and passed on by the others (take, repeat,
    skip, concatenate, ...), whose result holds the same device elements."""

    def checked(self, *args, **kwargs):
        device = _device_of(self, *args, *kwargs.values())
        if device is not None and name in _READS_ELEMENTS:
            raise ValueError(
                f"{name}() after prefetch_to_device('{device}'): the elements are on {device} "
                f"and {name} reads them on the host; make prefetch_to_device the pipeline's last "
                f"step (as tf.data does)")
        result = method(self, *args, **kwargs)
        if device is not None and isinstance(result, Dataset):
            result._device = device
        return result

    checked.__name__ = name
    checked.__doc__ = method.__doc__
    return checked


# The static methods whose arguments are datasets.
_COMBINES_DATASETS = {"zip", "sample_from_datasets", "choose_from_datasets"}


def _device_passed(name, function):
    """A static Dataset.<name> that combines datasets (zip, sample_from_datasets): its result
    holds the device elements of any of them."""

    def passed(*args, **kwargs):
        result = function(*args, **kwargs)
        device = _device_of(*args, *kwargs.values())
        if device is not None and isinstance(result, Dataset):
            result._device = device
        return result

    passed.__name__ = name
    passed.__doc__ = function.__doc__
    return staticmethod(passed)


def _parameter_names(signature):
    """The parameter names of one pybind11 signature, "(self: X, a: Optional[int] = None, ...)":
    the names before ": " at the outermost level (types and defaults may hold commas), and
    *args."""
    names, depth, start = [], 0, 1
    for i, c in enumerate(signature):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if (c == "," and depth == 1) or (c == ")" and depth == 0):
            part = signature[start:i].strip()
            start = i + 1
            if ":" in part:
                names.append(part.split(":", 1)[0].strip())
            elif part.startswith("*"):
                names.append(part)  # *args: pybind11 gives it no type
    return names


# tf.data arguments sluice leaves out, and why.
_UNSUPPORTED_HINTS = {
    "name": "tf.data's name= labels an op for its debugging tools; sluice names each stage "
            "itself, as sluice.bench and the profiler show",
}


def _argument_errors_explained(name, function):
    """Dataset.<name> whose unknown keyword argument raises "got an unexpected keyword argument"
    and the parameters it takes, as a Python function's would, instead of pybind11's list of
    signatures."""

    def explained(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except TypeError as error:
            message = str(error)
            # pybind11's own message for this very function (a callback run inside it may
            # raise one of another function's, which this must not explain).
            if not message.startswith(f"{name}(): incompatible function arguments") or not kwargs:
                raise
            signatures = [line.split(". ", 1)[1] for line in message.splitlines()
                          if line.strip()[:1].isdigit() and ". (" in line]
            known = {n for sig in signatures for n in _parameter_names(sig.split(" -> ")[0])}
            unknown = [k for k in kwargs if k not in known]
            if not unknown:
                raise
            takes = ", ".join(n for n in _parameter_names(signatures[0].split(" -> ")[0])
                              if n != "self")
            hint = _UNSUPPORTED_HINTS.get(unknown[0])
            raise TypeError(
                f"{name}() got an unexpected keyword argument '{unknown[0]}'"
                + (f" ({hint})" if hint else "") + f"; sluice's {name} takes ({takes})"
            ) from None

    explained.__name__ = name
    explained.__doc__ = function.__doc__
    return explained


for _name, _method in list(Dataset.__dict__.items()):
    if _name.startswith("_"):
        continue
    if type(_method).__name__ in ("instancemethod", "function"):
        setattr(Dataset, _name,
                _device_checked(_name, _argument_errors_explained(_name, _method)))
    elif isinstance(_method, staticmethod):
        _function = _argument_errors_explained(_name, _method.__func__)
        if _name in _COMBINES_DATASETS:
            setattr(Dataset, _name, _device_passed(_name, _function))
        else:
            setattr(Dataset, _name, staticmethod(_function))
for _name in dir(ops):
    if type(getattr(ops, _name)).__name__ == "builtin_function_or_method":
        setattr(ops, _name, _argument_errors_explained(_name, getattr(ops, _name)))
bench = _argument_errors_explained("bench", bench)
image_dataset_from_directory = _argument_errors_explained("image_dataset_from_directory",
                                                          image_dataset_from_directory)


class experimental:  # noqa: N801  (tf.data.experimental's name)
    """tf.data.experimental's names that sluice has."""

    @staticmethod
    def prefetch_to_device(device, buffer_size=None):
        """tf.data.experimental.prefetch_to_device, for Dataset.apply:
        ds.apply(sluice.experimental.prefetch_to_device("cuda:0")). buffer_size None is 2
        (device memory is scarcer than host memory, so it is not tuned)."""
        size = 2 if buffer_size is None else buffer_size
        return lambda ds: ds.prefetch_to_device(device, buffer_size=size)

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "DataLossError",
    "Dataset",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "Iterator",
    "Options",
    "Tensor",
    "__version__",
    "bench",
    "cuda",
    "experimental",
    "image_dataset_from_directory",
    "io",
    "ops",
]
