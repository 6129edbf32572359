"""Aligned human tables and JSON for ``dlcpctl`` output (CLI output goes to stdout, not logging)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; numbers right-aligned, text left-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [any(isinstance(row[i], (int, float)) for row in rows)
               and all(isinstance(row[i], (int, float)) or row[i] == "-" for row in rows)
               for i in range(len(headers))]
    lines = []
    for r in cells:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric, strict=True)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def emit(text: str) -> None:
    sys.stdout.write(text + ("\n" if not text.endswith("\n") else ""))
    sys.stdout.flush()


def emit_json(data: object) -> None:
    emit(json.dumps(data, indent=2, sort_keys=True))
