"""Per-pipe objects for generated TNA code: each pipe's six per-packet objects from one call, building
only the headers that pipe's code names.

Why it exists: a TNA packet crosses two pipes and each starts from fresh objects (the egress
parser rebuilds what it needs from the bytes the ingress deparser emitted). Programs share one
headers type between the pipes, so the egress pipe of p4src/tofino/dlcp.p4 built nine header
objects per packet and used four, and each object cost a Python frame (issue 15: the TNA path's
per-packet cost against v1model's).

``fresh_function`` writes ``_FRESH_<pipe>()``, which builds a pipe's objects (headers, metadata,
intrinsic metadata) inline in one frame. A header field of a headers struct that the pipe's code
never names (``.field`` in its source, ``named_fields``) gets a shared invalid header instead of a
new one: nothing of that pipe reads or writes it. The shared headers are of a subclass that refuses
writes (``SENTINEL``), so a use the scan missed fails loudly instead of leaking state between
packets; the scan takes every function the other pipe's blocks did not generate, P4 functions
included. No class here defines ``__getattr__``: that would slow every attribute read of the
object (CPython 3.11 does not specialise attribute loads on such classes).
"""

from __future__ import annotations

import re

from p4sim.backend.typegen import TypeClasses, default_value, pyfield
from p4sim.frontend import ast


def named_fields(code: str, t: ast.StructT) -> set[str]:
    """The Python names of ``t``'s fields that ``code`` reads or writes as ``.field``."""
    names = {pyfield(n) for n, _ in t.fields}
    return names & set(re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)\b", code))


def unnamed_headers(t: ast.StructT, used: set[str]) -> dict[str, ast.HeaderT]:
    """Header fields of struct ``t`` that a pipe whose code names ``used`` never touches."""
    return {pyfield(n): ft for n, ft in t.fields if isinstance(ft, ast.HeaderT) and pyfield(n) not in used}


def sentinel_source(classes: TypeClasses, header: ast.HeaderT) -> tuple[str, str]:
    """(global name, source) of the shared invalid ``header`` a pipe that never names it holds."""
    cls = classes.name(header)
    name = f"_UNUSED_{cls}"
    lines = [f"class _Unused{cls}({cls}):",
             "    __slots__ = ()",
             "    def __setattr__(self, name, value):",
             f"        raise AssertionError('p4sim: a pipe wrote header {cls} its generated code never names')",
             "    def _setinvalid(self):",
             "        pass",
             f"{name} = _new(_Unused{cls})"]
    for n, ft in [("_v", ast.BoolT())] + list(header.fields):
        lines.append(f"object.__setattr__({name}, {pyfield(n) if n != '_v' else '_v'!r}, {default_value(ft, classes)})")
    lines += [f"object.__setattr__({name}, {pyfield(n) + '_len'!r}, 0)" for n, ft in header.fields
              if isinstance(ft, ast.VarbitT)]
    return name, "\n".join(lines) + "\n"


def fresh_function(classes: TypeClasses, pipe: str, objects: list[tuple[str, ast.Type, set[str]]],
                   presets: dict[int, list[tuple[str, int]]], unused: dict[str, str]) -> str:
    """Source of ``_FRESH_<pipe>()``: a tuple of fresh instances of ``objects`` ((class name, its
    type, the fields the pipe's code names)), object ``i`` given ``presets[i]`` ((field, value))
    instead of the defaults; header fields the pipe never names hold ``unused[header class]``."""
    lines = [f"def _FRESH_{pipe}():"]
    for i, (cls, t, used) in enumerate(objects):
        obj = f"o{i}"
        preset = dict(presets.get(i, ()))
        if isinstance(t, ast.HeaderT):
            made = classes.field_init_lines("x", t, obj, " " * 4)
            lines += made[:-1] + [f"    {obj} = h"] if len(made) > 1 else [f"    {obj} = {cls}()"]
        else:
            skip = unnamed_headers(t, used) if isinstance(t, ast.StructT) else {}
            lines.append(f"    {obj} = _new({cls})")
            for name, ft in t.fields:
                f = pyfield(name)
                if f in preset:
                    lines.append(f"    {obj}.{f} = {preset.pop(f)}")
                elif f in skip and classes.name(ft) in unused:
                    lines.append(f"    {obj}.{f} = {unused[classes.name(ft)]}")
                else:
                    lines += classes.field_init_lines(f, ft, obj, " " * 4)
            lines += [f"    {obj}.{slot} = {v}" for slot, v in classes.extra_slots.get(t.name, ())]
        lines += [f"    {obj}.{pyfield(f)} = {v}" for f, v in preset.items()]
    lines.append("    return (" + "".join(f"o{i}, " for i in range(len(objects))) + ")")
    return "\n".join(lines) + "\n"
