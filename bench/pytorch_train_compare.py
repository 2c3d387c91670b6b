#!/usr/bin/python3
"""PyTorch side of bench/compare_pytorch_train.sh: the two models of
bench/train_step_bench.cc (mlp 784-256-128-100-10 and TensorFlow's layers
tutorial CNN), one training step (forward, backward, optimizer update) at a
time on fixed synthetic data, and prints images/s as JSON.

Each measurement times `--steps` steps after `--warmup` steps; `--repeats`
measurements give the median reported.
"""
import argparse
import json
import statistics
import time

import torch
from torch import nn


def mlp():
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 256), nn.ReLU(),
        nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 100), nn.ReLU(),
        nn.Linear(100, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Dropout(0.4),
        nn.Linear(1024, 10))


def optimizer_for(name, params):
    # The same settings as sluice's Sgd and Adam defaults in the C++ bench.
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01)
    return torch.optim.Adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-7)


def measure(model_name, optimizer_name, batch, steps, warmup, repeats):
    torch.manual_seed(7)
    model = mlp() if model_name == "mlp" else cnn()
    model.train()
    opt = optimizer_for(optimizer_name, model.parameters())
    x = torch.rand(batch, 1, 28, 28)
    labels = torch.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), labels)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        rates.append(batch * steps / (time.perf_counter() - start))
    return statistics.median(rates), rates


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "batch": args.batch,
           "optimizer": args.optimizer, "images_per_second": {}, "all_rates": {}}
    for name in args.models.split(","):
        median, rates = measure(name, args.optimizer, args.batch, args.steps, args.warmup,
                                args.repeats)
        out["images_per_second"][name] = median
        out["all_rates"][name] = rates
    print(json.dumps(out))


if __name__ == "__main__":
    main()
