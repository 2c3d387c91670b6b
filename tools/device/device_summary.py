#!/usr/bin/env python3
"""Gathers what tools/device_check.sh measured into OUT_DIR/summary.json and prints a table.

  device_summary.py OUT_DIR TOTAL_SECONDS

Reads OUT_DIR/parts.jsonl (one line per part), gpu.csv (nvidia-smi), gpu_tests.json (GoogleTest),
the JSON outputs of `sluice train --json` (accuracy-*, precision-*, input-*), of train_step_bench
(speed-sluice-*, speed-updates) and of bench/pytorch_train_compare.py (speed-torch-*), tensorboard.out, python-cuda.out, onnx.out
and the profile summaries. Only the standard library: it also runs in a rehearsal without numpy.
Exits non-zero when a part failed.
"""
import datetime
import glob
import json
import math
import os
import re
import statistics
import sys


def load(path):
    """The JSON object in `path` (the last line that parses, for outputs with log lines), or None."""
    try:
        text = open(path).read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def gpu_tests(out):
    report = load(os.path.join(out, "gpu_tests.json"))
    if not report:
        return None
    cases = [c for s in report.get("testsuites", []) for c in s.get("testsuite", [])]
    skipped = sum(1 for c in cases if c.get("result") == "SKIPPED")
    return {"tests": report.get("tests"), "failures": report.get("failures"),
            "errors": report.get("errors", 0), "skipped": skipped,
            "passed": len(cases) - skipped - report.get("failures", 0)}


def accuracy(out):
    """The test accuracy on each device after the same epochs, with the seed in the file name's
    -seedN (none: seed 1); the goal is read on the mean over the seeds both devices ran, since one
    run's test accuracy moves by up to a point between seeds, and by as much with the order of
    float sums."""
    result = {}
    for model in ("cnn", "resnet-20"):
        entry, means = {}, {}
        for dev in ("cuda", "cpu"):
            paths = sorted(glob.glob(os.path.join(out, f"accuracy-{model}-{dev}*.out")))
            runs = {}
            for path in paths:
                seed = re.search(r"-seed(\d+)\.out$", path)
                r = load(path)
                if r and r.get("test_accuracy") is not None:
                    runs[int(seed.group(1)) if seed else 1] = r
            if not runs:
                continue
            first = runs[min(runs)]
            entry[dev] = {"test_accuracy": first.get("test_accuracy"),
                          "train_images_per_second": first.get("train_images_per_second"),
                          "epochs": first.get("epochs"), "train_records": first.get("train_records"),
                          "test_accuracy_by_seed": {k: r["test_accuracy"] for k, r in runs.items()},
                          "train_accuracy_by_seed": {
                              k: (r.get("history") or {}).get("accuracy", [None])[-1]
                              for k, r in runs.items()}}
            means[dev] = runs
        if "cuda" in means and "cpu" in means:
            seeds = sorted(set(means["cuda"]) & set(means["cpu"]))
            diff = 100 * sum(means["cuda"][k]["test_accuracy"] - means["cpu"][k]["test_accuracy"]
                             for k in seeds) / len(seeds)
            entry["seeds"] = seeds
            entry["difference_points"] = round(diff, 2)
            entry["within_0_5_points"] = abs(diff) <= 0.5
            # How far the means move by chance: the standard error of their difference, from the
            # spread between seeds on each device (a reader's guide, not part of the goal).
            if len(seeds) >= 2:
                var = sum(statistics.variance([100 * means[dev][k]["test_accuracy"] for k in seeds])
                          for dev in ("cuda", "cpu"))
                entry["standard_error_points"] = round(math.sqrt(var / len(seeds)), 2)
        if entry:
            result[model] = entry
    return result


def precision(out):
    result = {}
    for path in sorted(glob.glob(os.path.join(out, "precision-*.out"))):
        r = load(path)
        if r:
            # The cnn's runs by precision alone (as run 3 had them), any other model's prefixed.
            key = r.get("precision")
            if r.get("model", "cnn") != "cnn":
                key = "%s %s" % (r.get("model"), key)
            result[key] = {"test_accuracy": r.get("test_accuracy"),
                                          "train_images_per_second": r.get("train_images_per_second")}
    return result


