"""window, scan, sample_from_datasets and choose_from_datasets: tf.data's names, their values, and
their iterator state mid-epoch."""

import numpy as np
import pytest
import sluice


def values(ds):
    """The elements as Python ints (or lists of them), tuples for several components."""

    def one(c):
        return np.asarray(c).tolist()

    return [tuple(one(c) for c in e) if isinstance(e, tuple) else one(e) for e in ds]


def resumed_after(ds, n):
    """The first n elements of iter(ds), and what a fresh iterator restored from its state_dict
    yields next, beside what the first iterator yields next."""
    it = iter(ds)
    first = values(next(it) for _ in range(n))
    state = it.state_dict()
    resumed = iter(ds)
    resumed.load_state_dict(state)
    return first, values(resumed), values(it)


def test_window_contents():
    windows = values(sluice.Dataset.range(7).window(3, shift=2))
    assert windows == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    assert values(sluice.Dataset.range(7).window(3, shift=2, drop_remainder=True)) == [
        [0, 1, 2],
        [2, 3, 4],
        [4, 5, 6],
    ]
    # shift defaults to size: non-overlapping windows.
    assert values(sluice.Dataset.range(5).window(2)) == [[0, 1], [2, 3], [4]]
    assert values(sluice.Dataset.range(10).window(3, shift=1, stride=3, drop_remainder=True)) == [
        [0, 3, 6],
        [1, 4, 7],
        [2, 5, 8],
        [3, 6, 9],
    ]
    # Several components: each stacked.
    pairs = sluice.Dataset.zip(sluice.Dataset.range(4), sluice.Dataset.range(10, 14))
    assert values(pairs.window(2, shift=1, drop_remainder=True)) == [
        ([0, 1], [10, 11]),
        ([1, 2], [11, 12]),
        ([2, 3], [12, 13]),
    ]
    images = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    (w,) = list(sluice.Dataset.from_tensor_slices(images).window(4))
    assert w.shape == (4, 2, 3) and w.dtype == "float32"
    np.testing.assert_array_equal(np.asarray(w), images)
    spec = sluice.Dataset.range(9).window(3, drop_remainder=True).element_spec
    assert spec == ("int64", (3,))


def test_window_errors():
    with pytest.raises(ValueError, match="must be >= 1"):
        sluice.Dataset.range(3).window(0)
    with pytest.raises(ValueError):
        sluice.Dataset.range(3).window(2, shift=0)
    with pytest.raises(ValueError):
        sluice.Dataset.range(3).window(2, stride=0)
    # Elements of one window must agree in shape: the C++ error, as ValueError.
    ragged = sluice.Dataset.from_generator(lambda: iter([np.zeros(2), np.zeros(3)]))
    with pytest.raises(ValueError, match="differ"):
        list(ragged.window(2))


def test_window_state_dict_mid_epoch():
    ds = sluice.Dataset.range(20).window(4, shift=3, stride=2)
    first, resumed, rest = resumed_after(ds, 2)
    assert first == [[0, 2, 4, 6], [3, 5, 7, 9]]
    assert resumed == rest and resumed[0] == [6, 8, 10, 12] and len(resumed) == 5
    assert first + resumed == values(ds)


def test_scan_running_sums():
    ds = sluice.Dataset.range(1, 6).scan(0, lambda state, x: (state + x, state + x))
    assert values(ds) == [1, 3, 6, 10, 15]
    # A state of several components is a tuple; so is an element of several.
    fibonacci = sluice.Dataset.range(8).scan((0, 1), lambda s, _: ((s[1], s[0] + s[1]), s[0]))
    assert values(fibonacci) == [0, 1, 1, 2, 3, 5, 8, 13]
    pairs = sluice.Dataset.zip(sluice.Dataset.range(4), sluice.Dataset.range(10, 14))
    sums = pairs.scan(np.float32(0.5), lambda s, xy: (s + xy[0] * xy[1], (xy[0], s)))
    out = list(sums)
    assert values(out) == [(0, 0.5), (1, 0.5), (2, 11.5), (3, 35.5)]
    assert np.asarray(out[1][1]).dtype == np.float32
    # Each pass starts again from the initial state.
    assert values(ds) == [1, 3, 6, 10, 15]


