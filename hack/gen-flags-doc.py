#!/usr/bin/env python3
"""Write docs/flags.md from berth run's argument parser (a test fails when the file is stale).

Usage: .venv/bin/python hack/gen-flags-doc.py > docs/flags.md
"""

from __future__ import annotations

import sys

from app.cli.flagsdoc import flags_markdown

if __name__ == "__main__":
    sys.stdout.write(flags_markdown())
