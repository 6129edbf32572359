"""When, at which commit and under what machine load a simulation result was made.

Why this exists: the figures of docs/simulation.md and the cross-check records quoted in every
report must say what they measured (the commit, and whether simulation/ had local changes) and how
busy the shared 2-core machine was; every result writer takes them from here.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


def provenance() -> dict:
    """{"date": UTC minute, "commit": short hash (+ local changes in simulation/), "load_average": 1-min}."""
    repo = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--",
                                "simulation"], capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        head, dirty = "unknown", ""
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "commit": head + (" (+ local changes in simulation/)" if dirty else ""),
            "load_average": round(os.getloadavg()[0], 1)}
