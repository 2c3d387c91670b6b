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
    image_dataset_from_directory,
    io,
    ops,
)
from ._sluice import _testing  # noqa: F401  (tests/python)

# The statistics torchvision's ImageNet models are trained with (RGB, on [0, 1] values).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _as_numpy_iterator(self):
    """tf.data's as_numpy_iterator: each component as a NumPy array viewing its tensor (bytes
    stay bytes); no copy."""
    import numpy as np

    def convert(value):
        return np.asarray(value) if isinstance(value, Tensor) else value

    for element in self:
        if isinstance(element, tuple):
            yield tuple(convert(v) for v in element)
        else:
            yield convert(element)


Dataset.as_numpy_iterator = _as_numpy_iterator

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
    "image_dataset_from_directory",
    "io",
    "ops",
]
