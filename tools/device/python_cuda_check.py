#!/usr/bin/env python3
"""`import sluice` on the GPU (issue 43; run by tools/device_check.sh with the bundle's module on
PYTHONPATH):

  python_cuda_check.py TFRECORD_DIR

TFRECORD_DIR: `sluice convert fashion-mnist`'s JPEG shards. One pipeline (parse, decode, cast,
batch) runs twice: on the host, and ending in prefetch_to_device("cuda:0"). Checked:
  values      every CUDA batch, taken by torch.from_dlpack, equals the host batch;
  no_copy     torch's tensor points at sluice's memory (data_ptr), on cuda:0;
  last_step   a map after prefetch_to_device("cuda:0") is refused (tf.data's rule);
  streams     batches read at once on a side stream of PyTorch (torch.from_dlpack passes it, and
              sluice orders it after the copy): their sums equal the host's;
  release     batches released while PyTorch kernels still read them: later batches (whose
              copies may reuse that memory) and those kernels' results are still right;
  lifetime    a batch kept after its iterator is gone keeps its values;
  jax         jax.dlpack.from_dlpack of a CUDA batch equals the host batch (skipped without JAX);
and the images/s of the loop that feeds PyTorch, with and without prefetch_to_device (then
torch's .cuda(non_blocking=True) copies). Prints one JSON object; exits non-zero on a failure.
SLUICE_CHECK_DEVICE=cpu runs what does not need a GPU (a rehearsal of the script here).
"""
import glob
import json
import os
import sys
import time

import numpy as np
import sluice
import torch


def pipeline(files, batch):
    features = {
        "image/encoded": sluice.io.FixedLenFeature([], "string"),
        "image/class/label": sluice.io.FixedLenFeature([], "int64"),
    }
    return (sluice.Dataset.tfrecord(files)
            .map([sluice.ops.parse_example(features), sluice.ops.decode_jpeg(channels=1),
                  sluice.ops.cast("float32")], num_parallel_calls=sluice.AUTOTUNE)
            .batch(batch, drop_remainder=True))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    files = sorted(glob.glob(os.path.join(sys.argv[1], "train-*.tfrecord")))
    if not files:
        sys.exit(f"no train-*.tfrecord in {sys.argv[1]}")
    checks = {}

    def sync():
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    report = {"sluice": sluice.__version__, "torch": torch.__version__,
              "cuda_devices": sluice.cuda.device_count() if sluice.cuda.is_built() else None,
              "device": None, "checks": checks}
    name = os.environ.get("SLUICE_CHECK_DEVICE", "cuda:0")
    device = torch.device(name)
    on_gpu = device.type == "cuda"
    report["device"] = name

    # values, no_copy: the first 20 batches of 1,024 images, host and device side by side (the
    # device bundle's training set has 29).
    host = pipeline(files, 1024).take(20)
    cuda = host.prefetch_to_device(name, buffer_size=3)
    mismatches, pointers_equal, n = 0, True, 0
    for (hx, hy), (cx, cy) in zip(host, cuda):
        assert cx.device == name, cx.device
        tx, ty = torch.from_dlpack(cx), torch.from_dlpack(cy)
        pointers_equal &= tx.data_ptr() == cx.data_ptr and tx.device == device
        mismatches += not torch.equal(tx.cpu(), torch.from_dlpack(hx))
        mismatches += not torch.equal(ty.cpu(), torch.from_dlpack(hy))
        n += 1
    checks["values"] = {"passed": mismatches == 0 and n == 20, "batches": n,
                        "mismatches": mismatches}
    checks["no_copy"] = {"passed": bool(pointers_equal)}

    # last_step: after a GPU prefetch, a transformation that reads elements on the host is refused.
    try:
        cuda.map(lambda x, y: (x, y))
        refused = not on_gpu  # on the CPU rehearsal nothing is refused
    except ValueError as e:
        refused = on_gpu and "last step" in str(e)
    checks["last_step"] = {"passed": refused}

    # streams: consume at once on a side stream, which from_dlpack hands to sluice.
    want = [float(np.asarray(hx, dtype=np.float64).sum()) for hx, _ in host]
    sums = []
    if on_gpu:
        side = torch.cuda.Stream(device)
        with torch.cuda.stream(side):
            for cx, _ in cuda:
                sums.append(torch.from_dlpack(cx).double().sum())
        side.synchronize()
    else:
        sums = [torch.from_dlpack(cx).double().sum() for cx, _ in cuda]
    got = [float(s) for s in sums]
    checks["streams"] = {"passed": got == want, "batches": len(got),
                         "wrong": sum(g != w for g, w in zip(got, want))}

    # release: drop each batch while a slow kernel still reads it; its block comes back to
    # sluice's cache and the next copies may land in it.
    results, kept = [], []
    for cx, _ in cuda:
        x = torch.from_dlpack(cx)
        y = x.double()
        for _ in range(20):  # queued work that reads x long after the release below
            y = y * 1.0
        results.append(y.sum())
        del x, cx, y
    sync()
    got = [float(r) for r in results]
    checks["release"] = {"passed": got == want, "wrong": sum(g != w for g, w in zip(got, want))}

    # lifetime: a batch outlives its iterator and dataset.
    it = iter(pipeline(files, 256).take(1).prefetch_to_device(name))
    kept = torch.from_dlpack(next(it)[0])
    del it
    sync()
    first = np.asarray(next(iter(pipeline(files, 256).take(1)))[0])
    checks["lifetime"] = {"passed": bool(np.array_equal(kept.cpu().numpy(), first))}

    # jax, where it is installed: the same batch through jax.dlpack.
    try:
        import jax
        import jax.dlpack
        cx, _ = next(iter(pipeline(files, 256).take(1).prefetch_to_device(name)))
        ja = jax.dlpack.from_dlpack(cx)
        checks["jax"] = {"passed": bool(np.array_equal(np.asarray(ja), first)),
                         "jax": jax.__version__, "device": str(ja.devices())}
    except ImportError as e:
        checks["jax"] = {"passed": None, "note": f"skipped: {e}"}
    except Exception as e:  # noqa: BLE001 (reported, not hidden)
        checks["jax"] = {"passed": False, "error": f"{type(e).__name__}: {e}"}

    # Speed: the loop touches every batch on the GPU (a sum), two ways, interleaved, 2 rounds.
    def loop(use_prefetch, batches=60):
        ds = pipeline(files, 256).repeat().take(batches)
        if use_prefetch:
            ds = ds.prefetch_to_device(name)
        else:
            ds = ds.prefetch(2)
        start = time.perf_counter()
        total = torch.zeros((), device=device, dtype=torch.float64)
        for x, _ in ds:
            t = torch.from_dlpack(x)
            if not use_prefetch and on_gpu:
                t = t.pin_memory().to(device, non_blocking=True)
            total += t.double().sum()
        sync()
        return batches * 256 / (time.perf_counter() - start)

    speed = {"prefetch_to_device": [], "host_then_torch_copy": []}
    for _ in range(2):
        speed["prefetch_to_device"].append(round(loop(True)))
        speed["host_then_torch_copy"].append(round(loop(False)))
    report["images_per_second"] = speed

    report["passed"] = all(c["passed"] is not False for c in checks.values())
    print(json.dumps(report, indent=1))
    sys.exit(0 if report["passed"] else 1)


if __name__ == "__main__":
    main()
