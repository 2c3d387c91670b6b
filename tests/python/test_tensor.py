"""Batches leave without a copy: NumPy and DLPack views of the C++ buffer, and their lifetimes."""

import gc
import sys

import numpy as np
import pytest
import sluice


def batches(n=8, size=1000):
    x = np.arange(n * size, dtype=np.float32).reshape(n, size)
    return sluice.Dataset.from_tensor_slices(x).map(sluice.ops.cast("float32")).batch(4)


def test_numpy_view_is_the_tensor_memory():
    t = next(iter(batches()))
    assert isinstance(t, sluice.Tensor)
    assert t.shape == (4, 1000) and t.dtype == "float32" and t.ndim == 2 and len(t) == 4
    a = np.asarray(t)
    assert a.ctypes.data == t.data_ptr
    assert not a.flags.writeable and not a.flags.owndata
    assert np.asarray(memoryview(t)).ctypes.data == t.data_ptr

    class InterfaceOnly:  # what a consumer that reads only __array_interface__ sees
        __array_interface__ = t.__array_interface__

    assert np.asarray(InterfaceOnly()).ctypes.data == t.data_ptr
    assert t.numpy().ctypes.data == t.data_ptr
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_shares_memory():
    t = next(iter(batches()))
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr
    np.testing.assert_array_equal(a, np.asarray(t))
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=1)


def test_arrays_outlive_iterator_and_dataset():
    ds = batches()
    it = iter(ds)
    first = next(it)
    view = np.asarray(first)
    capsule_view = np.from_dlpack(next(it))
    expected_first = np.arange(4000, dtype=np.float32).reshape(4, 1000)
    del it, ds, first
    gc.collect()
    # Other allocations must not reuse the buffers the views hold.
    junk = [np.ones(4000, dtype=np.float32) for _ in range(50)]
    np.testing.assert_array_equal(view, expected_first)
    np.testing.assert_array_equal(capsule_view, expected_first + 4000)
    del junk


def test_unconsumed_capsule_frees_its_tensor():
    t = next(iter(batches()))
    refs = sys.getrefcount(t)
    for _ in range(1000):
        t.__dlpack__()  # dropped unconsumed: the capsule's destructor frees the holder
    assert sys.getrefcount(t) == refs


def test_bfloat16_goes_through_dlpack_only():
    t = next(iter(batches().map(sluice.ops.cast("bfloat16"))))
    assert t.dtype == "bfloat16"
    with pytest.raises(TypeError, match="bfloat16"):
        np.asarray(t).sum()
    t.__dlpack__()


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_no_leak_over_10000_batches():
    x = np.arange(20000, dtype=np.int64)
    ds = sluice.Dataset.from_tensor_slices((x, x.astype(np.float32))).batch(2).repeat()
    it = iter(ds)
    probe = next(it)[0]
    probe_refs = sys.getrefcount(probe)

    def run(n):
        for _ in range(n):
            a, b = next(it)
            np.asarray(a)
            b.__dlpack__()

    run(2000)  # warm up: allocator pools, the iterator's buffers
    gc.collect()
    objects, before = len(gc.get_objects()), rss_bytes()
    run(10000)
    gc.collect()
    grown = rss_bytes() - before
    assert len(gc.get_objects()) <= objects + 10
    assert grown < 4 << 20, f"RSS grew by {grown} bytes over 10,000 batches"
    assert sys.getrefcount(probe) == probe_refs


def test_scalars_convert_and_compare_as_numpy_values():
    # A training loop's `if label == 3`, `int(label)`, `names[label]` on elements.
    t = next(iter(sluice.Dataset.range(5, 6)))
    assert t == 5 and not (t != 5) and t != 4
    assert int(t) == 5 and float(t) == 5.0 and t.item() == 5
    assert ["a", "b", "c", "d", "e", "f"][t] == "f"
    assert bool(t) and not bool(next(iter(sluice.Dataset.range(1))))
    assert {t: 1}[t] == 1  # hashed by identity, as torch.Tensor
    b = next(iter(batches()))
    assert (b == np.asarray(b)).all()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(b)  # NumPy's rule for more than one element
    with pytest.raises(TypeError, match="integer scalar arrays"):
        ["x"][next(iter(sluice.Dataset.from_tensors(np.float32(0.5))))]  # not an integer


def test_values_without_a_sluice_dtype_say_what_they_are():
    # NumPy makes object arrays of these; they said "a bytes tensor's items must be bytes or str".
    with pytest.raises(ValueError, match=r"the Python int 1180591620717411303424 does not fit int64"):
        list(sluice.Dataset.range(1).map(lambda x: 2**70))
    with pytest.raises(TypeError, match="a NoneType cannot be a sluice tensor's value"):
        list(sluice.Dataset.from_generator(lambda: iter([None])))
    with pytest.raises(TypeError, match="an int among bytes or str"):
        sluice.Dataset.from_tensors([b"a", 1])
    # Python bools are uint8 0 and 1 (sluice has no bool dtype): a mask needs astype(bool).
    mask = next(iter(sluice.Dataset.from_tensors(np.array([True, False, True]))))
    assert mask.dtype == "uint8" and np.asarray(mask).tolist() == [1, 0, 1]
    assert np.arange(3)[np.asarray(mask).astype(bool)].tolist() == [0, 2]
