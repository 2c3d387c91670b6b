"""The iterator: state_dict round trips, the GIL released while next() waits, Ctrl-C, errors."""

import contextlib
import os
import signal
import threading
import time

import numpy as np
import pytest
import sluice

from conftest import image_features


def image_pipeline(data, python_map=False):
    """Shuffled, parallel-mapped photos of images3.tfrecord, 3 epochs."""
    ops = [
        sluice.ops.parse_example(image_features(sluice)),
        sluice.ops.decode_and_random_resized_crop((24, 32)),
        sluice.ops.random_flip_left_right(),
    ]
    ds = sluice.Dataset.tfrecord(str(data / "images3.tfrecord")).repeat(3)
    ds = ds.map(ops, num_parallel_calls=2).shuffle(4, seed=1)
    if python_map:
        ds = ds.map(lambda image, label: (image, label + 100), num_parallel_calls=2)
    return ds.batch(2).prefetch(2).with_options(sluice.Options(seed=7))


def as_arrays(element):
    return tuple(np.asarray(c) for c in element)


@pytest.mark.parametrize("python_map", [False, True])
def test_state_dict_round_trip_mid_epoch(data, python_map):
    ds = image_pipeline(data, python_map)
    # The same pipeline built again: its first iteration is ds's first (a second iteration of ds
    # would shuffle and crop anew).
    expected = [as_arrays(e) for e in image_pipeline(data, python_map)]
    assert len(expected) == 5  # 9 images in batches of 2
    it = iter(ds)
    for _ in range(2):
        next(it)
    state = it.state_dict()
    assert state["version"] == 1 and isinstance(state["iterator"], bytes)
    rest = [as_arrays(e) for e in it]
    resumed = iter(ds)
    assert resumed.load_state_dict(state) is None
    again = [as_arrays(e) for e in resumed]
    assert len(rest) == len(again) == 3
    for a, b, c in zip(rest, again, expected[2:]):
        for x, y, z in zip(a, b, c):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, z)


def test_state_dict_nests_in_a_checkpoint(tmp_path):
    import pickle

    it = iter(sluice.Dataset.range(10).shuffle(5, seed=3))
    first = [int(np.asarray(next(it))) for _ in range(4)]
    path = tmp_path / "ckpt.pkl"
    path.write_bytes(pickle.dumps({"model": {}, "data": it.state_dict()}))
    resumed = iter(sluice.Dataset.range(10).shuffle(5, seed=3))
    resumed.load_state_dict(pickle.loads(path.read_bytes())["data"])
    rest = [int(np.asarray(v)) for v in resumed]
    assert sorted(first + rest) == list(range(10))


def test_as_numpy_iterator_saves_its_position():
    ds = sluice.Dataset.range(10).shuffle(5, seed=3).batch(2)
    it = ds.as_numpy_iterator()
    assert iter(it) is it
    first = [next(it) for _ in range(2)]
    assert all(isinstance(b, np.ndarray) for b in first)
    state = it.state_dict()
    rest = list(it)
    resumed = ds.as_numpy_iterator()
    resumed.load_state_dict(state)
    again = list(resumed)
    assert len(rest) == len(again) == 3
    for a, b in zip(rest, again):
        np.testing.assert_array_equal(a, b)
    assert sorted(np.concatenate(first + rest).tolist()) == list(range(10))
    resumed.close()
    with pytest.raises(StopIteration):
        next(resumed)
    with pytest.raises(ValueError, match="closed"):
        resumed.state_dict()


def test_file_names_are_paths_or_lists_of_them(data):
    import pathlib

    path = data / "images3.tfrecord"
    assert isinstance(path, pathlib.Path)
    assert len(list(sluice.Dataset.tfrecord(path))) == 3
    assert len(list(sluice.Dataset.tfrecord([path, str(path)]))) == 6
    assert list(sluice.Dataset.list_files(path.parent / "images3.tf*", shuffle=False)) == [
        str(path).encode()]
    with pytest.raises(TypeError, match="filenames must be a str, bytes or os.PathLike, or a "
                       "list of them; got int"):
        sluice.Dataset.tfrecord(5)
    with pytest.raises(TypeError, match="got float"):
        sluice.Dataset.tfrecord([str(path), 1.5])
    with pytest.raises(TypeError, match="file_pattern must be"):
        sluice.Dataset.list_files(None)
    # A name that is not UTF-8 (as os.listdir gives it, surrogate-escaped) is not mangled: it is
    # looked for as it is, and named so in the error.
    odd = os.fsdecode(bytes(path.parent) + b"/no-such-\xff.tfrecord")
    with pytest.raises(OSError, match="no-such-"):
        list(sluice.Dataset.tfrecord(odd))


