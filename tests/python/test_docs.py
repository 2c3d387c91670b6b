"""docs/python.md's examples run: each ```python block marked <!-- python-doc-test --> (or
<!-- python-doc-test torch -->, skipped without PyTorch), from the repository's root."""

import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[2]
MARK = re.compile(r"^<!--\s*python-doc-test(\s+torch)?\s*-->$")


def examples():
    lines = (ROOT / "docs" / "python.md").read_text().split("\n")
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        assert lines[i + 1] == "```python", f"docs/python.md:{i + 1}: a mark before a ```python block"
        end = lines.index("```", i + 2)
        yield pytest.param("\n".join(lines[i + 2 : end]), bool(m.group(1)), id=f"python.md:{i + 3}")


@pytest.mark.parametrize("code,needs_torch", list(examples()))
def test_example_runs(code, needs_torch, monkeypatch):
    if needs_torch:
        pytest.importorskip("torch", reason="python3-torch is not installed (tools/setup.sh --bench)")
    monkeypatch.chdir(ROOT)
    exec(compile(code, "docs/python.md", "exec"), {})
