"""The example plugins' folder on ``sys.path``, as ``PYTHONPATH=examples/plugins`` puts it for berth."""

from __future__ import annotations

import sys
from pathlib import Path

PLUGINS_DIR = Path(__file__).resolve().parents[2] / "examples" / "plugins"
if str(PLUGINS_DIR) not in sys.path:
    sys.path.insert(0, str(PLUGINS_DIR))