def test_load_state_dict_misuse():
    ds = sluice.Dataset.range(5)
    it = iter(ds)
    next(it)
    with pytest.raises(ValueError, match="before the first next"):
        it.load_state_dict(iter(ds).state_dict())
    with pytest.raises(ValueError, match="version"):
        iter(ds).load_state_dict({"version": 99, "iterator": b""})
    with pytest.raises(ValueError, match="not a sluice iterator state"):
        iter(ds).load_state_dict({})
    # Wrong types are TypeErrors naming the key (pybind11's cast said "Unable to cast").
    with pytest.raises(TypeError, match="'version' must be an int, not str"):
        iter(ds).load_state_dict({"version": "1", "iterator": b""})
    with pytest.raises(TypeError, match="'iterator' must be bytes, not str"):
        iter(ds).load_state_dict({"version": 1, "iterator": ""})
    with pytest.raises(ValueError, match="state version 100000000000000000000"):
        iter(ds).load_state_dict({"version": 10**20, "iterator": b""})
    # A bytearray of the state works as its bytes do.
    it = iter(ds)
    next(it)
    state = it.state_dict()
    again = iter(ds)
    again.load_state_dict({"version": 1, "iterator": bytearray(state["iterator"])})
    assert int(next(again)) == 1
    # A NumPy integer stands for an int, as operator.index takes it.
    again = iter(ds)
    again.load_state_dict({"version": np.int64(1), "iterator": state["iterator"]})
    assert int(next(again)) == 1


def ticks_while(call):
    """Runs call() while a pure-Python thread counts (it runs only while nobody else holds the
    GIL); returns the count."""
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        call()
    finally:
        stop.set()
        t.join()
    return ticks


def test_gil_released_while_next_waits():
    it = iter(sluice.Dataset.range(2).map(sluice._testing.sleep(0.5)))
    start = time.monotonic()
    ticks = ticks_while(lambda: next(it))
    assert time.monotonic() - start >= 0.4
    assert ticks > 10000, f"the Python thread counted only {ticks} while next() waited"


def test_gil_released_while_next_waits_on_a_final_prefetch():
    it = iter(sluice.Dataset.range(3).map(sluice._testing.sleep(0.5)).prefetch(1))
    next(it)  # later calls wait for the prefetch buffer on this thread
    ticks = ticks_while(lambda: next(it))
    assert ticks > 10000, f"the Python thread counted only {ticks} while next() waited"


@contextlib.contextmanager
def python_sigint_handler():
    # Python's own SIGINT handler, which Python does not install when it starts with SIGINT
    # ignored (as a shell's background job does).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted_next(it):
    """next(it), interrupted by a SIGINT after 0.2 s: asserts it raised KeyboardInterrupt soon."""
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            next(it)
        assert time.monotonic() - start < 1.0
    finally:
        timer.join()


def test_ctrl_c_interrupts_a_blocking_next():
    with python_sigint_handler():
        it = iter(sluice.Dataset.range(3).map(sluice._testing.sleep(1.5)))
        interrupted_next(it)
        with pytest.raises(ValueError, match="interrupted"):
            it.state_dict()
        # The element the interrupted next() waited for is not lost.
        assert int(np.asarray(next(it))) == 0


def test_closing_an_interrupted_iterator_cancels_its_pipeline():
    # The interrupted next() leaves its request running: a shuffle filling its buffer from 100,000
    # elements of 10 ms on 2 threads, 500 s. Dropping the iterator cancels the fill; it waited for
    # it to end before.
    import gc

    with python_sigint_handler():
        slow = sluice.Dataset.range(100_000).map(sluice._testing.sleep(0.01), num_parallel_calls=2)
        it = iter(slow.shuffle(100_000, seed=1))
        interrupted_next(it)
        start = time.monotonic()
        del it
        gc.collect()
        assert time.monotonic() - start < 60