def speed(out):
    """Median images/s per model and batch, over both rounds: sluice's iterations, PyTorch's repeats."""
    rates, graphs = {}, {}
    # The timed cuDNN algorithms (the default), cuDNN's heuristic picks (SLUICE_CUDNN_BENCHMARK=0)
    # and timing with 1 GiB of workspace offered (SLUICE_CUDNN_FIND_WORKSPACE_MB=1024).
    for run, prefix in (("sluice", "sluice"), ("heuristic", "sluice_heuristic"),
                        ("find1g", "sluice_find1g")):
        for path in glob.glob(os.path.join(out, "speed-%s-b*.out" % run)):
            batch = re.search(r"-b(\d+)", os.path.basename(path)).group(1)
            for b in (load(path) or {}).get("benchmarks", []):
                if (b.get("run_type") == "aggregate" or "images_per_second" not in b
                        or b.get("error_occurred")):
                    continue
                # train_step/MODEL/OPTIMIZER[/compiled|/compiled_no_graphs]/real_time
                parts = b["name"].split("/")
                model = parts[1]
                mode = parts[3] if len(parts) > 4 else ""
                side = prefix + {"compiled": "_compiled",
                                 "compiled_no_graphs": "_compiled_no_graphs"}.get(mode, "")
                rates.setdefault((model, batch), {}).setdefault(side, []).append(
                    b["images_per_second"])
                if run == "sluice" and mode == "compiled":
                    # How many CUDA graphs a replay launched (0: none captured).
                    graphs.setdefault((model, batch), []).append(b.get("device_graphs"))
    for path in glob.glob(os.path.join(out, "speed-torch-b*.out")):
        batch = re.search(r"-b(\d+)-", path).group(1)
        for model, values in (load(path) or {}).get("all_rates", {}).items():
            rates.setdefault((model, batch), {}).setdefault("pytorch", []).extend(values)
    result = {}
    for (model, batch), sides in sorted(rates.items()):
        entry = {side: round(statistics.median(v), 1) for side, v in sides.items()}
        entry["samples"] = {side: len(v) for side, v in sides.items()}
        if "sluice" in entry and "pytorch" in entry:
            entry["ratio"] = round(entry["sluice"] / entry["pytorch"], 3)
        if "sluice" in entry and "sluice_compiled" in entry:
            entry["compiled_vs_eager"] = round(entry["sluice_compiled"] / entry["sluice"], 3)
        if "sluice_compiled" in entry and "sluice_compiled_no_graphs" in entry:
            entry["graphs_vs_calls"] = round(
                entry["sluice_compiled"] / entry["sluice_compiled_no_graphs"], 3)
        if (model, batch) in graphs:
            entry["device_graphs"] = graphs[(model, batch)]
        result.setdefault(model, {})[batch] = entry
    return result


def updates(out):
    """The optimizer's update alone (train_step_bench --updates): median microseconds of one
    multi-tensor pass and of one call per variable, per model and optimizer."""
    times = {}
    for b in (load(os.path.join(out, "speed-updates.out")) or {}).get("benchmarks", []):
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        # train_step/MODEL/OPTIMIZER/update/one_pass|per_variable
        parts = b["name"].split("/")
        if len(parts) < 5:
            continue
        times.setdefault(f"{parts[1]}/{parts[2]}", {}).setdefault(parts[4], []).append(b["real_time"])
    result = {}
    for key, ways in sorted(times.items()):
        entry = {f"{way}_us": round(statistics.median(v), 1) for way, v in ways.items()}
        if "one_pass_us" in entry and "per_variable_us" in entry and entry["one_pass_us"] > 0:
            entry["speedup"] = round(entry["per_variable_us"] / entry["one_pass_us"], 2)
        result[key] = entry
    return result


