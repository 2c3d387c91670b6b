"""text_line, csv, save / load and snapshot: tf.data's names, and the values they give back."""

import _thread
import errno
import functools
import gzip
import threading

import numpy as np
import pytest
import sluice


def ints(ds):
    return [int(np.asarray(v)) for v in ds]


def test_text_line_lines(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"first\nsecond\r\n\nlast without newline")
    b.write_bytes("x\né\n".encode())
    ds = sluice.Dataset.text_line([str(a), str(b)])
    assert list(ds) == [b"first", b"second", b"", b"last without newline", b"x", "é".encode()]
    assert list(sluice.Dataset.text_line(str(b), buffer_size=1)) == [b"x", "é".encode()]
    assert ds.element_spec == ("bytes", ())


def test_text_line_num_parallel_reads_interleaves_the_files(tmp_path):
    paths = []
    for name, count in [("a", 3), ("b", 1), ("c", 2)]:
        (tmp_path / name).write_text("".join(f"{name}{i}\n" for i in range(count)))
        paths.append(str(tmp_path / name))
    # As tf.data's interleave: a line from each of 2 open files in turn; a file that ends passes
    # its turn (b after b0), and the next file opens at its slot's next turn.
    two = sluice.Dataset.text_line(paths, num_parallel_reads=2)
    assert list(two) == [b"a0", b"b0", b"a1", b"a2", b"c0", b"c1"]
    assert two.element_spec == ("bytes", ())
    assert sorted(sluice.Dataset.text_line(paths, num_parallel_reads=sluice.AUTOTUNE)) == sorted(
        sluice.Dataset.text_line(paths))
    with pytest.raises(ValueError, match="num_parallel_reads must be >= 1"):
        sluice.Dataset.text_line(paths, num_parallel_reads=0)


def test_text_line_compression(tmp_path):
    lines = [b"line %d" % i for i in range(100)]
    (tmp_path / "lines.gz").write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    (tmp_path / "lines.data").write_bytes(gzip.compress(b"\n".join(lines)))
    assert list(sluice.Dataset.text_line(str(tmp_path / "lines.gz"))) == lines  # by its suffix
    named = str(tmp_path / "lines.data")
    assert list(sluice.Dataset.text_line(named, compression_type="GZIP")) == lines
    with pytest.raises(ValueError, match="unknown compression"):
        sluice.Dataset.text_line(str(tmp_path / "lines.gz"), compression_type="SNAPPY")


def test_os_errors_are_the_oserror_python_would_raise(tmp_path):
    # A directory where a file belongs: IsADirectoryError (not a RuntimeError), with .errno set,
    # as open() raises; a missing file stays FileNotFoundError (its status code says so).
    with pytest.raises(IsADirectoryError, match="is a directory") as raised:
        list(sluice.Dataset.tfrecord(str(tmp_path)))
    assert raised.value.errno == errno.EISDIR
    with pytest.raises(FileNotFoundError, match="missing.tfrecord"):
        list(sluice.Dataset.tfrecord(str(tmp_path / "missing.tfrecord")))
    # The same from ops.read_file (it was a ValueError, "not a regular file").
    with pytest.raises(IsADirectoryError, match="is a directory") as raised:
        next(iter(sluice.Dataset.from_tensors(str(tmp_path).encode()).map(
            sluice.ops.read_file())))
    assert raised.value.errno == errno.EISDIR


