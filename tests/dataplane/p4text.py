"""Read facts out of the P4 sources with regular expressions (no compiler needed).

Why this exists: several data-plane tests check the P4 text itself (constants,
the DLCP header layout, the control-plane names of both targets) and must run
even where no P4 compiler exists.  The sources keep those facts on simple
one-line forms (`const bit<W> NAME = VALUE;`, `bit<W> field;`, `@name(".X")`).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
P4SRC = ROOT / "p4src"
INCLUDE = P4SRC / "include"

_CONST = re.compile(r"^\s*const\s+bit<(\d+)>\s+(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*;", re.M)
_FIELD = re.compile(r"^\s*(bit<(\d+)>|\w+)\s+(\w+)\s*;", re.M)
_GLOBAL_NAME = re.compile(r'@name\("\.([\w.]+)"\)')
_TYPEDEFS = {"qdepth_t": 19, "mac_addr_t": 48, "ipv4_addr_t": 32, "dlcp_port_t": 9}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def constants(path: Path = INCLUDE / "constants.p4") -> dict[str, tuple[int, int]]:
    """NAME -> (width, value) for every `const bit<W> NAME = VALUE;`."""
    text = strip_comments(path.read_text())
    return {m.group(2): (int(m.group(1)), int(m.group(3), 0)) for m in _CONST.finditer(text)}


def header_fields(name: str, path: Path = INCLUDE / "headers.p4") -> list[tuple[str, int]]:
    """[(field, width)] of header ``name`` in declaration order."""
    text = strip_comments(path.read_text())
    m = re.search(r"header\s+" + re.escape(name) + r"\s*\{(.*?)\}", text, re.S)
    if m is None:
        raise LookupError(f"{path}: no header {name}")
    out = []
    for f in _FIELD.finditer(m.group(1)):
        width = int(f.group(2)) if f.group(2) else _TYPEDEFS[f.group(1)]
        out.append((f.group(3), width))
    return out


def global_names(target: str) -> set[str]:
    """Every `@name(".X")` under p4src/<target>/ (comments stripped)."""
    names: set[str] = set()
    for path in sorted((P4SRC / target).rglob("*.p4")):
        names.update(_GLOBAL_NAME.findall(strip_comments(path.read_text())))
    return names
