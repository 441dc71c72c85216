"""Bundled sample data: the ICML 2025 and ICLR 2025 abstract lists (no titles)."""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)

SAMPLE_FILES = ("icml2025.txt", "iclr2025.txt")


def sample_paths() -> list[Path]:
    """Paths of the bundled paper lists, wherever the package is installed."""
    root = resources.files(__name__)
    return [Path(str(root.joinpath(name))) for name in SAMPLE_FILES]
