#!/usr/bin/env python3
"""The PyTorch baseline for `sluice bench`, on the same TFRecord files.

  pytorch_compare.py make-tree --fixture tests/data/images3.tfrecord --copies 100 --out DIR
      writes DIR/class<label>/img<k>.jpg: the fixture's photos replicated, for
      `sluice convert images` (a real-photo-sized test set).
  pytorch_compare.py run --files 'DIR/train-*.tfrecord' [--seconds 10 | --epochs E]
      reads the records with a tiny pure-Python TFRecord + tf.train.Example reader and runs a
      DataLoader (2 workers, PIL decode, RandomResizedCrop(224), RandomHorizontalFlip, ToTensor,
      Normalize, batch 64); prints one JSON object with images_per_second.

The encoded records are loaded into memory first (as `sluice bench --cache` does after its
first epoch), so the baseline pays no file reading during the run.
"""

import argparse
import glob
import io
import json
import os
import struct
import sys
import time


def read_tfrecords(path):
    """Yields the records of an uncompressed TFRecord file (CRCs not checked)."""
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise ValueError(f"{path}: truncated record header")
            (length,) = struct.unpack("<Q", header[:8])
            data = f.read(length)
            if len(data) < length or len(f.read(4)) < 4:
                raise ValueError(f"{path}: truncated record")
            yield data


def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of a protobuf message; value is bytes or int."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def parse_image_example(record):
    """(image/encoded bytes, image/class/label) of a serialized tf.train.Example."""
    encoded = label = None
    for n, _, features in _fields(record):
        if n != 1:
            continue
        for m, _, entry in _fields(features):
            if m != 1:
                continue
            key = value = None
            for k, _, v in _fields(entry):
                if k == 1:
                    key = bytes(v).decode()
                elif k == 2:
                    value = v
            if key == "image/encoded":
                for kind, _, lst in _fields(value):
                    if kind == 1:  # bytes_list
                        for i, _, b in _fields(lst):
                            if i == 1:
                                encoded = bytes(b)
            elif key == "image/class/label":
                for kind, _, lst in _fields(value):
                    if kind == 3:  # int64_list, packed or not
                        for i, wire, v in _fields(lst):
                            if i == 1 and wire == 2:
                                label, _ = _varint(v, 0)
                            elif i == 1:
                                label = v
    if encoded is None or label is None:
        raise ValueError("record lacks image/encoded or image/class/label")
    return encoded, label


def make_tree(args):
    photos = [parse_image_example(r) for r in read_tfrecords(args.fixture)]
    for k in range(args.copies):
        for i, (jpeg, label) in enumerate(photos):
            d = os.path.join(args.out, f"class{label}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"img{k:05d}_{i}.jpg"), "wb") as f:
                f.write(jpeg)
    print(f"{args.out}: {args.copies * len(photos)} JPEGs", file=sys.stderr)


def run(args):
    import torch
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset
    from torchvision import transforms

    files = sorted(glob.glob(args.files))
    if not files:
        raise SystemExit(f"no files match {args.files}")
    items = [parse_image_example(r) for f in files for r in read_tfrecords(f)]
    record_bytes = sum(len(j) for j, _ in items)

    transform = transforms.Compose([
        transforms.RandomResizedCrop(args.image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])

    class JpegDataset(Dataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, i):
            jpeg, label = items[i]
            image = Image.open(io.BytesIO(jpeg)).convert("RGB")
            return transform(image), label

    loader = DataLoader(JpegDataset(), batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0)
    images = 0
    epochs = 0
    start = time.perf_counter()
    done = False
    while not done:
        for batch, _ in loader:
            images += batch.shape[0]
            if args.epochs is None and time.perf_counter() - start >= args.seconds:
                done = True
                break
        epochs += 1
        if args.epochs is not None and epochs >= args.epochs:
            done = True
    seconds = time.perf_counter() - start
    print(json.dumps({
        "images_per_second": images / seconds,
        "images": images,
        "seconds": seconds,
        "workers": args.workers,
        "batch": args.batch,
        "dataset_images": len(items),
        "dataset_record_bytes": record_bytes,
        "torch": torch.__version__,
    }))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("make-tree")
    t.add_argument("--fixture", required=True)
    t.add_argument("--copies", type=int, default=100)
    t.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--files", required=True)
    group = r.add_mutually_exclusive_group()
    group.add_argument("--seconds", type=float, default=10)
    group.add_argument("--epochs", type=int)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--batch", type=int, default=64)
    r.add_argument("--image-size", type=int, default=224)
    args = parser.parse_args()
    make_tree(args) if args.command == "make-tree" else run(args)


if __name__ == "__main__":
    main()
