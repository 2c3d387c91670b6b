#!/usr/bin/env python3
"""Writes the seed corpora of the byte-format fuzz targets into tests/fuzz/corpus/<target>/.

Standard library only: the TFRecord framing, CRC-32C and protobuf wire format are written here
independently of sluice's own writers. The decode_jpeg, iterator_restore and
training_checkpoint seeds come from the targets themselves (tools/fuzz.sh --seeds).
Usage: tests/fuzz/make_seeds.py [FIXTURES_DIR]
"""
import gzip
import os
import struct
import sys
import zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "../../../shared/fixtures")
SEP = b"\xff\xfe\xfd\xfc"  # fuzz_util.h's SplitPieces


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def record(payload):
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked(length)) + payload + struct.pack("<I", masked(payload))


def varint(v):
    out = b""
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def feature(kind, values):
    # tf.train.Feature: bytes_list = 1, float_list = 2, int64_list = 3 (each `value` = 1).
    if kind == "bytes":
        inner = b"".join(field(1, 2, v) for v in values)
        return field(1, 2, inner)
    if kind == "float":
        return field(2, 2, field(1, 2, b"".join(struct.pack("<f", v) for v in values)))
    return field(3, 2, field(1, 2, b"".join(varint(v) for v in values)))


def features(named):
    # tf.train.Features: map<string, Feature> feature = 1.
    return b"".join(field(1, 2, field(1, 2, k.encode()) + field(2, 2, v)) for k, v in named.items())


def example(named):
    return field(1, 2, features(named))


def write(target, name, data):
    d = os.path.join(ROOT, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def fixture(name):
    with open(os.path.join(FIXTURES, "tfrecord", name), "rb") as f:
        return f.read()


def main():
    # TFRecord reader: the fixtures with each option byte, and framed payloads.
    small = fixture("small100.tfrecord")[:2000]  # the first records; the rest adds nothing
    write("tfrecord_reader", "none", b"\x00" + small)
    write("tfrecord_reader", "none-skip", b"\x04" + fixture("small100.corrupt-record41.tfrecord"))
    write("tfrecord_reader", "truncated-skip", b"\x04" + fixture("small100.truncated.tfrecord")[-600:])
    write("tfrecord_reader", "gzip", b"\x01" + fixture("small100.tfrecord.gz"))
    write("tfrecord_reader", "zlib-skip", b"\x06" + fixture("small100.tfrecord.zlib"))
    write("tfrecord_reader", "framed", b"\x10" + SEP.join([b"", b"a", b"record", b"x" * 40]))
    write("tfrecord_reader", "framed-gzip", b"\x11" + SEP.join([b"one", b"two"]))

    # Record index: offsets of the target's data file (records of 0, 1, 100, 12, 5000 bytes).
    offsets = [0]
    for n in (0, 1, 100, 12):
        offsets.append(offsets[-1] + 16 + n)
    write("record_index", "valid", b"\x01" + b"".join(struct.pack("<Q", o) for o in offsets))
    write("record_index", "valid-nocrc", b"\x03" + b"".join(struct.pack("<Q", o) for o in offsets))
    body = b"SLUICEIX" + struct.pack("<IIQQQ", 1, 0, 5177, 0, 1) + struct.pack("<Q", 0)
    write("record_index", "stale", b"\x00" + body + struct.pack("<I", masked(body)))

    # Examples, for the target's three specs.
    write("example_parser", "small", b"\x00" + example({
        "id": feature("int64", [7]), "vec": feature("float", [3.5, -7.0, 0.125]),
        "name": feature("bytes", [b"item-7"])}))
    write("example_parser", "image", b"\x01" + example({
        "image/encoded": feature("bytes", [b"\xff\xd8\xff\xe0 not really"]),
        "image/class/label": feature("int64", [4]),
        "image/object/bbox/xmin": feature("float", [0.25, 0.5]),
        "ids": feature("int64", [1, 1 << 40, -3]), "tags": feature("bytes", [b"a", b""])}))
    write("example_parser", "shapes", b"\x02" + example({
        "m": feature("float", [1, 2, 3, 4, 5, 6]), "e": feature("int64", []),
        "b": feature("bytes", [b"x", b"yz"])}))

    # SequenceExample: context = 1 (Features), feature_lists = 2 (map<string, FeatureList>,
    # FeatureList.feature = 1).
    def feature_list(steps):
        return b"".join(field(1, 2, s) for s in steps)

    lists = {
        "tokens": feature_list([feature("int64", [5]), feature("int64", [9])]),
        "pairs": feature_list([feature("float", [0.5, 1.5]), feature("float", [2, 3])]),
        "words": feature_list([feature("bytes", [b"hi"]), feature("bytes", [b"yo"])]),
        "ragged": feature_list([feature("float", [1]), feature("float", []), feature("float", [2, 3])]),
    }
    seq = field(1, 2, features({"length": feature("int64", [2]), "ctx_vec": feature("float", [1, 2]),
                                "names": feature("bytes", [b"n"])}))
    seq += field(2, 2, b"".join(field(1, 2, field(1, 2, k.encode()) + field(2, 2, v))
                                for k, v in lists.items()))
    write("sequence_example_parser", "full", seq)

    # IDX: uint8 [2, 3, 3] and float32 [2, 2] (big-endian), raw and gzip.
    u8 = bytes([0, 0, 0x08, 3]) + struct.pack(">III", 2, 3, 3) + bytes(range(18))
    f32 = bytes([0, 0, 0x0D, 2]) + struct.pack(">II", 2, 2) + struct.pack(">4f", 1, -2, 0.5, 3)
    write("idx_file", "uint8", b"\x00" + u8)
    write("idx_file", "float32-gz", b"\x01" + f32)
    write("idx_file", "gzip-stream", b"\x02" + gzip.compress(u8, mtime=0))

    # File cache: ElementProto payloads (components = 1; TensorProto dtype = 1, shape = 2,
    # data = 3, strings = 4) framed by the target, and a whole file for Range(3).
    def tensor(dtype, shape, data=b"", strings=()):
        t = field(1, 0, varint(dtype)) + b"".join(field(2, 0, varint(d)) for d in shape)
        t += field(3, 2, data) if data else b""
        return t + b"".join(field(4, 2, s) for s in strings)

    def element(*tensors):
        return b"".join(field(1, 2, t) for t in tensors)

    elems = [element(tensor(2, [], struct.pack("<q", i))) for i in range(3)]
    write("file_cache", "framed", b"\x01" + SEP.join(elems))
    write("file_cache", "framed-mixed", b"\x01" + SEP.join([
        element(tensor(5, [2, 2], struct.pack("<4f", 1, 2, 3, 4)), tensor(6, [2], strings=[b"a", b"b"])),
        element(tensor(0, [3], b"abc"))]))
    ident = struct.pack("<Q", 0x5EED5EED5EED5EED)
    # The header's identity: a SavedDatasetManifest whose pipeline (field 3) is Range(3)'s.
    cache = record(b"sluice-cache/2\n" + ident + field(3, 2, b"Range(0, 3, 1)"))
    cache += b"".join(record(e) for e in elems)
    cache += record(b"sluice-cache-end" + struct.pack("<Q", 3) + ident)
    write("file_cache", "whole", b"\x00" + cache)


if __name__ == "__main__":
    main()
