"""Where the topic catalog lives: `config/topics.toml`, shipped with the package."""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)


def catalog_path() -> Path:
    return Path(str(resources.files("config").joinpath("topics.toml")))
