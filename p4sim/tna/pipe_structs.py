"""Per-pipe objects for generated TNA code: a pipe builds only the headers its code names, in one call.

Why it exists: a TNA packet crosses two pipes and each starts from a fresh headers struct (the
egress parser rebuilds what it needs from the bytes the ingress deparser emitted). Programs share
one headers type between the pipes, so the egress pipe of p4src/tofino/dlcp.p4 built nine header
objects per packet and used four (issue 15: the TNA path's per-packet cost against v1model's).

For each pipe, ``pipe_struct`` writes a subclass of the shared struct class whose ``__init__``
builds the fields the pipe's generated code names (``.field`` in its source) and leaves the other
header fields unset; ``__getattr__`` (called only for an unset slot) builds such a header on first
use, fresh and invalid as the eager path would have. Correctness never depends on the scan: a
header it missed is built when first touched, only later.

``fresh_function`` writes ``_FRESH_<pipe>()``, which builds all of a pipe's per-packet objects
(headers, metadata, intrinsic metadata) inline in one Python frame, where calling each class
took one frame per object (TnaPath calls it once per packet and pipe).
"""

from __future__ import annotations

import re

from p4sim.backend.typegen import TypeClasses, pyfield
from p4sim.frontend import ast


def named_fields(code: str, t: ast.StructT) -> set[str]:
    """The Python names of ``t``'s fields that ``code`` reads or writes as ``.field``."""
    names = {pyfield(n) for n, _ in t.fields}
    return names & set(re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)\b", code))


def lazy_fields(t: ast.StructT, used: set[str]) -> list[str]:
    """Header fields of ``t`` a pipe whose code names ``used`` need not build up front."""
    return [pyfield(n) for n, ft in t.fields if isinstance(ft, ast.HeaderT) and pyfield(n) not in used]


def pipe_struct(classes: TypeClasses, t: ast.StructT, pipe: str, used: set[str]) -> tuple[str, str] | None:
    """(class name, source) of ``t``'s struct for ``pipe`` building only ``used`` header fields
    eagerly; None when every header field is used (the shared class then serves)."""
    lazy = lazy_fields(t, used)
    if not lazy:
        return None
    base = classes.name(t)
    cls = f"{base}__{pipe}"
    lines = [f"class {cls}({base}):", "    __slots__ = ()", "    def __init__(self):"]
    for name, ft in t.fields:
        if pyfield(name) not in lazy:
            lines += classes.field_init_lines(pyfield(name), ft)
    lines += [f"        self.{s} = {v}" for s, v in classes.extra_slots.get(t.name, ())]
    if lines[-1].endswith("__init__(self):"):
        lines.append("        pass")
    makers = ", ".join(f"{f!r}: {classes.name(ft)}" for n, ft in t.fields if (f := pyfield(n)) in lazy)
    lines += [f"    def __getattr__(self, name, _lazy={{{makers}}}):",
              "        make = _lazy.get(name)",
              "        if make is None:",
              "            raise AttributeError(name)",
              "        h = make()",
              "        setattr(self, name, h)",
              "        return h"]
    return cls, "\n".join(lines) + "\n"


def fresh_function(classes: TypeClasses, pipe: str, objects: list[tuple[str, ast.Type, set[str]]],
                   presets: dict[int, list[tuple[str, int]]]) -> str:
    """Source of ``_FRESH_<pipe>()``: a tuple of fresh instances of ``objects`` ((class name, its
    type, the fields the pipe's code names)), object ``i`` then given ``presets[i]`` ((field, value))."""
    lines = [f"def _FRESH_{pipe}():"]
    for i, (cls, t, used) in enumerate(objects):
        obj = f"o{i}"
        if isinstance(t, ast.HeaderT):
            made = classes.field_init_lines("x", t, obj, " " * 4)
            lines += made[:-1] + [f"    {obj} = h"] if len(made) > 1 else [f"    {obj} = {cls}()"]
        else:
            lazy = lazy_fields(t, used) if cls != classes.name(t) else []
            lines.append(f"    {obj} = _new({cls})")
            for name, ft in t.fields:
                if pyfield(name) not in lazy:
                    lines += classes.field_init_lines(pyfield(name), ft, obj, " " * 4)
            lines += [f"    {obj}.{slot} = {v}" for slot, v in classes.extra_slots.get(t.name, ())]
        lines += [f"    {obj}.{pyfield(f)} = {v}" for f, v in presets.get(i, ())]
    lines.append("    return (" + "".join(f"o{i}, " for i in range(len(objects))) + ")")
    return "\n".join(lines) + "\n"