def test_scan_errors():
    with pytest.raises(TypeError, match="callable"):
        sluice.Dataset.range(3).scan(0, 5)
    with pytest.raises(TypeError, match="new_state, output_element"):
        list(sluice.Dataset.range(3).scan(0, lambda s, x: s + x))
    with pytest.raises(TypeError, match="returned None as its output element"):
        list(sluice.Dataset.range(3).scan(0, lambda s, x: (s, None)))

    class Boom(Exception):
        pass

    def explode(state, x):
        if x == 2:
            raise Boom("at 2")
        return state + x, x

    it = iter(sluice.Dataset.range(5).scan(0, explode))
    assert values([next(it), next(it)]) == [0, 1]
    with pytest.raises(Boom, match="at 2"):
        next(it)


def test_scan_state_dict_mid_epoch():
    ds = sluice.Dataset.range(10).scan(100, lambda s, x: (s + x, s))
    first, resumed, rest = resumed_after(ds, 4)
    assert first == [100, 100, 101, 103]
    assert resumed == rest == [106, 110, 115, 121, 128, 136]


def constant(value):
    return sluice.Dataset.from_tensors(value).repeat()


def test_sample_from_datasets_respects_weights():
    ds = sluice.Dataset.sample_from_datasets([constant(0), constant(1), constant(2)],
                                             weights=[0.2, 0.5, 0.3], seed=42).take(20_000)
    counts = np.bincount(values(ds), minlength=3) / 20_000
    # Binomial standard deviations are at most 0.0036: 0.02 is more than 5 of them.
    np.testing.assert_allclose(counts, [0.2, 0.5, 0.3], atol=0.02)
    uniform = sluice.Dataset.sample_from_datasets([constant(0), constant(1)], seed=3).take(10_000)
    assert abs(np.mean(values(uniform)) - 0.5) < 0.02
    never = sluice.Dataset.sample_from_datasets([constant(0), constant(1)], [0, 1], seed=1)
    assert values(never.take(100)) == [1] * 100


def test_sample_from_datasets_is_deterministic_for_a_seed():
    def draws(seed, options=None):
        ds = sluice.Dataset.sample_from_datasets([constant(0), constant(1)], [0.5, 0.5], seed=seed)
        if options is not None:
            ds = ds.with_options(options)
        return values(ds.take(200))

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    # The pipeline's seed, when sample_from_datasets has none.
    assert draws(None, sluice.Options(seed=5)) == draws(None, sluice.Options(seed=5))
    assert draws(None, sluice.Options(seed=5)) != draws(None, sluice.Options(seed=6))


def test_sample_from_datasets_ends():
    short, long = sluice.Dataset.range(3), sluice.Dataset.range(100, 150)
    everything = values(sluice.Dataset.sample_from_datasets([short, long], seed=1))
    assert sorted(everything) == list(range(3)) + list(range(100, 150))
    # Each input's elements come in their order.
    assert [v for v in everything if v < 100] == [0, 1, 2]
    assert [v for v in everything if v >= 100] == list(range(100, 150))
    stopped = values(
        sluice.Dataset.sample_from_datasets([short, long], seed=1, stop_on_empty_dataset=True))
    assert [v for v in stopped if v < 100] == [0, 1, 2] and len(stopped) < len(everything)


def test_sample_from_datasets_errors():
    with pytest.raises(ValueError, match="2 weights for 3 datasets"):
        sluice.Dataset.sample_from_datasets([constant(0)] * 3, weights=[1, 2])
    with pytest.raises(TypeError, match="sluice.Dataset"):
        sluice.Dataset.sample_from_datasets([constant(0), 5])
    with pytest.raises(TypeError, match="dataset of weights"):
        sluice.Dataset.sample_from_datasets([constant(0)], weights=constant(1.0))
    with pytest.raises(ValueError, match="weights must be finite and >= 0"):
        list(sluice.Dataset.sample_from_datasets([constant(0), constant(1)], [1, -1]))



