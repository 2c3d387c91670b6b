"""Python's pipeline yields what the same pipeline declared in C++ yields: bytes, shapes, dtypes."""

import os
import pathlib
import subprocess

import numpy as np
import pytest
import sluice

from conftest import image_features


def python_pipeline(data, ops):
    # tests/python/reference_pipeline.cc declares the same pipeline in C++.
    return (
        sluice.Dataset.list_files(str(data / "images3.tfrecord"), shuffle=False)
        .interleave(sluice.Dataset.tfrecord, num_parallel_calls=2)
        .repeat(3)
        .map(ops, num_parallel_calls=2)
        .shuffle(4)
        .batch(2)
        .prefetch(2)
        .with_options(sluice.Options(seed=7))
    )


def fused_ops():
    return [
        sluice.ops.parse_example(image_features(sluice)),
        sluice.ops.decode_and_random_resized_crop((48, 64)),
        sluice.ops.random_flip_left_right(),
        sluice.ops.normalize(sluice.IMAGENET_MEAN, sluice.IMAGENET_STD),
    ]


def unfused_ops():
    # A cast to the dtype a tensor has returns it as it is, and keeps the steps apart.
    keep = sluice.ops.cast("uint8")
    return [
        sluice.ops.parse_example(image_features(sluice)),
        sluice.ops.decode_and_random_resized_crop((48, 64)),
        keep,
        sluice.ops.random_flip_left_right(),
        keep,
        sluice.ops.normalize(sluice.IMAGENET_MEAN, sluice.IMAGENET_STD),
    ]


def batches_of(ds):
    return [tuple(np.asarray(c) for c in batch) for batch in ds]


def test_equals_the_cpp_pipeline(data, tmp_path):
    # ctest names the program; by hand, the README's build directory has it.
    default = pathlib.Path(__file__).parents[2] / "build" / "python" / "python_reference_pipeline"
    reference = os.environ.get("SLUICE_REFERENCE_PIPELINE", str(default))
    if not os.path.exists(reference):
        pytest.skip(f"{reference} is not built (target python_reference_pipeline)")
    out = tmp_path / "batches.bin"
    listing = subprocess.run(
        [reference, str(data / "images3.tfrecord"), str(out)], check=True, capture_output=True, text=True
    ).stdout.split("\n")
    raw = out.read_bytes()
    offset = 0
    components = []
    for line in filter(None, listing):
        dtype, shape = line.split(" ", 1)
        shape = tuple(int(d) for d in shape.strip("[]").split(", "))
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        components.append(np.frombuffer(raw[offset : offset + n], dtype=dtype).reshape(shape))
        offset += n
    assert offset == len(raw)
    ours = [c for batch in batches_of(python_pipeline(data, fused_ops())) for c in batch]
    assert len(ours) == len(components) == 10
    for a, b in zip(ours, components):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def test_fused_equals_unfused(data):
    fused = batches_of(python_pipeline(data, fused_ops()))
    unfused = batches_of(python_pipeline(data, unfused_ops()))
    assert "normalize" in repr(sluice.ops.compose(*fused_ops()))
    with pytest.raises(TypeError, match=r"compose\(\) takes sluice.ops ops, not int"):
        sluice.ops.compose(1, 2)
    for a, b in zip(fused, unfused):
        for x, y in zip(a, b):
            assert x.tobytes() == y.tobytes()
    images, labels = fused[0]
    assert images.dtype == np.float32 and images.shape == (2, 48, 64, 3)
    assert labels.dtype == np.int64 and set(labels) <= {1, 4, 7}


def test_python_function_passes_values_through(data):
    plain = batches_of(python_pipeline(data, fused_ops()))
    through = batches_of(python_pipeline(data, fused_ops()).unbatch().map(lambda x, y: (x, y)).batch(2))
    for a, b in zip(plain, through):
        for x, y in zip(a, b):
            assert x.tobytes() == y.tobytes()


def test_keras_and_image_ops_run(data):
    ops = sluice.ops
    ds = (
        sluice.Dataset.tfrecord(str(data / "images3.tfrecord"))
        .map([ops.parse_example(image_features(sluice)), ops.decode_and_resize(32), ops.cast("float32")])
        .map(
            [
                ops.random_flip(),
                ops.random_rotation(0.1),
                ops.random_zoom(0.1),
                ops.random_translation(0.1, 0.1),
                ops.random_contrast(0.2),
                ops.random_brightness(0.2),
                ops.rescaling(1 / 255),
                ops.normalization([0.5], [0.25]),
            ]
        )
        .with_options(sluice.Options(seed=1))
    )
    for image, label in ds:
        assert image.shape == (32, 32, 3) and image.dtype == "float32"
    decoded = next(iter(sluice.Dataset.tfrecord(str(data / "images3.tfrecord")).map(
        [ops.parse_example(image_features(sluice)), ops.decode_jpeg(channels=3), ops.center_crop(100),
         ops.flip_left_right(), ops.resize((10, 20))])))
    assert decoded[0].shape == (10, 20, 3) and decoded[0].dtype == "float32"
    with pytest.raises(ValueError, match="fill_mode"):
        ops.random_rotation(0.1, fill_mode="mirror")


def test_batch_adopting_the_rows_yields_the_same_values(data):
    # map(ops).batch() makes the crop write into the batch's rows; a cast after the crop (to the
    # dtype it has) keeps the Map's results apart, so that Batch copies them.
    def pipeline(extra):
        return (
            sluice.Dataset.tfrecord(str(data / "images3.tfrecord"))
            .repeat(5)
            .map(fused_ops() + extra, num_parallel_calls=2)
            .batch(4, drop_remainder=True)
            .with_options(sluice.Options(seed=3))
        )

    adopted = batches_of(pipeline([]))
    copied = batches_of(pipeline([sluice.ops.cast("float32")]))
    assert len(adopted) == len(copied) == 3
    for a, b in zip(adopted, copied):
        for x, y in zip(a, b):
            assert x.tobytes() == y.tobytes()


def test_two_live_iterators_of_a_batch_adopting_pipeline(data):
    # Both iterators' Maps ask for the same batch rows, with different photos in them (the shuffle
    # has no seed: each iterator draws its own); neither may write into the other's. The crop is
    # no random one: with the whole area and aspect ratios narrower than every photo's, no window
    # fits, and the fallback is the centred window, so each label has one image.
    whole = [
        sluice.ops.parse_example(image_features(sluice)),
        sluice.ops.decode_and_random_resized_crop(16, scale=(1.0, 1.0), ratio=(0.5, 0.6)),
        sluice.ops.normalize(sluice.IMAGENET_MEAN, sluice.IMAGENET_STD),
    ]
    photos = sluice.Dataset.tfrecord(str(data / "images3.tfrecord"))
    reference = {int(np.asarray(y)): np.asarray(x).tobytes() for x, y in photos.map(whole)}
    ds = photos.repeat(40).shuffle(9).map(whole, num_parallel_calls=2).batch(4)
    a, b = iter(ds), iter(ds)
    for _ in range(30):
        for it in (a, b):
            images, labels = (np.asarray(c) for c in next(it))
            for image, label in zip(images, labels):
                assert image.tobytes() == reference[int(label)]
