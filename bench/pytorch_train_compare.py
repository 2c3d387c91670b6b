#!/usr/bin/python3
"""PyTorch side of bench/compare_pytorch_train.sh: the models of
bench/train_step_bench.cc (mlp 784-256-128-100-10, TensorFlow's layers
tutorial CNN, resnet-small and resnet-20), one training step (forward, backward, optimizer update) at a
time on fixed synthetic data, and prints images/s as JSON.

Each measurement times `--steps` steps after `--warmup` steps; `--repeats`
measurements give the median reported. `--device cuda` runs on the GPU (the batch stays on the
device, and the clock is read after torch.cuda.synchronize(), as train_step_bench synchronizes
its device after each step): tools/device_check.sh's anchor. `--precision` mixed_bfloat16 or
mixed_float16 runs the step under torch.autocast (with a GradScaler for float16), PyTorch's
recommended mixed precision.
"""
import contextlib
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


class BasicBlock(nn.Module):
    """ResNet v1 basic block as train/residual_block.cc builds it: conv-BN-ReLU-conv-BN plus
    the input (through a 1x1 conv + BN when the shape changes), then ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), keras_bn(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), keras_bn(cout))
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          keras_bn(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


def keras_bn(channels):
    # Keras' defaults, as sluice's BatchNorm: moving averages with momentum 0.99, epsilon 1e-3.
    return nn.BatchNorm2d(channels, eps=1e-3, momentum=0.01)


def resnet_small():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), keras_bn(32), nn.ReLU(),
        BasicBlock(32, 32, 1), BasicBlock(32, 64, 2), BasicBlock(64, 128, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))


def resnet20():
    # He et al. 2016's CIFAR ResNet-20 as train/models/model_zoo.cc builds it: three stages of
    # three basic blocks, projection shortcuts where the shape changes.
    layers = [nn.Conv2d(1, 16, 3, padding=1, bias=False), keras_bn(16), nn.ReLU()]
    cin = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        for b in range(3):
            layers.append(BasicBlock(cin, cout, stride if b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


MODELS = {"mlp": mlp, "cnn": cnn, "resnet-small": resnet_small, "resnet-20": resnet20}


def optimizer_for(name, params):
    # The same settings as sluice's Sgd and Adam defaults in the C++ bench.
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01)
    return torch.optim.Adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-7)


AUTOCAST = {"float32": None, "mixed_bfloat16": torch.bfloat16, "mixed_float16": torch.float16}


def measure(model_name, optimizer_name, batch, steps, warmup, repeats, device, precision, size):
    torch.manual_seed(7)
    if model_name.startswith("torchvision:"):
        # torchvision's model at size x size x 3: the same architecture sluice imports from ONNX
        # (train_step_bench --onnx), as its users train it (channels first).
        import torchvision
        model = getattr(torchvision.models, model_name.split(":", 1)[1])(weights=None).to(device)
        x = torch.rand(batch, 3, size, size, device=device)
    else:
        model = MODELS[model_name]().to(device)
        x = torch.rand(batch, 1, 28, 28, device=device)
    model.train()
    opt = optimizer_for(optimizer_name, model.parameters())
    labels = torch.randint(0, 10, (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()
    dtype = AUTOCAST[precision]
    scaler = None
    if dtype == torch.float16:
        # torch.amp.GradScaler from PyTorch 2.3; Debian 12's 1.13 has the CUDA one only.
        scaler = (torch.amp.GradScaler(device.type) if hasattr(torch.amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())

    def autocast():
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=dtype)

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn(model(x), labels)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        step()
    sync()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        rates.append(batch * steps / (time.perf_counter() - start))
    return statistics.median(rates), rates


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", default="mlp,cnn,resnet-small,resnet-20",
                   help="also torchvision:NAME (e.g. torchvision:resnet18) at --size")
    p.add_argument("--size", type=int, default=224, help="torchvision models' input size")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--precision", choices=sorted(AUTOCAST), default="float32")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "batch": args.batch,
           "optimizer": args.optimizer, "device": str(device), "precision": args.precision,
           "images_per_second": {}, "all_rates": {}}
    if device.type == "cuda":
        # As PyTorch's users run fixed shapes: cuDNN's autotuner on; TF32 left at its defaults.
        torch.backends.cudnn.benchmark = True
        out["device_name"] = torch.cuda.get_device_name(device)
        out["cudnn_benchmark"] = True
        out["cudnn_allow_tf32"] = torch.backends.cudnn.allow_tf32
        out["matmul_allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
    for name in args.models.split(","):
        median, rates = measure(name, args.optimizer, args.batch, args.steps, args.warmup,
                                args.repeats, device, args.precision, args.size)
        out["images_per_second"][name] = median
        out["all_rates"][name] = rates
    print(json.dumps(out))


if __name__ == "__main__":
    main()
