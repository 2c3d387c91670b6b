"""tf.data's names and keyword arguments, and the values they yield."""

import pickle

import numpy as np
import pytest
import sluice

from conftest import image_features, small100_features


def test_import_names():
    assert sluice.AUTOTUNE == -1
    assert sluice.__version__.count(".") == 2
    assert issubclass(sluice.DataLossError, IOError)
    for name in ("Dataset", "Options", "Tensor", "bench", "image_dataset_from_directory"):
        assert hasattr(sluice, name)


def test_tfrecord_parse_values_known(data):
    ds = (
        sluice.Dataset.tfrecord(str(data / "small100.tfrecord"))
        .map(sluice.ops.parse_example(small100_features(sluice)))
        .batch(10)
    )
    seen = 0
    for ids, vecs, names in ds:
        ids, vecs = np.asarray(ids), np.asarray(vecs)
        assert ids.dtype == np.int64 and ids.shape == (10,)
        assert vecs.dtype == np.float32 and vecs.shape == (10, 3)
        for i, v, n in zip(ids, vecs, names):
            assert i == seen
            np.testing.assert_array_equal(v, np.float32([i * 0.5, -i, 1 / (i + 1)]))
            assert n == b"item-%d" % i
            seen += 1
    assert seen == 100


def test_len_as_tf_data():
    assert len(sluice.Dataset.range(10).batch(3)) == 4
    with pytest.raises(TypeError, match="infinite"):
        len(sluice.Dataset.range(3).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(sluice.Dataset.range(10).filter(lambda x: x > 3))
    # Truthiness does not go through len(), as tf.data's.
    assert sluice.Dataset.range(3).repeat() and sluice.Dataset.range(0)


def test_tfrecord_skip_corrupt_reads_past_a_bad_record(data, capfd):
    corrupt = str(data / "small100.corrupt-record41.tfrecord")
    ids = [
        int(np.asarray(i))
        for i, _, _ in sluice.Dataset.tfrecord(corrupt, skip_corrupt=True).map(
            sluice.ops.parse_example(small100_features(sluice))
        )
    ]
    assert ids == [i for i in range(100) if i != 41]
    assert "corrupt-record41.tfrecord: record 41 at offset" in capfd.readouterr().err
    # Without it the error ends the file: ignore_errors() keeps only what came before.
    assert len(list(sluice.Dataset.tfrecord(corrupt).ignore_errors())) == 41


def test_tfrecord_max_record_bytes(data):
    photos = str(data / "images3.tfrecord")  # records of 57-68 KB
    with pytest.raises(MemoryError, match=r"exceeds max_record_bytes \(1000\); to read this file, "
                       r"raise max_record_bytes \(Python: Dataset.tfrecord's"):
        list(sluice.Dataset.tfrecord(photos, max_record_bytes=1000))
    assert len(list(sluice.Dataset.tfrecord(photos, max_record_bytes=100_000))) == 3
    with pytest.raises(ValueError, match="max_record_bytes must be >= 1"):
        sluice.Dataset.tfrecord(photos, max_record_bytes=0)


@pytest.mark.parametrize("suffix,compression", [(".gz", "GZIP"), (".zlib", "ZLIB"), (".gz", None)])
def test_tfrecord_compression(data, suffix, compression):
    ds = sluice.Dataset.tfrecord(str(data / ("small100.tfrecord" + suffix)), compression_type=compression)
    plain = list(sluice.Dataset.tfrecord(str(data / "small100.tfrecord")))
    assert list(ds) == plain and len(plain) == 100


def test_from_tensor_slices_and_transformations():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    ds = sluice.Dataset.from_tensor_slices((x, y))
    assert ds.cardinality() == 10
    rows = [(np.asarray(a), int(np.asarray(b))) for a, b in ds]
    assert [b for _, b in rows] == list(range(10))
    np.testing.assert_array_equal(rows[3][0], x[3])

    assert [int(np.asarray(v)) for v in sluice.Dataset.range(10).take(3)] == [0, 1, 2]
    assert [t.shape for t in next(iter(sluice.Dataset.from_tensors((7, 2.5))))] == [(), ()]
    assert [int(np.asarray(v)) for v in sluice.Dataset.range(10).skip(8)] == [8, 9]
    assert [int(np.asarray(v)) for v in sluice.Dataset.range(10).shard(3, 1)] == [1, 4, 7]
    assert [int(np.asarray(v)) for v in sluice.Dataset.range(2).repeat(2)] == [0, 1, 0, 1]
    assert sluice.Dataset.range(3).repeat().cardinality() == sluice.INFINITE_CARDINALITY
    batches = [np.asarray(b).tolist() for b in sluice.Dataset.range(5).batch(2, drop_remainder=True)]
    assert batches == [[0, 1], [2, 3]]
    evens = sluice.Dataset.range(10).filter(lambda v: v % 2 == 0)
    assert [int(np.asarray(v)) for v in evens] == [0, 2, 4, 6, 8]
    # A predicate must return a bool, as tf.data's must return a tf.bool scalar: a missing
    # return would silently drop everything, a string keep everything.
    def no_return(v):
        v % 2 == 0
    with pytest.raises(TypeError, match=r"must return a bool .*not None \(does it end without"):
        list(sluice.Dataset.range(5).filter(no_return))
    with pytest.raises(TypeError, match="must return a bool .*not str 'yes'"):
        list(sluice.Dataset.range(3).filter(lambda v: "yes"))
    with pytest.raises(TypeError, match="must return a bool .*not ndarray"):
        list(sluice.Dataset.range(3).filter(lambda v: np.array([True, False])))
    assert len(list(sluice.Dataset.range(4).filter(lambda v: np.bool_(v < 2)))) == 2
    pairs = list(sluice.Dataset.zip(sluice.Dataset.range(2), sluice.Dataset.range(10, 12)))
    assert [(int(np.asarray(a)), int(np.asarray(b))) for a, b in pairs] == [(0, 10), (1, 11)]
    as_tuple = list(sluice.Dataset.zip((sluice.Dataset.range(2), sluice.Dataset.range(10, 12))))
    assert [(int(np.asarray(a)), int(np.asarray(b))) for a, b in as_tuple] == [(0, 10), (1, 11)]
    with pytest.raises(TypeError, match="zip takes sluice.Datasets .* not int"):
        sluice.Dataset.zip((sluice.Dataset.range(2), 3))
    assert "Range" in repr(sluice.Dataset.range(3))


def test_strings_and_bytes():
    ds = sluice.Dataset.from_tensor_slices(["a", "bé"])
    assert list(ds) == [b"a", "bé".encode()]
    assert list(ds.batch(2)) == [[b"a", "bé".encode()]]
    # NumPy's fixed-width strings would drop trailing NULs (a serialized Example may end in one).
    assert list(sluice.Dataset.from_tensor_slices([b"ab\x00", b"c"])) == [b"ab\x00", b"c"]
    assert list(sluice.Dataset.from_tensor_slices(["a\x00"])) == [b"a\x00"]
    mapped = sluice.Dataset.range(1).map(lambda x: (x, [b"\x00\x00", b"x\x00"]))
    assert list(mapped)[0][1] == [b"\x00\x00", b"x\x00"]


def test_shuffle_is_seeded():
    def run(seed):
        ds = sluice.Dataset.range(100).shuffle(20, seed=seed)
        return [int(np.asarray(v)) for v in ds]

    assert run(3) == run(3)
    assert run(3) != run(4)
    assert sorted(run(3)) == list(range(100))
    opts = sluice.Options(seed=5)
    a = [int(np.asarray(v)) for v in sluice.Dataset.range(50).shuffle(10).with_options(opts)]
    b = [int(np.asarray(v)) for v in sluice.Dataset.range(50).shuffle(10).with_options(opts)]
    assert a == b and opts.seed == 5 and opts.deterministic is None


def test_list_files_and_interleave(data, tmp_path):
    for i in range(3):
        (tmp_path / f"part-{i}.tfrecord").write_bytes((data / "small100.tfrecord").read_bytes())
    files = sluice.Dataset.list_files(str(tmp_path / "part-*.tfrecord"), shuffle=False)
    assert list(files) == [str(tmp_path / f"part-{i}.tfrecord").encode() for i in range(3)]
    ds = files.interleave(sluice.Dataset.tfrecord, cycle_length=3, num_parallel_calls=sluice.AUTOTUNE)
    records = list(ds)
    assert len(records) == 300
    # cycle_length 3, block_length 1: the files' records alternate.
    assert records[0] == records[1] == records[2] != records[3]


def test_python_map_function_gets_numpy_and_returns_values():
    def f(x, y):
        assert isinstance(x, np.ndarray) and not x.flags.writeable
        return x * 2, y, b"tag"

    ds = sluice.Dataset.from_tensor_slices((np.arange(4, dtype=np.int32), np.ones(4))).map(
        f, num_parallel_calls=2
    )
    out = list(ds)
    assert [int(np.asarray(a)) for a, _, _ in out] == [0, 2, 4, 6]
    assert out[0][0].shape == () and out[0][1].shape == ()  # NumPy scalars stay scalars
    assert out[0][1].dtype == "float32" and out[0][2] == b"tag"


def test_pickle_refused_clearly():
    with pytest.raises(TypeError, match="sluice.Dataset cannot be pickled"):
        pickle.dumps(sluice.Dataset.range(3))
    with pytest.raises(TypeError, match="sluice.Iterator cannot be pickled"):
        pickle.dumps(iter(sluice.Dataset.range(3)))
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(sluice.ops.decode_jpeg())


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_parallel_calls"):
        sluice.Dataset.range(3).map(lambda x: x, num_parallel_calls=0)
    with pytest.raises(TypeError):
        sluice.Dataset.range(3).map(42)
    with pytest.raises(ValueError, match="compression"):
        sluice.Dataset.tfrecord("x", compression_type="BROTLI")
    with pytest.raises(TypeError, match="dicts"):
        sluice.Dataset.from_tensor_slices({"a": np.zeros(3)})
    with pytest.raises(TypeError, match="float64|complex"):
        sluice.Dataset.from_tensor_slices(np.zeros(3, dtype=np.complex64))
    # Checked where the dataset is made, not at the first next().
    with pytest.raises(TypeError, match="filter predicate must be a callable, not int"):
        sluice.Dataset.range(3).filter(1)
    with pytest.raises(TypeError, match="interleave function must be a callable"):
        sluice.Dataset.range(3).interleave("tfrecord")
    with pytest.raises(TypeError, match="flat_map function must be a callable"):
        sluice.Dataset.range(3).flat_map(3)
    # The ops' arguments too (they failed on every element).
    with pytest.raises(ValueError, match="output dtype must be float32, bfloat16 or float16"):
        sluice.ops.normalize(sluice.IMAGENET_MEAN, sluice.IMAGENET_STD, dtype="int32")
    with pytest.raises(ValueError, match="std of channel 1 is 0"):
        sluice.ops.normalize([0.5, 0.5, 0.5], [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="need 0 < min_area <= max_area <= 1"):
        sluice.ops.decode_and_random_resized_crop(16, scale=(0.5, 2.0))
    with pytest.raises(ValueError, match="need 0 < min_aspect_ratio <= max_aspect_ratio"):
        sluice.ops.random_resized_crop(16, ratio=(2.0, 1.0))
    # flat_map: each element's dataset, one after the other.
    nested = sluice.Dataset.range(1, 4).flat_map(lambda n: sluice.Dataset.range(int(n)))
    assert [int(v) for v in nested] == [0, 0, 1, 0, 1, 2]
    with pytest.raises(ValueError, match="buffer_size must be >= 1"):
        sluice.Dataset.tfrecord("x", buffer_size=sluice.AUTOTUNE)
    with pytest.raises(ValueError, match="channels must be 0 .* 1 or 3, not -1"):
        sluice.ops.decode_and_random_resized_crop(8, channels=-1)
    with pytest.raises(ValueError, match="channels must be"):
        sluice.ops.decode_jpeg(channels=4)
    with pytest.raises(ValueError, match="channels must be"):
        sluice.ops.decode_and_resize(8, channels=2)
    with pytest.raises(ValueError, match="image sizes must be >= 1, not 0"):
        sluice.ops.decode_and_resize(0)
    # An unsigned value past int64 would wrap to a negative one.
    with pytest.raises(ValueError, match="above 2\\*\\*63 - 1"):
        sluice.Dataset.from_tensor_slices([2**63])
    assert [int(np.asarray(v)) for v in sluice.Dataset.from_tensor_slices(
        np.array([2**63 - 1], dtype=np.uint64))] == [2**63 - 1]


def test_an_unknown_keyword_argument_is_named_with_what_is_taken():
    # pybind11 listed its signatures; a Python function names the argument.
    with pytest.raises(TypeError, match=r"^map\(\) got an unexpected keyword argument 'name' "
                       r"\(tf.data's name= .*\); sluice's map takes \(map_func, "
                       r"num_parallel_calls, deterministic\)$"):
        sluice.Dataset.range(3).map(lambda x: x, name="m")
    with pytest.raises(TypeError, match=r"^batch\(\) got an unexpected keyword argument "
                       r"'drop_remainer'; sluice's batch takes \(batch_size, drop_remainder, "):
        sluice.Dataset.range(3).batch(2, drop_remainer=True)
    with pytest.raises(TypeError, match=r"^range\(\) got .* 'name'"):  # a static method
        sluice.Dataset.range(3, name="r")
    with pytest.raises(TypeError, match=r"^zip\(\) got .* 'nme'; sluice's zip takes \(\*args\)"):
        sluice.Dataset.zip((sluice.Dataset.range(3),), nme=1)
    with pytest.raises(TypeError, match=r"^bench\(\) got .* 'secs'; .* \(dataset, seconds, "):
        sluice.bench(sluice.Dataset.range(3), secs=1)
    with pytest.raises(TypeError, match=r"^decode_jpeg\(\) got .* 'chanels'; sluice's "
                       r"decode_jpeg takes \(channels, dct_method, component\)$"):
        sluice.ops.decode_jpeg(chanels=3)
    # A wrong type among known arguments keeps pybind11's message, which shows the types.
    with pytest.raises(TypeError, match="incompatible function arguments"):
        sluice.Dataset.range(3).batch(batch_size="x")
    # Each keeps its name and documentation.
    assert sluice.Dataset.map.__name__ == "map" and "tf.data.Dataset.map" in sluice.Dataset.map.__doc__


def test_map_function_mistakes_are_named():
    def forgets_to_return(x):
        pass

    with pytest.raises(TypeError, match="map function .*forgets_to_return returned None.*without"):
        next(iter(sluice.Dataset.range(1).map(forgets_to_return)))
    # Raised again from next(), a StopIteration would end the loop as if the data had ended
    # (PEP 479's rule for generators): it comes as a RuntimeError whose cause it is.
    labels = iter([0, 1])
    ds = sluice.Dataset.range(5).map(lambda x: (x, next(labels)))
    with pytest.raises(RuntimeError, match="raised StopIteration") as info:
        list(ds)
    assert isinstance(info.value.__cause__, StopIteration)


def test_from_generator_output_signature():
    def gen():
        yield 1, [1, 2, 3]  # a Python int and list, converted to the signature's dtypes
        yield 2.5, [4, 5]

    ds = sluice.Dataset.from_generator(
        gen, output_signature=(("float32", ()), ("int64", (None,))))
    assert ds.element_spec == (("float32", ()), ("int64", (None,)))
    out = [(np.asarray(a), np.asarray(b)) for a, b in ds]
    assert out[0][0].dtype == np.float32 and float(out[1][0]) == 2.5
    assert out[1][1].dtype == np.int64 and out[1][1].tolist() == [4, 5]
    # One component: a bare pair (as element_spec gives it), or a 1-tuple of pairs.
    for signature in [("uint8", (2,)), (("uint8", (2,)),)]:
        one = sluice.Dataset.from_generator(lambda: iter([[1, 2]]), output_signature=signature)
        assert one.element_spec == ("uint8", (2,))
        assert [np.asarray(v).tolist() for v in one] == [[1, 2]]
    # A yielded tuple is one component's value there, as tf.data reads it; NumPy integers are
    # dimensions.
    pair = sluice.Dataset.from_generator(lambda: iter([(1, 2)]), output_signature=("int64", (np.int64(2),)))
    assert [np.asarray(v).tolist() for v in pair] == [[1, 2]]
    names = sluice.Dataset.from_generator(lambda: iter([(b"a", b"b")]), output_signature=("string", (2,)))
    assert list(names) == [[b"a", b"b"]]

    # An element of another shape, or that NumPy cannot convert: an error naming it.
    wrong_shape = sluice.Dataset.from_generator(
        lambda: iter([[1, 2], [1, 2, 3]]), output_signature=("int64", (2,)))
    it = iter(wrong_shape)
    assert np.asarray(next(it)).tolist() == [1, 2]
    with pytest.raises(ValueError, match="does not match the declared output_signature"):
        next(it)
    text = sluice.Dataset.from_generator(lambda: iter(["abc"]), output_signature=("float32", ()))
    with pytest.raises(TypeError, match=r"component 0 \('abc'\) could not be converted to float32"):
        list(text)
    with pytest.raises(TypeError, match="output_signature must be a \\(dtype, shape\\) pair"):
        sluice.Dataset.from_generator(gen, output_signature="float32")
    with pytest.raises(TypeError, match="no sluice dtype 'float64'"):
        sluice.Dataset.from_generator(gen, output_signature=("float64", ()))


def test_from_generator():
    def gen(n):
        for i in range(n):
            yield np.full(i, i, dtype=np.int32), b"x" * i

    ds = sluice.Dataset.from_generator(gen, args=(4,))
    out = [(np.asarray(a).tolist(), b) for a, b in ds]
    assert out == [([], b""), ([1], b"x"), ([2, 2], b"xx"), ([3, 3, 3], b"xxx")]
    assert len(list(ds)) == 4  # each iterator calls the generator again
    it = iter(ds)
    next(it)
    resumed = iter(ds)
    resumed.load_state_dict(it.state_dict())  # the generator runs again, up to the position
    assert [b for _, b in resumed] == [b"x", b"xx", b"xxx"]

    def broken():
        yield 1
        raise KeyError("generator failed")

    it = iter(sluice.Dataset.from_generator(broken))
    next(it)
    with pytest.raises(KeyError, match="generator failed"):
        next(it)


def test_padded_batch():
    ds = sluice.Dataset.from_generator(lambda: (np.arange(n, dtype=np.int64) for n in (1, 3, 2)))
    batches = [np.asarray(b).tolist() for b in ds.padded_batch(2)]
    assert batches == [[[0, 0, 0], [0, 1, 2]], [[0, 1]]]
    padded = ds.padded_batch(3, padded_shapes=([4],), padding_values=(-1,))
    assert np.asarray(next(iter(padded))).tolist() == [[0, -1, -1, -1], [0, 1, 2, -1], [0, 1, -1, -1]]
    # tf.data's spelling for one component: its shape and value themselves.
    for shapes, values in (([4], -1), ([None], np.int64(-1))):
        padded = ds.padded_batch(3, padded_shapes=shapes, padding_values=values)
        expected = [[0, -1, -1, -1], [0, 1, 2, -1], [0, 1, -1, -1]]
        assert np.asarray(next(iter(padded))).tolist() == [row[:4 if shapes[0] else 3]
                                                           for row in expected]
    with pytest.raises(TypeError, match="padded_shapes: a shape"):
        ds.padded_batch(2, padded_shapes=5)
    # A shape per component given as an array, as tf.data takes it too.
    padded = ds.padded_batch(3, padded_shapes=(np.array([4]),), padding_values=(-1,))
    assert np.asarray(next(iter(padded))).shape == (3, 4)


def test_element_spec():
    ds = sluice.Dataset.from_tensor_slices((np.zeros((5, 3), np.float32), np.arange(5)))
    assert ds.element_spec == (("float32", (3,)), ("int64", ()))
    assert ds.batch(2).element_spec == (("float32", (None, 3)), ("int64", (None,)))
    assert ds.map(lambda x, y: x).element_spec is None


def _matches(spec, element):
    """Whether every component has its spec's dtype and a shape its spec allows."""
    values = element if isinstance(element, tuple) else (element,)
    specs = spec if isinstance(spec[0], tuple) else (spec,)
    dtype = lambda v: "bytes" if np.asarray(v).dtype.kind in "SO" else str(np.asarray(v).dtype)
    return len(values) == len(specs) and all(
        dtype(v) == d and len(np.shape(v)) == len(shape)
        and all(want is None or want == got for want, got in zip(shape, np.shape(v)))
        for v, (d, shape) in zip(values, specs))


@pytest.mark.parametrize("ops, spec", [
    ([], (("bytes", ()), ("int64", ()))),
    ([sluice.ops.decode_jpeg()], (("uint8", (None, None, None)), ("int64", ()))),
    ([sluice.ops.decode_jpeg(channels=1)], (("uint8", (None, None, 1)), ("int64", ()))),
    ([sluice.ops.decode_and_random_resized_crop((24, 16))],
     (("uint8", (24, 16, 3)), ("int64", ()))),
    # Fused into one pass, the same spec as the steps'.
    ([sluice.ops.decode_and_random_resized_crop(8), sluice.ops.random_flip_left_right(),
      sluice.ops.normalize(sluice.IMAGENET_MEAN, sluice.IMAGENET_STD)],
     (("float32", (8, 8, 3)), ("int64", ()))),
    ([sluice.ops.decode_and_resize(8, channels=1), sluice.ops.normalize(0.5, 0.2,
                                                                        channels_first=True)],
     (("float32", (1, 8, 8)), ("int64", ()))),
    ([sluice.ops.decode_and_resize(12), sluice.ops.center_crop((6, 4)),
      sluice.ops.flip_left_right(), sluice.ops.random_resized_crop(5)],
     (("uint8", (5, 5, 3)), ("int64", ()))),
    ([sluice.ops.decode_jpeg(channels=3), sluice.ops.resize((7, 9))],
     (("float32", (7, 9, 3)), ("int64", ()))),
    ([sluice.ops.decode_and_resize(8), sluice.ops.rescaling(1 / 255),
      sluice.ops.random_flip(), sluice.ops.random_rotation(0.1), sluice.ops.random_zoom(0.1),
      sluice.ops.random_translation(0.1, 0.1), sluice.ops.random_contrast(0.2, (0, 1)),
      sluice.ops.random_brightness(0.2, (0, 1)), sluice.ops.normalization(0.5, 0.25)],
     (("float32", (8, 8, 3)), ("int64", ()))),
    ([sluice.ops.decode_and_resize(4), sluice.ops.cast("int32"),
      sluice.ops.cast("int64", component=1)], (("int32", (4, 4, 3)), ("int64", ()))),
])
def test_builtin_ops_give_their_element_spec(data, ops, spec):
    # tf.data traces a map function for its element_spec; a built-in op says what it makes, and
    # Map checks every element against it (an error, not a wrong spec, if a rule were wrong).
    ds = sluice.Dataset.tfrecord(str(data / "images3.tfrecord")).map(
        [sluice.ops.parse_example(image_features(sluice))] + ops)
    assert ds.element_spec == spec
    elements = list(ds)
    assert len(elements) == 3 and all(_matches(spec, e) for e in elements)
    batched = ds.batch(2, drop_remainder=True)  # a fused crop writes into the batch's rows
    assert batched.element_spec == tuple((d, (2,) + s) for d, s in spec)
    assert all(_matches(batched.element_spec, b) for b in batched)


def test_parse_example_spec_and_what_stays_unknown(data, tmp_path):
    features = dict(small100_features(sluice), extra=sluice.io.VarLenFeature("float32"))
    paths = sluice.Dataset.from_tensor_slices([b"a", b"b"])
    # The serialized Example in component 1 gives its place to the features, in order.
    ds = sluice.Dataset.zip((paths, sluice.Dataset.tfrecord(str(data / "small100.tfrecord"))))
    parsed = ds.map(sluice.ops.parse_example(features, component=1))
    assert parsed.element_spec == (("bytes", ()), ("int64", ()), ("float32", (3,)),
                                   ("bytes", ()), ("float32", (None,)))
    assert all(_matches(parsed.element_spec, e) for e in parsed)
    assert paths.map(sluice.ops.read_file()).element_spec == ("bytes", ())
    # After a Python function, or with a component that is not there: unknown, as before.
    assert paths.map(lambda p: p).map(sluice.ops.read_file()).element_spec is None
    assert paths.map(sluice.ops.read_file(component=1)).element_spec is None
    # An image op given a vector cannot work: unknown here, and the error comes from the run.
    vectors = sluice.Dataset.from_tensor_slices(np.zeros((2, 3), dtype=np.float32))
    assert vectors.map(sluice.ops.resize(4)).element_spec is None


def test_concatenate_of_other_dtypes_is_refused_when_built():
    ints = sluice.Dataset.range(3)
    with pytest.raises(TypeError, match=r"concatenate: the datasets' elements differ: \(int64\) "
                       r"and \(float32\)"):
        ints.concatenate(sluice.Dataset.from_tensor_slices(np.zeros(2, np.float32)))
    with pytest.raises(TypeError, match=r"\(int64\) and \(int64, int64\)"):
        ints.concatenate(ints.enumerate())
    assert [int(v) for v in ints.concatenate(sluice.Dataset.range(5, 7))] == [0, 1, 2, 5, 6]
    # A Python map's elements are unknown until they come: checked one by one, at the first.
    floats = sluice.Dataset.range(2).map(lambda x: np.float32(x))
    combined = ints.concatenate(floats)
    with pytest.raises(ValueError, match="element 0 of the appended dataset has components "
                       r"\(float32\), expected \(int64\)"):
        list(combined)


def test_options_and_tensor_attributes_say_what_they_are():
    assert repr(sluice.Options()) == "sluice.Options()"
    assert (repr(sluice.Options(seed=3, deterministic=False)) ==
            "sluice.Options(seed=3, deterministic=False)")
    for name in ("seed", "deterministic", "threads", "cpu_budget", "ram_budget", "autotune",
                 "checkpoint_sources"):
        assert getattr(sluice.Options, name).__doc__, name
    for name in ("shape", "ndim", "nbytes", "device", "dtype", "__dlpack_device__"):
        assert getattr(sluice.Tensor, name).__doc__, name
    assert "StopIteration" in sluice.Iterator.__next__.__doc__