def device_busy(summary_path):
    try:
        text = open(summary_path).read()
    except OSError:
        return None
    m = re.search(r"Device (\S+): busy ([0-9.]+)%", text)
    return {"track": m.group(1), "busy_percent": float(m.group(2))} if m else None


def main():
    out, total = sys.argv[1], int(sys.argv[2])
    parts = []
    for line in open(os.path.join(out, "parts.jsonl"), errors="replace"):
        if not line.strip():
            continue
        try:
            parts.append(json.loads(line))
        except ValueError:  # a note the shell could not escape: keep the line as text
            name = re.search(r'"part": "([^"]*)"', line)
            status = re.search(r'"status": "([^"]*)"', line)
            parts.append({"part": name.group(1) if name else "?",
                          "status": status.group(1) if status else "failed",
                          "note": "(not JSON) " + line.strip()[:300]})
    summary = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "total_seconds": total, "bundle": load(os.path.join(out, "bundle_manifest.json"))}
    try:
        name, driver, memory, cc = [f.strip() for f in open(os.path.join(out, "gpu.csv")).readline().split(",")]
        summary["device"] = {"name": name, "driver": driver, "memory": memory, "compute_capability": cc}
    except (OSError, ValueError):
        summary["device"] = None
    summary["gpu_tests"] = gpu_tests(out)
    summary["accuracy"] = accuracy(out)
    summary["precision"] = precision(out)
    summary["speed"] = speed(out)
    summary["updates"] = updates(out)
    run = load(os.path.join(out, "input-resnet-20-b256.out"))
    if run:
        summary["input"] = {"model": "resnet-20", "batch": 256,
                            "input_wait_share": run.get("input_wait_share"),
                            "train_images_per_second": run.get("train_images_per_second"),
                            "device_busy": device_busy(os.path.join(out, "profile-resnet-20-b256.txt"))}
    summary["tensorboard"] = load(os.path.join(out, "tensorboard.out"))
    summary["onnx"] = load(os.path.join(out, "onnx.out"))
    python_cuda = load(os.path.join(out, "python-cuda.out"))
    if python_cuda:
        summary["python_cuda"] = {
            "checks": {k: v.get("passed") for k, v in python_cuda.get("checks", {}).items()},
            "images_per_second": python_cuda.get("images_per_second")}
    summary["cpu_smoke"] = load(os.path.join(out, "cpu_smoke.out"))
    summary["parts"] = parts
    failed = [p["part"] for p in parts if p["status"] == "failed"]
    summary["failed_parts"] = failed
    with open(os.path.join(out, "summary.json.tmp"), "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(os.path.join(out, "summary.json.tmp"), os.path.join(out, "summary.json"))

    print(f"\n== device check: {total} s, {len(parts)} parts, {len(failed)} failed {failed or ''}")
    if summary["device"]:
        print(f"device: {summary['device']['name']}, driver {summary['device']['driver']}")
    if summary["gpu_tests"]:
        print(f"gpu_tests: {summary['gpu_tests']}")
    for model, entry in summary["accuracy"].items():
        print(f"accuracy {model}: " + ", ".join(f"{k} {v}" for k, v in entry.items()))
    for model, batches in summary["speed"].items():
        for batch, e in batches.items():
            print(f"speed {model} b{batch}: sluice {e.get('sluice')}  compiled "
                  f"{e.get('sluice_compiled')}  (no graphs {e.get('sluice_compiled_no_graphs')})  "
                  f"pytorch {e.get('pytorch')}  ratio {e.get('ratio')}  "
                  f"compiled/eager {e.get('compiled_vs_eager')}  graphs/calls "
                  f"{e.get('graphs_vs_calls')}  graphs {e.get('device_graphs')}")
    for key, e in summary["updates"].items():
        print(f"update {key}: one pass {e.get('one_pass_us')} us, per variable "
              f"{e.get('per_variable_us')} us, speed-up {e.get('speedup')}")
    for key in ("precision", "input", "python_cuda", "tensorboard", "onnx"):
        if summary.get(key):
            print(f"{key}: {json.dumps(summary[key])[:300]}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
