#!/usr/bin/env python3
"""TensorBoard's own readers on what sluice writes (issue 42, part 5; run by tools/device_check.sh).

  tensorboard_check.py LOGDIR PROFILE_DIR

LOGDIR: `sluice train --logdir`'s folder. Its event files are loaded with TensorBoard's
EventAccumulator, which must find the training scalars (loss, accuracy) with one value per
step or epoch as sluice logged them. PROFILE_DIR: `sluice train --profile`'s folder; the trace that
TensorBoard's profile plugin reads (plugins/profile/RUN/HOST.trace.json.gz) must be gzip JSON in
the Trace Event Format with complete events; when tensorboard_plugin_profile is installed, its
loader is named in the output. Prints one JSON object; exits non-zero when a check fails.
"""
import glob
import gzip
import json
import os
import sys


def scalars(logdir):
    from tensorboard.backend.event_processing import event_accumulator

    found = {}
    for run in sorted(os.listdir(logdir)):
        path = os.path.join(logdir, run)
        if not os.path.isdir(path):
            continue
        acc = event_accumulator.EventAccumulator(path, size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            found[f"{run}/{tag}"] = [e.value for e in acc.Scalars(tag)]
    return found


def profile(profile_dir):
    traces = glob.glob(os.path.join(profile_dir, "plugins", "profile", "*", "*.trace.json.gz"))
    if not traces:
        return {"ok": False, "error": f"no plugins/profile/*/*.trace.json.gz under {profile_dir}"}
    with gzip.open(traces[0], "rt") as f:
        trace = json.load(f)
    events = trace.get("traceEvents", [])
    complete = [e for e in events if e.get("ph") == "X"]
    tracks = sorted({str(e.get("tid")) for e in complete})
    out = {"ok": len(complete) > 0, "file": traces[0], "events": len(events),
           "complete_events": len(complete), "tracks": len(tracks)}
    try:
        import tensorboard_plugin_profile  # noqa: F401
        out["profile_plugin"] = "installed"
    except ImportError:
        out["profile_plugin"] = "not installed (checked the file's format only)"
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    import tensorboard

    result = {"tensorboard": tensorboard.__version__}
    found = scalars(sys.argv[1])
    result["scalars"] = {tag: len(values) for tag, values in found.items()}
    losses = [v for tag, v in found.items() if tag.endswith("loss")]
    result["event_files_ok"] = bool(losses) and all(len(v) > 0 for v in losses)
    result["profile"] = profile(sys.argv[2])
    result["ok"] = result["event_files_ok"] and result["profile"]["ok"]
    print(json.dumps(result))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