def test_dropped_python_errors_release_their_arguments():
    # Errors that ignore_errors drops are kept (up to 64) until something raises them; the frames
    # of all but the newest two lose their locals, which would keep the map function's arguments
    # (views of whole batches) alive.
    import gc
    import weakref

    class Marker:
        pass

    alive = []

    def fail(x):
        marker = Marker()
        alive.append(weakref.ref(marker))
        raise ValueError(f"element {int(x)}")

    assert list(sluice.Dataset.range(10).map(fail).ignore_errors()) == []
    gc.collect()
    assert len(alive) == 10
    assert sum(ref() is not None for ref in alive) <= 2


def test_ctrl_c_interrupts_a_next_waiting_on_a_final_prefetch():
    # Ending with a prefetch, next() waits for its buffer on the Python thread (no hand-off to the
    # fetching thread) after the first element; Ctrl-C still interrupts that wait, and nothing is
    # taken meanwhile.
    with python_sigint_handler():
        ds = sluice.Dataset.range(3).map(sluice._testing.sleep(1.5)).prefetch(1)
        it = iter(ds)
        assert int(np.asarray(next(it))) == 0
        interrupted_next(it)
        # No element was waiting in the Python iterator: the position saves, and resumes at 1.
        state = it.state_dict()
        assert [int(np.asarray(v)) for v in it] == [1, 2]
        resumed = iter(ds)
        resumed.load_state_dict(state)
        assert [int(np.asarray(v)) for v in resumed] == [1, 2]


