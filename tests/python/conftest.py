"""Shared fixtures of the Python module's tests: ctest runs them with PYTHONPATH=build/python."""

import os
import pathlib

import pytest

DATA = pathlib.Path(os.environ.get("SLUICE_TEST_DATA", pathlib.Path(__file__).parents[1] / "data"))


# small100.tfrecord's features (tests/data): id = i, vec = (i * 0.5, -i, 1 / (i + 1)),
# name = "item-i".
def small100_features(sluice):
    return {
        "id": sluice.io.FixedLenFeature([], "int64"),
        "vec": sluice.io.FixedLenFeature([3], "float32"),
        "name": sluice.io.FixedLenFeature([], "string"),
    }


@pytest.fixture
def data():
    return DATA


# images3.tfrecord's: a photo and its label (1, 4 or 7).
def image_features(sluice):
    return {
        "image/encoded": sluice.io.FixedLenFeature([], "string"),
        "image/class/label": sluice.io.FixedLenFeature([], "int64"),
    }