def test_text_line_errors_and_state(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        list(sluice.Dataset.text_line(str(tmp_path / "missing.txt")))
    with pytest.raises(ValueError, match="buffer_size"):
        sluice.Dataset.text_line("x.txt", buffer_size=0)
    path = tmp_path / "n.txt"
    path.write_text("".join(f"{i}\n" for i in range(50)))
    ds = sluice.Dataset.text_line([str(path), str(path)])
    it = iter(ds)
    first = [next(it) for _ in range(70)]
    resumed = iter(ds)
    resumed.load_state_dict(it.state_dict())
    rest = list(resumed)
    assert rest == list(it) and first + rest == list(ds)
    assert rest[0] == b"20" and len(rest) == 30


def test_csv_columns_and_defaults(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,score,name,count\n1,2.5,x,\n3,,"q,r",7\n-4,1e3,,NA\n')
    ds = sluice.Dataset.csv(str(path), [np.int32, 0.0, "none", 9], header=True, na_value="NA")
    rows = list(ds)
    assert len(rows) == 3
    ids, scores, names, counts = (list(column) for column in zip(*rows))
    assert [np.asarray(v).dtype for v in rows[0][:2]] == [np.int32, np.float32]
    assert np.asarray(rows[0][3]).dtype == np.int64
    assert [int(np.asarray(v)) for v in ids] == [1, 3, -4]
    assert [float(np.asarray(v)) for v in scores] == [2.5, 0.0, 1000.0]  # a missing field: 0.0
    assert names == [b"x", b"q,r", b"none"]  # quoted, and missing
    assert [int(np.asarray(v)) for v in counts] == [9, 7, 9]  # missing, and na_value
    assert ds.element_spec == (("int32", ()), ("float32", ()), ("bytes", ()), ("int64", ()))


def test_csv_options(tmp_path):
    path = tmp_path / "t.psv"
    path.write_text("1|a|10\n2|b|20\n")
    # select_cols, a one-column dataset (its elements are the values), field_delim.
    middle = sluice.Dataset.csv(str(path), [""], field_delim="|", select_cols=[1])
    assert list(middle) == [b"a", b"b"]
    outer = sluice.Dataset.csv(str(path), [np.int64, [0]], field_delim="|", select_cols=[0, 2])
    assert [tuple(int(np.asarray(c)) for c in row) for row in outer] == [(1, 10), (2, 20)]
    quoted = tmp_path / "q.csv"
    quoted.write_text('"a,b",c\n')
    assert list(sluice.Dataset.csv(str(quoted), [str, str, str], use_quote_delim=False)) == [
        (b'"a', b'b"', b"c")]
    with pytest.raises(ValueError, match="one character"):
        sluice.Dataset.csv(str(path), [0], field_delim="||")
    # exclude_cols: the columns left, one record default each.
    kept = sluice.Dataset.csv(str(path), [np.int64, [0]], field_delim="|", exclude_cols=[1])
    assert [tuple(int(np.asarray(c)) for c in row) for row in kept] == [(1, 10), (2, 20)]
    assert list(sluice.Dataset.csv(str(path), [""], field_delim="|", exclude_cols=[0, 2])) == [
        b"a", b"b"]
    with pytest.raises(ValueError, match="select_cols or exclude_cols, not both"):
        sluice.Dataset.csv(str(path), [0], select_cols=[0], exclude_cols=[1])
    with pytest.raises(ValueError, match="exclude_cols must be sorted"):
        sluice.Dataset.csv(str(path), [0], exclude_cols=[2, 1])


def test_csv_errors(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1,2\n,3\n4\n5,6\n")
    # A required column (a type) with an empty field, then a record with too few fields: each
    # a ValueError naming the file and line, in its place.
    it = iter(sluice.Dataset.csv(str(path), [int, int]))
    assert [int(np.asarray(v)) for v in next(it)] == [1, 2]
    with pytest.raises(ValueError, match="bad.csv"):
        next(it)
    # ignore_errors skips just those records.
    rows = list(sluice.Dataset.csv(str(path), [int, int]).ignore_errors())
    assert [[int(np.asarray(v)) for v in row] for row in rows] == [[1, 2], [5, 6]]
    with pytest.raises(ValueError):
        list(sluice.Dataset.csv(str(path), [0, 0], select_cols=[0]))  # one column for two
    with pytest.raises(TypeError, match="float64"):
        sluice.Dataset.csv(str(path), [np.float64, np.float64])
    with pytest.raises(FileNotFoundError):
        list(sluice.Dataset.csv(str(tmp_path / "missing.csv"), [0]))


def example_dataset():
    x = np.arange(60, dtype=np.float32).reshape(20, 3)
    labels = np.arange(20) * 10
    names = [f"item-{i}" for i in range(20)]
    return sluice.Dataset.from_tensor_slices((x, labels, names))


def as_rows(ds):
    return [(np.asarray(x).tolist(), int(np.asarray(y)), n) for x, y, n in ds]


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_save_load_round_trip(tmp_path, compression):
    ds = example_dataset()
    assert ds.save(str(tmp_path / "saved"), compression=compression) is None
    loaded = sluice.Dataset.load(str(tmp_path / "saved"))
    assert as_rows(loaded) == as_rows(ds) and len(as_rows(loaded)) == 20
    first = next(iter(loaded))
    assert first[0].dtype == "float32" and first[0].shape == (3,)
    assert np.asarray(first[1]).dtype == np.int64


def test_paths_may_be_pathlib_paths(tmp_path):
    # Every argument that names a file or directory takes a str, bytes or os.PathLike, as
    # tfrecord's does (save, load, snapshot and cache took a str only).
    ds = sluice.Dataset.range(5)
    ds.save(tmp_path / "saved")
    assert [int(x) for x in sluice.Dataset.load(tmp_path / "saved")] == [0, 1, 2, 3, 4]
    assert [int(x) for x in ds.snapshot(tmp_path / "snap")] == [0, 1, 2, 3, 4]
    assert [int(x) for x in ds.cache(tmp_path / "cache")] == [0, 1, 2, 3, 4]
    assert (tmp_path / "snap").is_dir() and list(tmp_path.glob("cache*"))
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ds.save(3)


def test_save_shard_func_and_load_reader_func(tmp_path):
    ds = example_dataset()
    path = str(tmp_path / "sharded")
    ds.save(path, shard_func=lambda x, label, name: (label // 10) % 2)
    # Two shards: the even labels, then the odd ones, each in order.
    seen = []

    def concatenated(shards):
        seen.append(len(shards))
        return functools.reduce(lambda a, b: a.concatenate(b), shards)

    loaded = as_rows(sluice.Dataset.load(path, reader_func=concatenated))
    assert seen and set(seen) == {2}  # called per iterator, with both shards
    assert [y for _, y, _ in loaded] == list(range(0, 200, 20)) + list(range(10, 200, 20))
    assert sorted(loaded, key=lambda r: r[1]) == as_rows(ds)
    # The default reader: every element, whatever the sharding.
    assert sorted(as_rows(sluice.Dataset.load(path)), key=lambda r: r[1]) == as_rows(ds)


def test_load_reads_the_saved_element_spec(tmp_path):
    ds = sluice.Dataset.range(5).batch(2)
    path = str(tmp_path / "batched")
    ds.save(path)
    assert ds.element_spec is not None
    assert sluice.Dataset.load(path).element_spec == ds.element_spec


def test_save_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved dataset"):
        list(sluice.Dataset.load(str(tmp_path / "never")))
    with pytest.raises(TypeError):
        sluice.Dataset.load(str(tmp_path / "never"), "an element_spec")  # not accepted
    with pytest.raises(TypeError, match="callable"):
        sluice.Dataset.range(3).save(str(tmp_path / "s"), shard_func=3)
    with pytest.raises(ValueError, match="shard"):
        sluice.Dataset.range(3).save(str(tmp_path / "s"), shard_func=lambda v: -1)

    def bad(v):
        raise ValueError("not this one")

    with pytest.raises(ValueError, match="not this one"):
        sluice.Dataset.range(3).map(bad).save(str(tmp_path / "s"))
    with pytest.raises(FileNotFoundError):  # no save finished there
        list(sluice.Dataset.load(str(tmp_path / "s")))


def test_ctrl_c_stops_a_save_and_leaves_no_saved_dataset(tmp_path):
    # The save runs without the GIL: it must look for Ctrl-C between elements.
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sluice.Dataset.range(10).repeat().save(str(tmp_path / "s"))
    finally:
        timer.cancel()
    with pytest.raises(FileNotFoundError):  # no manifest: nothing saved
        list(sluice.Dataset.load(str(tmp_path / "s")))


def test_load_state_dict_mid_epoch(tmp_path):
    sluice.Dataset.range(100).save(str(tmp_path / "r"))
    ds = sluice.Dataset.load(str(tmp_path / "r"))
    it = iter(ds)
    first = ints(next(it) for _ in range(37))
    resumed = iter(ds)
    resumed.load_state_dict(it.state_dict())
    assert first + ints(resumed) == list(range(100))


def test_snapshot_second_pass_equals_the_first(tmp_path):
    calls = []

    def counted(v):
        calls.append(1)
        return v * 3

    def pipeline():
        # An unseeded shuffle: only the snapshot makes two passes agree.
        return sluice.Dataset.range(50).shuffle(50).map(counted).snapshot(str(tmp_path / "snap"))

    ds = pipeline()
    first = ints(ds)
    assert sorted(first) == list(range(0, 150, 3)) and len(calls) == 50
    assert ints(ds) == first and len(calls) == 50  # read back, the function not called
    assert ints(pipeline()) == first and len(calls) == 50  # the next run too


def test_snapshot_options(tmp_path):
    ds = sluice.Dataset.range(30).snapshot(
        str(tmp_path / "snap"), compression="GZIP", shard_func=lambda v: v % 3,
        reader_func=lambda shards: functools.reduce(lambda a, b: a.concatenate(b), shards))
    first = ints(ds)  # the first pass: the input's order
    assert first == list(range(30))
    assert ints(ds) == list(range(0, 30, 3)) + list(range(1, 30, 3)) + list(range(2, 30, 3))
    plain = sluice.Dataset.range(5).snapshot(str(tmp_path / "none"), compression=None)
    assert ints(plain) == ints(plain) == list(range(5))
    with pytest.raises(ValueError, match="unknown compression"):
        sluice.Dataset.range(3).snapshot(str(tmp_path / "x"), compression="SNAPPY")
    with pytest.raises(TypeError, match="callable"):
        sluice.Dataset.range(3).snapshot(str(tmp_path / "x"), reader_func=1)
