#!/usr/bin/python3
"""sluice from Python against `sluice bench` and PyTorch's DataLoader, side by side (issue 43).

  PYTHONPATH=build/python bench/python_loader_compare.py --sluice build/sluice [--seconds 10]
      [--rounds 3] [--work DIR] [--restart-interval N] [--skip-e2e]

On the photo set `sluice bench` documents (docs/benchmarks.md: images3's 3 photos copied 667
times, 2,001 JPEGs, as 4 TFRecord shards; made in --work unless already there), the same input
pipeline (decode + random-resized-crop to 224 + flip + normalize, batch 64) measured as:

  cli        `sluice bench --files SET --seconds S --json` (C++ alone)
  python     sluice.Dataset from Python, every batch touched (np.asarray, one value read)
  python_fn  the same with a trivial Python map function per image (lambda x, y: (x, y))
  torch      bench/pytorch_compare.py run: DataLoader, 2 workers, PIL + torchvision transforms

then end to end, a small CNN (torch, CPU) training on those batches, steps/s:

  e2e_sluice  batches from sluice (torch.from_dlpack, no copy)
  e2e_torch   batches from the DataLoader

Each measurement runs S seconds; the rounds alternate them; medians are printed with every run,
as one JSON object on stdout (a table on stderr). Needs python3-torch, python3-torchvision and
python3-pil (tools/setup.sh --bench).
"""

import argparse
import glob
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pytorch_compare  # noqa: E402  (the DataLoader baseline's TFRecord reader and photo tree)

import sluice  # noqa: E402


def make_set(work, sluice_binary, fixture, restart_interval):
    """The photo set's shards in work/set-r<restart_interval>/, made unless already there."""
    out = os.path.join(work, f"set-r{restart_interval}")
    files = os.path.join(out, "train-*.tfrecord")
    if glob.glob(files):
        return files
    tree = os.path.join(work, "tree")
    if not os.path.isdir(tree):
        pytorch_compare.make_tree(argparse.Namespace(fixture=fixture, copies=667, out=tree))
    subprocess.run([sluice_binary, "convert", "images", tree, "--out", out, "--shards", "4",
                    "--restart-interval", str(restart_interval)],
                   check=True, stdout=subprocess.DEVNULL)
    return files


def sluice_pipeline(files, python_fn=False, seed=0):
    """What `sluice bench --files` runs (train/recipes/imagenet_pipeline.cc), from Python."""
    features = {
        "image/encoded": sluice.io.FixedLenFeature([], "string"),
        "image/class/label": sluice.io.FixedLenFeature([], "int64"),
    }
    ds = (
        sluice.Dataset.list_files(files)
        .interleave(sluice.Dataset.tfrecord, cycle_length=sluice.AUTOTUNE,
                    num_parallel_calls=sluice.AUTOTUNE)
        .map(sluice.ops.parse_example(features), num_parallel_calls=sluice.AUTOTUNE)
        .repeat()
        .map([sluice.ops.decode_and_random_resized_crop(224), sluice.ops.random_flip_left_right(),
              sluice.ops.normalize(sluice.IMAGENET_MEAN, sluice.IMAGENET_STD)],
             num_parallel_calls=sluice.AUTOTUNE)
    )
    if python_fn:
        ds = ds.map(lambda image, label: (image, label), num_parallel_calls=sluice.AUTOTUNE)
    return ds.batch(64).prefetch(sluice.AUTOTUNE).with_options(sluice.Options(seed=seed))


def run_cli(binary, files, seconds):
    out = subprocess.run([binary, "bench", "--files", files, "--seconds", str(seconds), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["elements_per_second"]


def run_python(files, seconds, python_fn=False):
    images = 0
    it = iter(sluice_pipeline(files, python_fn))
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        batch, labels = next(it)
        a = np.asarray(batch)  # touch the batch: a view, then one value of its last row
        float(a[-1, -1, -1, -1])
        images += a.shape[0]
    rate = images / (time.perf_counter() - start)
    del it
    return rate


def run_torch(files, seconds):
    out = subprocess.run([sys.executable, os.path.join(HERE, "pytorch_compare.py"), "run",
                          "--files", files, "--seconds", str(seconds), "--workers", "2"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["images_per_second"]


def small_cnn(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def train_steps(torch, batches, seconds):
    """Steps/s of SGD on the small CNN over (images NCHW float32, labels) batches."""
    model = small_cnn(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 0
    start = time.perf_counter()
    for images, labels in batches:
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if time.perf_counter() - start >= seconds:
            break
    return steps / (time.perf_counter() - start)


def e2e_sluice(torch, files, seconds):
    def batches():
        for images, labels in sluice_pipeline(files):
            # NHWC as decoded; the model takes NCHW: a strided view, no copy.
            yield torch.from_dlpack(images).permute(0, 3, 1, 2), torch.from_dlpack(labels)

    return train_steps(torch, batches(), seconds)


def torch_loader(files):
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset
    from torchvision import transforms

    items = [pytorch_compare.parse_image_example(r) for f in sorted(glob.glob(files))
             for r in pytorch_compare.read_tfrecords(f)]
    transform = transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
        transforms.Normalize(mean=list(sluice.IMAGENET_MEAN), std=list(sluice.IMAGENET_STD))])

    class Jpegs(Dataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, i):
            jpeg, label = items[i]
            return transform(Image.open(io.BytesIO(jpeg)).convert("RGB")), label

    return DataLoader(Jpegs(), batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)


def e2e_torch(torch, files, seconds):
    loader = torch_loader(files)

    def batches():
        while True:
            yield from loader

    return train_steps(torch, batches(), seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sluice", default="build/sluice", help="the sluice command line")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="/tmp/sluice-python-compare")
    parser.add_argument("--fixture", default=os.path.join(HERE, "..", "tests", "data",
                                                          "images3.tfrecord"))
    parser.add_argument("--restart-interval", type=int, default=0,
                        help="`sluice convert images --restart-interval N` (lossless restart "
                             "markers, which sluice's crop decode uses; 0: the JPEGs as they are)")
    parser.add_argument("--skip-e2e", action="store_true", help="the input side only")
    args = parser.parse_args()
    import torch

    files = make_set(args.work, args.sluice, args.fixture, args.restart_interval)
    measures = {
        "cli": lambda: run_cli(args.sluice, files, args.seconds),
        "python": lambda: run_python(files, args.seconds),
        "python_fn": lambda: run_python(files, args.seconds, python_fn=True),
        "torch": lambda: run_torch(files, args.seconds),
    }
    if not args.skip_e2e:
        measures["e2e_sluice"] = lambda: e2e_sluice(torch, files, args.seconds)
        measures["e2e_torch"] = lambda: e2e_torch(torch, files, args.seconds)
    runs = {name: [] for name in measures}
    for r in range(args.rounds):
        for name, measure in measures.items():
            runs[name].append(measure())
            print(f"round {r + 1}: {name:10s} {runs[name][-1]:9.1f}", file=sys.stderr)
    median = {name: statistics.median(v) for name, v in runs.items()}
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    report = {
        "cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__,
        "photos": sum(1 for f in glob.glob(files) for _ in pytorch_compare.read_tfrecords(f)),
        "restart_interval": args.restart_interval,
        "seconds": args.seconds, "runs": runs, "median": median,
        "python_over_cli": median["python"] / median["cli"],
        "python_over_torch": median["python"] / median["torch"],
        "python_fn_over_python": median["python_fn"] / median["python"],
    }
    if not args.skip_e2e:
        report["e2e_sluice_over_torch"] = median["e2e_sluice"] / median["e2e_torch"]
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