def test_threads_sharing_an_iterator_that_ends_with_a_prefetch_lose_nothing():
    it = iter(sluice.Dataset.range(4000).prefetch(8))
    seen = [[] for _ in range(4)]

    def drain(out):
        for v in it:
            out.append(int(np.asarray(v)))

    threads = [threading.Thread(target=drain, args=(out,)) for out in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(v for out in seen for v in out) == list(range(4000))
    for out in seen:
        assert out == sorted(out)  # each thread's in the pipeline's order


STATUS_CODES = {  # absl::StatusCode -> the exception it raises
    1: RuntimeError,  # Cancelled
    2: RuntimeError,  # Unknown
    3: ValueError,  # InvalidArgument
    4: TimeoutError,  # DeadlineExceeded
    5: FileNotFoundError,  # NotFound
    6: FileExistsError,  # AlreadyExists
    7: PermissionError,  # PermissionDenied
    8: MemoryError,  # ResourceExhausted
    9: RuntimeError,  # FailedPrecondition
    10: RuntimeError,  # Aborted
    11: IndexError,  # OutOfRange
    12: NotImplementedError,  # Unimplemented
    13: RuntimeError,  # Internal
    14: ConnectionError,  # Unavailable
    15: sluice.DataLossError,  # DataLoss
    16: PermissionError,  # Unauthenticated
}


@pytest.mark.parametrize("code", sorted(STATUS_CODES))
def test_every_status_code_maps(code):
    with pytest.raises(STATUS_CODES[code]) as info:
        sluice._testing.raise_status(code, f"message {code}")
    assert str(info.value) == f"message {code}"


def test_pipeline_errors_carry_the_cpp_message(data):
    with pytest.raises(FileNotFoundError, match="nonexistent"):
        next(iter(sluice.Dataset.tfrecord(str(data / "nonexistent.tfrecord"))))
    it = iter(sluice.Dataset.tfrecord(str(data / "small100.corrupt-record41.tfrecord")))
    for _ in range(41):
        next(it)
    with pytest.raises(sluice.DataLossError, match="corrupt-record41") as info:
        next(it)
    assert isinstance(info.value, IOError)
    with pytest.raises(sluice.DataLossError):  # sticky
        next(it)
    bad_jpeg = sluice.Dataset.from_tensors(b"not a jpeg").map(sluice.ops.decode_jpeg())
    with pytest.raises(ValueError, match="JPEG"):
        next(iter(bad_jpeg))
    with pytest.raises(ValueError, match="component 3"):
        next(iter(sluice.Dataset.from_tensors(b"x").map(sluice.ops.decode_jpeg(component=3))))


def test_python_exception_comes_back_itself():
    class Custom(Exception):
        pass

    def f(x):
        if x == 2:
            raise Custom("bad element")
        return x

    it = iter(sluice.Dataset.range(5).map(f, num_parallel_calls=2))
    assert [int(np.asarray(next(it))) for _ in range(2)] == [0, 1]
    with pytest.raises(Custom, match="bad element") as info:
        next(it)
    assert info.traceback[-1].name == "f"  # the traceback reaches into the map function
    with pytest.raises(TypeError, match="no sluice dtype|dicts"):
        next(iter(sluice.Dataset.range(1).map(lambda x: {"a": x})))


def test_each_epoch_of_a_seeded_dataset_reshuffles():
    # for epoch in ...: for x in ds: each loop is a new iteration with another order, as tf.data's
    # reshuffle_each_iteration (a seeded order repeated every epoch before); the same dataset built
    # again repeats the sequence of orders.
    def make():
        return sluice.Dataset.range(30).shuffle(30, seed=2)

    ds, again = make(), make()
    epochs = [[int(np.asarray(v)) for v in ds] for _ in range(3)]
    assert epochs == [[int(np.asarray(v)) for v in again] for _ in range(3)]
    assert epochs[0] != epochs[1] != epochs[2]
    assert sorted(epochs[1]) == list(range(30))


def test_the_sticky_error_stays_the_same_object():
    # Python errors are kept (64 at most) until raised; an iterator's sticky error must not turn
    # into another class once 64 newer errors pushed it out, nor grow its traceback per next().
    import traceback

    class Custom(Exception):
        pass

    def fail(x):
        raise Custom("first")

    def other(x):
        raise KeyError("other")

    it = iter(sluice.Dataset.range(3).map(fail))
    with pytest.raises(Custom) as first:
        next(it)
    for _ in range(70):
        with pytest.raises(KeyError):
            next(iter(sluice.Dataset.range(1).map(other)))
    with pytest.raises(Custom) as again:
        next(it)
    assert again.value is first.value
    frames = len(traceback.extract_tb(again.value.__traceback__))
    with pytest.raises(Custom) as third:
        next(it)
    assert len(traceback.extract_tb(third.value.__traceback__)) == frames


def test_next_from_several_threads():
    it = iter(sluice.Dataset.range(400).map(lambda v: v, num_parallel_calls=2))
    seen = []

    def pull():
        for v in it:
            seen.append(int(np.asarray(v)))

    threads = [threading.Thread(target=pull) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(seen) == list(range(400))


def test_end_is_stop_iteration():
    it = iter(sluice.Dataset.range(1))
    next(it)
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


EXIT_WITH_LIVE_ITERATOR = """
import time
import sluice

def slow(x):
    time.sleep(0.02)
    return x

it = iter(sluice.Dataset.range(1000).map(slow, num_parallel_calls=4).prefetch(8))
next(it)  # the first NumPy array of this process is made on a pipeline thread
print("exiting")
"""


def test_fresh_process_exits_with_a_live_iterator():
    # Python functions still running on the pipeline's threads at exit: the iterator is closed
    # before the interpreter finalizes (a thread that asks for the GIL later is killed by Python).
    import subprocess
    import sys

    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", EXIT_WITH_LIVE_ITERATOR], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and done.stdout == "exiting\n", done.stderr


def _run_python(code, runs):
    """Runs `code` in `runs` fresh interpreters; each must exit 0 and print "done" (a hang is a
    failure, at 60 s)."""
    import subprocess
    import sys

    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and done.stdout == "done\n", (done.returncode, done.stderr)
        # A daemon thread that raised at exit printed its traceback while the interpreter
        # finalized, which can abort it ("could not acquire lock for <stderr>"): none may.
        assert "Exception in thread" not in done.stderr, done.stderr


DAEMON_THREADS_ITERATING_AT_EXIT = """
import tempfile, threading, time
import sluice

def endless():
    return sluice.Dataset.range(10**12).map(lambda x: x, num_parallel_calls=2)

def read():
    for _ in endless().prefetch(2):
        pass

for _ in range(3):
    threading.Thread(target=read, daemon=True).start()
threading.Thread(target=lambda: sluice.bench(endless(), seconds=None), daemon=True).start()
threading.Thread(target=lambda: endless().save(tempfile.mkdtemp()), daemon=True).start()
saved = iter(endless().prefetch(2))
next(saved)

def save_states():
    while True:
        saved.state_dict()  # between calls in Python when exit closes the iterator: no error

for _ in range(3):
    threading.Thread(target=save_states, daemon=True).start()
time.sleep(0.3)
print("done")
"""


def test_daemon_threads_iterating_at_exit_leave_it_clean():
    # Daemon threads in next(), sluice.bench and save when the interpreter exits: the iterators
    # are closed, and a thread that then wants the GIL back waits for the process to end. Taking
    # it during finalization, Python ended the thread with pthread_exit inside a C++ destructor:
    # std::terminate or a crash in 8 of 10 runs (a next() also started a new fetching thread on
    # a closed iterator).
    _run_python(DAEMON_THREADS_ITERATING_AT_EXIT, runs=3)


DROPPED_INSIDE_ITS_OWN_MAP = """
import gc, time
import sluice

holder = {}

def drop_at_5(x):
    if int(x) == 5:
        holder.clear()  # the iterator's last reference, on one of its pipeline's threads
    return x

class Cycle:  # freed by the cyclic GC only, which runs on whatever thread allocates
    def __init__(self):
        self.it = iter(sluice.Dataset.range(10**6).map(collect, num_parallel_calls=2).prefetch(8))
        next(self.it)
        self.me = self

def collect(x):
    gc.collect()
    return x

holder["it"] = iter(sluice.Dataset.range(100).map(drop_at_5, num_parallel_calls=2).prefetch(4))
next(holder["it"])
Cycle()
time.sleep(0.3)
print("done")
"""


def test_an_iterator_freed_on_its_own_pipelines_thread_is_closed_by_another():
    # Closing there joined the pipeline's threads from one of them: a thread joining itself
    # (std::system_error, abort) or a map waiting for its own call (a hang, then at exit too).
    _run_python(DROPPED_INSIDE_ITS_OWN_MAP, runs=4)


ITERATORS_INSIDE_PIPELINES_AT_EXIT = """
import time
import sluice

def slow(x):
    time.sleep(0.05)
    return x

inner = iter(sluice.Dataset.range(10**9).map(slow))

def read_inner(x):
    return next(inner)  # a map function that reads another sluice iterator

outer = iter(sluice.Dataset.range(10**9).map(read_inner, num_parallel_calls=2).prefetch(2))
next(outer)
source = sluice.Dataset.range(10**9).map(slow)
generated = sluice.Dataset.from_generator(lambda: iter(source), output_signature=("int64", ()))
next(iter(generated.prefetch(2)))
print("done")
"""


def test_iterators_inside_pipelines_at_exit():
    # An inner iterator's next() on a pipeline's thread, inside its Python call, when exit
    # begins: that thread must take the GIL back (exit waits for its call, and the outer
    # pipeline's close joins it), not wait for the process to end as a daemon thread does.
    _run_python(ITERATORS_INSIDE_PIPELINES_AT_EXIT, runs=2)


FORKED_CHILD_EXITS = """
import os, sys, threading, time
import sluice

it = iter(sluice.Dataset.range(10**12).map(lambda x: x, num_parallel_calls=2).prefetch(4))
next(it)
fetched = iter(sluice.Dataset.range(100))  # no final prefetch: its fetching thread waits
next(fetched)

def save_forever():
    while True:
        it.state_dict()  # takes the GIL back again and again: counted at the fork, maybe

threading.Thread(target=save_forever, daemon=True).start()
time.sleep(0.1)
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        try:
            next(fetched)  # served by the parent's threads: an error that says so, not a hang
            os._exit(3)
        except ValueError as e:
            if "before os.fork()" not in str(e):
                os._exit(4)
        del fetched  # left as it is (a wait of a parent's thread cannot be undone here)
        sys.exit(0)  # a normal exit: atexit leaves the iterator the parent made
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
print("done")
"""


def test_a_forked_child_exits_with_its_parents_iterator():
    # The child has none of the parent's threads: what they were counted as doing, and the
    # pipeline threads the iterator would join, are not waited for there (it hung); its next()
    # says the iterator is the parent's, and dropping it does not wait on the condition
    # variable a parent's thread waited on (that hung too).
    _run_python(FORKED_CHILD_EXITS, runs=2)
