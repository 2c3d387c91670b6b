#!/usr/bin/python3
"""Keras' RMSprop, Adagrad, Adadelta, Adamax and Nadam in sluice, checked against torch.optim
where the two frameworks' rules agree, and against the Keras rule written out in float64.

  bench/optimizer_rules_vs_pytorch.py [--trajectories build/bench/optimizer_trajectories]
      [--steps 200] [--n 4096]

Each case runs sluice's optimizer (bench/optimizer_trajectories.cc) and PyTorch's on the same
float32 weights and gradients, for --steps steps, and reports the largest difference of the
weights over the whole run: sluice against the Keras rule in float64, PyTorch against it, and
sluice against PyTorch. Where Keras and PyTorch state their rules differently, the case sets both
so that the rules agree and says how:

  RMSprop   Keras: lr g / sqrt(v + eps); PyTorch: lr g / (sqrt(v) + eps). Agree at eps = 0.
            PyTorch's rho is `alpha` (0.99 by default, Keras 0.9); its momentum buffer holds
            g / denominator and is scaled by lr after, Keras' holds lr g / denominator: the same
            while lr is constant.
  Adagrad   Keras: the accumulator starts at 0.1, lr g / sqrt(a + eps); PyTorch: starts at
            initial_accumulator_value (0 by default), lr g / (sqrt(a) + eps) with eps 1e-10. Agree
            with initial_accumulator_value=0.1 and eps = 0.
  Adadelta  The same rule; PyTorch's defaults are lr 1.0 and eps 1e-6 (Keras 0.001 and 1e-7).
  Adamax    Keras: u = max(beta_2 u, |g|), m / (u + eps); PyTorch: u = max(beta_2 u, |g| + eps),
            m / u. Agree at eps = 0.
  NAdam     Keras' momentum schedule is beta_1 (1 - 0.5 * 0.96^t); PyTorch's is
            beta_1 (1 - 0.5 * 0.96^(t * momentum_decay)) with momentum_decay 0.004 by default.
            Agree with momentum_decay = 1 (and eps 1e-7; PyTorch's default is 1e-8), except in
            PyTorch before 2.0 (Debian 12's 1.13), whose mu_product_next multiplies mu_t in twice
            (fixed by pytorch/pytorch#92699): the script detects that and reports the case
            instead of checking it.

The "defaults differ" rows run each framework with its own defaults for the constants above
(the same lr and betas), to show how far apart they drift; they are reported, not checked.
Exits 1 when a case whose rules agree differs by more than --tolerance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import inspect

import numpy as np
import torch

# PyTorch < 2.0's NAdam: mu_product_next = mu_product * mu * mu_next (pytorch/pytorch#92699).
TORCH_NADAM_BUG = "mu_product * mu * mu_next" in inspect.getsource(inspect.getmodule(torch.optim.NAdam))


def keras_rule(name, o, w0, grads):
    """The Keras update rules (keras/src/optimizers/*.py) in float64; returns the weights after
    each step."""
    w = w0.astype(np.float64).copy()
    out = []
    z = np.zeros_like(w)
    s1, s2, s3 = z.copy(), z.copy(), z.copy()
    if name == "adagrad":
        s1[:] = o["initial_accumulator_value"]
    u_product = 1.0
    for t, g32 in enumerate(grads, start=1):
        g = g32.astype(np.float64)
        lr, eps = o["lr"], o["epsilon"]
        if name == "rmsprop":
            rho = o["rho"]
            s1 = rho * s1 + (1 - rho) * g * g
            if o["centered"]:
                s3 = rho * s3 + (1 - rho) * g
                den = s1 - s3 * s3 + eps
            else:
                den = s1 + eps
            inc = lr * g / np.sqrt(den)
            if o["momentum"] > 0:
                s2 = o["momentum"] * s2 + inc
                w = w - s2
            else:
                w = w - inc
        elif name == "adagrad":
            s1 = s1 + g * g
            w = w - lr * g / np.sqrt(s1 + eps)
        elif name == "adadelta":
            rho = o["rho"]
            s1 = rho * s1 + (1 - rho) * g * g
            delta = -np.sqrt(s2 + eps) * g / np.sqrt(s1 + eps)
            s2 = rho * s2 + (1 - rho) * delta * delta
            w = w + lr * delta
        elif name == "adamax":
            b1, b2 = o["beta_1"], o["beta_2"]
            s1 = s1 + (g - s1) * (1 - b1)
            s2 = np.maximum(b2 * s2, np.abs(g))
            w = w - lr * s1 / ((1 - b1**t) * (s2 + eps))
        elif name == "nadam":
            b1, b2 = o["beta_1"], o["beta_2"]
            u = lambda k: b1 * (1 - 0.5 * 0.96**k)
            u_product *= u(t)
            s1 = s1 + (g - s1) * (1 - b1)
            s2 = s2 + (g * g - s2) * (1 - b2)
            m_hat = u(t + 1) * s1 / (1 - u_product * u(t + 1)) + (1 - u(t)) * g / (1 - u_product)
            w = w - m_hat * lr / (np.sqrt(s2 / (1 - b2**t)) + eps)
        out.append(w.copy())
    return np.stack(out)


def torch_run(name, kwargs, w0, grads):
    p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    cls = {"rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad,
           "adadelta": torch.optim.Adadelta, "adamax": torch.optim.Adamax,
           "nadam": torch.optim.NAdam}[name]
    opt = cls([p], **kwargs)
    out = []
    for g in grads:
        p.grad = torch.from_numpy(g.copy())
        opt.step()
        out.append(p.detach().numpy().copy())
    return np.stack(out).astype(np.float64)


def sluice_run(binary, name, o, w0, grads, work):
    wf, gf, of = (os.path.join(work, f) for f in ("w0", "g", "out"))
    w0.astype("<f4").tofile(wf)
    grads.astype("<f4").tofile(gf)
    args = [binary, "--optimizer", name, "--weights", wf, "--gradients", gf, "--out", of,
            "--steps", str(len(grads))]
    for key, value in o.items():
        args += [f"--{key}", str(int(value) if isinstance(value, bool) else value)]
    subprocess.run(args, check=True)
    return np.fromfile(of, dtype="<f4").reshape(len(grads), -1).astype(np.float64)


# (label, sluice/Keras options, PyTorch kwargs, whether the rules agree)
CASES = [
    ("RMSprop eps=0", "rmsprop",
     dict(lr=0.001, rho=0.9, momentum=0.0, epsilon=0.0, centered=False),
     dict(lr=0.001, alpha=0.9, eps=0.0), True),
    ("RMSprop momentum centered eps=0", "rmsprop",
     dict(lr=0.001, rho=0.9, momentum=0.9, epsilon=0.0, centered=True),
     dict(lr=0.001, alpha=0.9, eps=0.0, momentum=0.9, centered=True), True),
    ("RMSprop defaults differ (eps placement, rho)", "rmsprop",
     dict(lr=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False),
     dict(lr=0.001), False),
    ("Adagrad init 0.1, eps=0", "adagrad",
     dict(lr=0.01, initial_accumulator_value=0.1, epsilon=0.0),
     dict(lr=0.01, initial_accumulator_value=0.1, eps=0.0), True),
    ("Adagrad defaults differ (initial accumulator, eps)", "adagrad",
     dict(lr=0.01, initial_accumulator_value=0.1, epsilon=1e-7),
     dict(lr=0.01), False),
    ("Adadelta lr=1 eps=1e-7", "adadelta",
     dict(lr=1.0, rho=0.95, epsilon=1e-7),
     dict(lr=1.0, rho=0.95, eps=1e-7), True),
    ("Adadelta Keras defaults", "adadelta",
     dict(lr=0.001, rho=0.95, epsilon=1e-7),
     dict(lr=0.001, rho=0.95, eps=1e-7), True),
    ("Adamax eps=0", "adamax",
     dict(lr=0.002, beta_1=0.9, beta_2=0.999, epsilon=0.0),
     dict(lr=0.002, betas=(0.9, 0.999), eps=0.0), True),
    ("Adamax defaults differ (eps placement)", "adamax",
     dict(lr=0.002, beta_1=0.9, beta_2=0.999, epsilon=1e-7),
     dict(lr=0.002, betas=(0.9, 0.999)), False),
    ("NAdam momentum_decay=1" + (" (torch's #92699 bug)" if TORCH_NADAM_BUG else ""), "nadam",
     dict(lr=0.002, beta_1=0.9, beta_2=0.999, epsilon=1e-7),
     dict(lr=0.002, betas=(0.9, 0.999), eps=1e-7, momentum_decay=1.0), not TORCH_NADAM_BUG),
    ("NAdam defaults differ (momentum_decay 0.004)", "nadam",
     dict(lr=0.002, beta_1=0.9, beta_2=0.999, epsilon=1e-7),
     dict(lr=0.002, betas=(0.9, 0.999)), False),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trajectories", default="build/bench/optimizer_trajectories")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--tolerance", type=float, default=1e-5,
                   help="largest |sluice - torch| allowed where the rules agree")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    a = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    w0 = rng.uniform(-1, 1, a.n).astype(np.float32)
    # Magnitudes in [0.05, 1] with random signs, a few steps an order of magnitude smaller.
    grads = (rng.uniform(0.05, 1, (a.steps, a.n)) * rng.choice([-1, 1], (a.steps, a.n)))
    grads[::7] *= 0.1
    grads = grads.astype(np.float32)

    print(f"{a.steps} steps on {a.n} weights; max |difference| of the weights over the run; "
          f"torch {torch.__version__}")
    print(f"{'case':56} {'sluice-keras64':>15} {'torch-keras64':>14} {'sluice-torch':>13} "
          f"{'moved':>8}  verdict")
    failures = 0
    results = []
    with tempfile.TemporaryDirectory() as work:
        for label, name, o, kw, agree in CASES:
            ref = keras_rule(name, o, w0, grads)
            ours = sluice_run(a.trajectories, name, o, w0, grads, work)
            theirs = torch_run(name, kw, w0, grads)
            d_ours = float(np.max(np.abs(ours - ref)))
            d_theirs = float(np.max(np.abs(theirs - ref)))
            d_both = float(np.max(np.abs(ours - theirs)))
            moved = float(np.max(np.abs(ref[-1] - w0)))
            if agree:
                ok = d_both <= a.tolerance and d_ours <= a.tolerance
                verdict = "agree" if ok else "MISMATCH"
                failures += not ok
            else:
                verdict = "differs (reported)"
            print(f"{label:56} {d_ours:15.2e} {d_theirs:14.2e} {d_both:13.2e} {moved:8.4f}  "
                  f"{verdict}")
            results.append(dict(case=label, optimizer=name, rules_agree=agree,
                                sluice_vs_keras64=d_ours, torch_vs_keras64=d_theirs,
                                sluice_vs_torch=d_both, moved=moved))
    if a.json:
        print(json.dumps(results, indent=1))
    if failures:
        print(f"{failures} case(s) where the rules agree differ by more than {a.tolerance}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
