"""sluice.bench's report, and image_dataset_from_directory."""

import _thread
import pathlib
import threading

import numpy as np
import pytest
import sluice

from conftest import image_features


def test_bench_returns_the_cli_report(data):
    ds = (
        sluice.Dataset.tfrecord(str(data / "images3.tfrecord"))
        .repeat(4)
        .map([sluice.ops.parse_example(image_features(sluice)), sluice.ops.decode_and_resize(32)],
             num_parallel_calls=sluice.AUTOTUNE)
        .batch(2)
    )
    report = sluice.bench(ds, seconds=None)
    for key in ("elements_per_second", "bytes_per_second", "elements", "batches", "bytes", "seconds",
                "pipeline", "device", "stages", "bottleneck", "peak_rss_bytes"):
        assert key in report, key
    assert report["elements"] == 12 and report["batches"] == 6
    assert report["bytes"] > 3 * 100_000  # the photos' records, each read 4 times
    assert {"name", "kind", "busy_ns", "utilization", "parallelism", "underruns"} <= set(
        report["stages"][0])
    tuned = sluice.bench(ds.repeat(), seconds=0.3, autotune_report=True)
    assert "autotune" in tuned and tuned["seconds"] >= 0.3


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf")])
def test_bench_refuses_a_time_it_would_never_reach(seconds):
    # 0 meant "to the end": an infinite dataset ran forever.
    with pytest.raises(ValueError, match="seconds must be a finite number > 0, or None"):
        sluice.bench(sluice.Dataset.range(10).repeat(), seconds=seconds)


def test_ctrl_c_stops_bench_on_an_infinite_dataset():
    # interrupt_main raises KeyboardInterrupt as a SIGINT would: the run, which releases the GIL,
    # must look for it between elements.
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sluice.bench(sluice.Dataset.range(10).repeat(), seconds=None)
    finally:
        timer.cancel()


@pytest.fixture
def photo_tree(data, tmp_path):
    """images3's JPEGs as class folders: a/0.jpg, a/1.jpg, b/2.jpg."""
    ds = sluice.Dataset.tfrecord(str(data / "images3.tfrecord")).map(
        sluice.ops.parse_example(image_features(sluice)))
    for i, (jpeg, _) in enumerate(ds):
        folder = tmp_path / ("a" if i < 2 else "b")
        folder.mkdir(exist_ok=True)
        (folder / f"{i}.jpg").write_bytes(jpeg)
    return tmp_path


def test_image_dataset_from_directory_both_says_what_each_subset_uses(photo_tree, capfd):
    sluice.image_dataset_from_directory(str(photo_tree), validation_split=0.34, subset="both",
                                        seed=1)
    assert capfd.readouterr().err.splitlines() == [
        "Found 3 files belonging to 2 classes.", "Using 2 files for training.",
        "Using 1 files for validation."]  # Keras' words


def test_image_dataset_from_directory_takes_a_pathlib_path(photo_tree):
    ds = sluice.image_dataset_from_directory(pathlib.Path(photo_tree), image_size=(20, 30))
    assert ds.class_names == sluice.image_dataset_from_directory(
        str(photo_tree), image_size=(20, 30)).class_names


def test_image_dataset_from_directory(photo_tree):
    ds = sluice.image_dataset_from_directory(str(photo_tree), image_size=(20, 30), batch_size=2,
                                            shuffle=False, verbose=False)
    assert ds.class_names == ["a", "b"]
    assert [p.split("/")[-1] for p in ds.file_paths] == ["0.jpg", "1.jpg", "2.jpg"]
    batches = [(np.asarray(x), np.asarray(y)) for x, y in ds]
    assert batches[0][0].shape == (2, 20, 30, 3) and batches[0][0].dtype == np.float32
    assert np.concatenate([y for _, y in batches]).tolist() == [0, 0, 1]
    train, val = sluice.image_dataset_from_directory(str(photo_tree), validation_split=0.34,
                                                     subset="both", seed=1, verbose=False,
                                                     label_mode="categorical")
    assert len(train.file_paths) == 2 and len(val.file_paths) == 1
    assert sorted(train.file_paths + val.file_paths) == sorted(ds.file_paths)
    assert np.asarray(next(iter(val))[1]).shape == (1, 2)
    with pytest.raises(FileNotFoundError):
        sluice.image_dataset_from_directory(str(photo_tree / "missing"))
    with pytest.raises(ValueError, match="label_mode"):
        sluice.image_dataset_from_directory(str(photo_tree), label_mode="sparse")