def test_mixing_datasets_of_other_dtypes_is_a_type_error():
    # As tf.data's, when built: the elements came mixed, an int64 among floats.
    floats = sluice.Dataset.from_tensor_slices(np.float32([0.5, 1.5]))
    with pytest.raises(TypeError, match=r"datasets\[0\] has \(int64\), datasets\[2\] \(float32\)"):
        sluice.Dataset.sample_from_datasets([sluice.Dataset.range(3), sluice.Dataset.range(5), floats])
    choice = sluice.Dataset.from_tensor_slices(np.int64([0, 1]))
    with pytest.raises(TypeError, match="choose_from_datasets: the datasets' elements differ"):
        sluice.Dataset.choose_from_datasets([sluice.Dataset.range(3), floats], choice)
    # A Python map's elements are not known before they come: not refused here.
    unknown = sluice.Dataset.range(2).map(lambda x: x)
    assert unknown.element_spec is None
    sluice.Dataset.sample_from_datasets([unknown, floats])


def test_sample_from_datasets_state_dict_mid_epoch():
    def make():
        inputs = [sluice.Dataset.range(0, 40), sluice.Dataset.range(100, 140).map(lambda v: v + 1)]
        return sluice.Dataset.sample_from_datasets(inputs, weights=[0.3, 0.7], seed=11)

    first, resumed, rest = resumed_after(make(), 25)
    assert resumed == rest and len(resumed) == 55
    # A dataset built again: another iteration of the same one draws another order.
    assert first + resumed == values(make())


def test_choose_from_datasets_order():
    letters = [constant("a"), constant("b"), constant("c")]
    choice = sluice.Dataset.from_tensor_slices(np.int64([0, 1, 2, 1, 0, 2, 2]))
    assert list(sluice.Dataset.choose_from_datasets(letters, choice)) == [
        b"a", b"b", b"c", b"b", b"a", b"c", b"c"]
    ranges = [sluice.Dataset.range(10), sluice.Dataset.range(100, 110)]
    alternate = sluice.Dataset.range(6).map(lambda k: k % 2)
    chosen = sluice.Dataset.choose_from_datasets(ranges, alternate)
    assert values(chosen) == [0, 100, 1, 101, 2, 102]


def test_choose_from_datasets_ends():
    ranges = [sluice.Dataset.range(2), sluice.Dataset.range(100, 110)]
    choice = sluice.Dataset.from_tensor_slices([0, 0, 0, 1, 1])
    assert values(sluice.Dataset.choose_from_datasets(ranges, choice)) == [0, 1]
    assert values(
        sluice.Dataset.choose_from_datasets(ranges, choice, stop_on_empty_dataset=False)) == [
            0, 1, 100, 101]
    with pytest.raises(ValueError, match="outside"):
        list(sluice.Dataset.choose_from_datasets(ranges, sluice.Dataset.from_tensors(2)))
    with pytest.raises(TypeError):
        sluice.Dataset.choose_from_datasets(ranges, [0, 1])


def test_choose_from_datasets_state_dict_mid_epoch():
    def make():
        ranges = [sluice.Dataset.range(50), sluice.Dataset.range(100, 150)]
        choice = sluice.Dataset.range(60).shuffle(60, seed=4).map(lambda k: k % 2)
        return sluice.Dataset.choose_from_datasets(ranges, choice)

    first, resumed, rest = resumed_after(make(), 17)
    assert resumed == rest and first + resumed == values(make()) and len(first + resumed) == 60


def test_scan_state_keeps_its_dtype():
    floats = sluice.Dataset.from_tensor_slices(np.float32([0.5, 1.5]))
    with pytest.raises(ValueError, match=r"new state of \(float32\[\]\) for a state of \(int64\[\]\)"):
        list(floats.scan(0, lambda s, x: (s + x, x)))
    assert [float(v) for v in floats.scan(0.0, lambda s, x: (s + x, s + x))] == [0.5, 2.0]
