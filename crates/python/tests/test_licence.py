"""The installed distribution's licence: the SPDX expression of the workspace's crates, and both
texts, byte for byte the repository's, among its files (`<name>.dist-info/licenses/`)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_distribution_carries_its_licence_expression_and_both_texts():
    distribution = importlib.metadata.distribution("gemma-vision")
    assert distribution.metadata["License-Expression"] == "MIT OR Apache-2.0"
    assert sorted(distribution.metadata.get_all("License-File")) == ["LICENSE-APACHE", "LICENSE-MIT"]
    texts = {path.name: path for path in distribution.files or [] if "licenses" in path.parts}
    for name in ("LICENSE-MIT", "LICENSE-APACHE"):
        assert name in texts, sorted(str(p) for p in distribution.files or [])
        assert texts[name].locate().read_bytes() == (ROOT / name).read_bytes()
