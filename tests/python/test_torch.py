"""The PyTorch loop: batches into torch through DLPack, without a copy. Skips (saying so) where
python3-torch is not installed: CI installs it only with tools/setup.sh --bench."""

import numpy as np
import pytest
import sluice

torch = pytest.importorskip("torch", reason="python3-torch is not installed (tools/setup.sh --bench)")


def test_torch_training_steps_on_sluice_batches():
    x = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int64)
    ds = sluice.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).batch(16).repeat(5)
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for images, labels in ds:
        xb, yb = torch.from_dlpack(images), torch.from_dlpack(labels)
        assert xb.data_ptr() == images.data_ptr  # no copy
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert len(losses) == 20 and losses[-1] < losses[0]


def test_torch_tensor_outlives_iterator():
    it = iter(sluice.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32)).batch(8))
    t = torch.from_dlpack(next(it))
    del it
    assert t.tolist() == list(range(8))
