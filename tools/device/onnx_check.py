#!/usr/bin/env python3
"""ONNX Runtime on a model `sluice export` wrote, against `sluice predict` (issue 42, part 5; run
by tools/device_check.sh).

  onnx_check.py MODEL.onnx PREDICT.json RECORDS.tfrecord

RECORDS: TFRecords of raw 28x28 uint8 pixels (`sluice convert fashion-mnist --format raw`), so
that both sides see the same pixels without two JPEG decoders. PREDICT.json: `sluice predict
--json --top 1` over RECORDS. Each image is scaled to [0, 1] as sluice scales it, run through
ONNX Runtime (CPU provider) in batches, and its top-1 class compared with sluice's. Prints one
JSON object (the agreement, the largest logit gap where they disagree); exits non-zero unless
every top-1 agrees.
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from pytorch_compare import parse_image_example, read_tfrecords  # noqa: E402


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model, predict_json, records = sys.argv[1:]
    images = []
    for record in read_tfrecords(records):
        encoded, _ = parse_image_example(record)
        if len(encoded) != 28 * 28:
            sys.exit(f"{records}: a record of {len(encoded)} bytes is not raw 28x28 pixels")
        images.append(np.frombuffer(encoded, dtype=np.uint8).reshape(28, 28, 1))
    x = np.stack(images).astype(np.float32) / 255.0
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    logits = np.concatenate([session.run(None, {name: x[i:i + 256]})[0]
                             for i in range(0, len(x), 256)])
    ours = [p["top"][0]["class"] for p in json.load(open(predict_json))["predictions"]]
    if len(ours) != len(logits):
        sys.exit(f"sluice predicted {len(ours)} images, ONNX Runtime {len(logits)}")
    theirs = logits.argmax(axis=1)
    disagree = [i for i in range(len(ours)) if ours[i] != theirs[i]]
    # Where they disagree, how close the two classes' logits were (a near tie is rounding).
    gaps = [float(abs(logits[i, theirs[i]] - logits[i, ours[i]])) for i in disagree]
    out = {"onnxruntime": ort.__version__, "images": len(ours), "agree": len(ours) - len(disagree),
           "max_gap_where_disagree": max(gaps) if gaps else 0.0, "ok": not disagree}
    print(json.dumps(out))
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
