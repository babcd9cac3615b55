#!/usr/bin/env python3
"""Write docs/metrics.md from the metrics registry (a test fails when the file is stale).

Usage: PYTHONPATH=. .venv/bin/python hack/gen-metrics-doc.py > docs/metrics.md
"""

from __future__ import annotations

import sys

from app.cli.metricsdoc import metrics_markdown

if __name__ == "__main__":
    sys.stdout.write(metrics_markdown())
