"""Devices from Python: prefetch_to_device, sluice.cuda, the CUDA plugin loaded by the Python
module, and DLPack's keyword arguments. The CUDA tensors themselves (torch.from_dlpack on a GPU,
ordered by the consumer's stream) are tested by the GPU device check
(tools/device/python_cuda_check.py), on a machine with a GPU."""

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest
import sluice


def rows(n=10):
    return sluice.Dataset.from_tensor_slices(np.arange(n * 3, dtype=np.float32).reshape(n, 3))


@pytest.mark.parametrize("name", ["cpu", "CPU", "/cpu:0", "/device:CPU:0", "cpu:0"])
def test_prefetch_to_the_cpu_is_a_prefetch(name):
    ds = rows().prefetch_to_device(name, buffer_size=3)
    got = [np.asarray(t).copy() for t in ds]
    assert len(got) == 10
    for i, row in enumerate(got):
        np.testing.assert_array_equal(row, np.arange(i * 3, i * 3 + 3, dtype=np.float32))
    # tf.data's spelling, through apply.
    applied = rows().apply(sluice.experimental.prefetch_to_device("cpu"))
    assert [np.asarray(t).tolist() for t in applied] == [r.tolist() for r in got]


def test_prefetch_to_device_resumes_exactly():
    ds = rows(20).shuffle(8, seed=3).prefetch_to_device("cpu")
    it = iter(ds)
    head = [np.asarray(next(it)).tolist() for _ in range(7)]
    state = it.state_dict()
    rest = [np.asarray(t).tolist() for t in it]
    resumed = iter(ds)
    resumed.load_state_dict(state)
    assert [np.asarray(t).tolist() for t in resumed] == rest
    assert len(head) + len(rest) == 20


@pytest.mark.parametrize("name", ["tpu:0", "cuda:x", "cuda0", "cpu:1", "cuda:-1", ""])
def test_an_unknown_device_is_a_value_error(name):
    with pytest.raises(ValueError, match="unknown device"):
        rows().prefetch_to_device(name)


def test_prefetch_to_device_checks_its_arguments():
    with pytest.raises(TypeError, match="named by a str"):
        rows().prefetch_to_device(0)
    with pytest.raises(ValueError, match="buffer_size must be >= 1, not 0"):
        rows().prefetch_to_device("cpu", buffer_size=0)
    with pytest.raises(TypeError, match="must return a sluice.Dataset, not int"):
        rows().apply(lambda ds: 3)


def test_device_elements_are_followed_through_zip_and_concatenate():
    # A stand-in for prefetch_to_device("cuda:0") on a machine without a GPU: the Python-side
    # refusal follows the attribute it sets (the C++ iterator refuses the same when it starts).
    on_gpu = rows()
    on_gpu._device = "cuda:0"
    for combined in (sluice.Dataset.zip((rows(), on_gpu)), rows().concatenate(on_gpu),
                     sluice.Dataset.sample_from_datasets([rows(), on_gpu], seed=1)):
        with pytest.raises(ValueError, match="batch\\(\\) after prefetch_to_device\\('cuda:0'\\)"):
            combined.take(3).batch(2)
    assert getattr(sluice.Dataset.zip((rows(), rows())), "_device", None) is None


def test_cuda_says_why_it_has_no_device():
    if not sluice.cuda.is_built():
        assert not sluice.cuda.is_available()
        with pytest.raises(RuntimeError, match="sluice was built without CUDA"):
            sluice.cuda.device_count()
        with pytest.raises(RuntimeError, match="sluice was built without CUDA"):
            rows().prefetch_to_device("cuda:0")
        return
    # A CUDA build: the plugin loads into the Python module (which exports sluice's functions to
    # it only once it asks for a plugin), whatever the machine has.
    n = sluice.cuda.device_count()
    assert n >= 0
    assert sluice.cuda.is_available() == (n > 0)
    if n == 0:
        with pytest.raises(RuntimeError, match="no CUDA device"):
            rows().prefetch_to_device("cuda:0")
    else:
        with pytest.raises(Exception, match=f"cuda:{n}"):
            rows().prefetch_to_device(f"cuda:{n}")


def test_a_plugin_binds_to_the_modules_functions():
    plugin = os.environ.get("SLUICE_TEST_HOST_PLUGIN")
    if not plugin or not os.path.exists(plugin):
        pytest.skip("the test plugin was not built (SLUICE_TEST_HOST_PLUGIN; ctest sets it)")
    # A fresh interpreter: Python opened the module RTLD_LOCAL, so its functions are not global
    # before a plugin is loaded, and are after, where the plugin's calls bind to them.
    script = f"""
import ctypes, sluice
def exported():
    try:
        ctypes.CDLL(None).sluice_plugin_host
        return True
    except AttributeError:
        return False
before = exported()
sluice._testing.load_plugin_file({plugin!r})
print(before, exported(), ctypes.CDLL({plugin!r}).sluice_test_host_interface_checks())
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["False", "True", "4"], out.stderr


def test_a_plugin_that_does_not_load_is_named():
    with pytest.raises(RuntimeError, match="/nonexistent/libsluice_x.so: .*cannot open shared"):
        sluice._testing.load_plugin_file("/nonexistent/libsluice_x.so")


def test_dlpack_keywords_of_the_array_api():
    t = next(iter(rows().batch(2)))
    assert t.__dlpack__(max_version=(1, 0)) is not None  # an unversioned capsule: both are taken
    assert t.__dlpack__(dl_device=(1, 0), copy=False) is not None
    with pytest.raises(BufferError, match="views only"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="the tensor is on cpu"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError, match="a CPU tensor takes no stream"):
        t.__dlpack__(stream=1)
    # What a consumer of the newer protocol does: from_dlpack with the keywords, no copy.
    assert np.from_dlpack(t).ctypes.data == t.data_ptr


def test_transformations_that_read_elements_are_refused_after_a_gpu_prefetch():
    # prefetch_to_device("cuda:N") marks its dataset so (no GPU here: the mark is set by hand).
    ds = rows()
    ds._device = "cuda:0"
    for call in (lambda d: d.map(lambda x: x), lambda d: d.batch(2), lambda d: d.filter(bool),
                 lambda d: d.cache(), lambda d: d.unbatch(), lambda d: d.as_numpy_iterator(),
                 lambda d: d.shuffle(4, seed=1), lambda d: d.prefetch(2)):
        with pytest.raises(ValueError, match=r"after prefetch_to_device\('cuda:0'\): the elements "
                                             r"are on cuda:0 .* last step"):
            call(ds)
    # Those that only pass elements on keep the mark, so a later map is still refused.
    later = ds.take(5).repeat(2).skip(1)
    assert later._device == "cuda:0"
    with pytest.raises(ValueError, match=r"map\(\) after prefetch_to_device"):
        later.map(lambda x: x)
    # A CPU pipeline is untouched, and so is the doc of what is wrapped.
    assert not hasattr(rows().take(2), "_device")
    assert "tf.data.Dataset.batch" in sluice.Dataset.batch.__doc__
