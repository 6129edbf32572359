"""Per-pipe objects for generated TNA code: a pipe builds only the headers its code names, in one call.

Why it exists: a TNA packet crosses two pipes and each starts from a fresh headers struct (the
egress parser rebuilds what it needs from the bytes the ingress deparser emitted). Programs share
one headers type between the pipes, so the egress pipe of p4src/tofino/dlcp.p4 built nine header
objects per packet and used four (issue 15: the TNA path's per-packet cost against v1model's).

For each pipe, ``pipe_struct`` writes a subclass of the shared struct class whose ``__init__``
builds the fields the pipe's generated code names (``.field`` in its source) and leaves the other
header fields, and scalar fields nothing reads (e.g. most of ``ingress_intrinsic_metadata_for_tm_t``'s
17), unset; ``__getattr__`` (called only for an unset slot) makes such a field on first use, fresh
and invalid or 0 as the eager path would have. Correctness never depends on the scan: a field it
missed is made when first read, only later.

``fresh_function`` writes ``_FRESH_<pipe>()``, which builds all of a pipe's per-packet objects
(headers, metadata, intrinsic metadata) inline in one Python frame, where calling each class
took one frame per object (TnaPath calls it once per packet and pipe).
"""

from __future__ import annotations

import re

from p4sim.backend.typegen import TypeClasses, default_value, pyfield
from p4sim.frontend import ast


def named_fields(code: str, t: ast.StructT) -> set[str]:
    """The Python names of ``t``'s fields that ``code`` reads or writes as ``.field``."""
    names = {pyfield(n) for n, _ in t.fields}
    return names & set(re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)\b", code))


# What p4sim's traffic manager and deparser model (p4sim/tna/pipeline.py) read from the intrinsic
# metadata after the blocks ran, besides what the program's code names: built up front. (A field
# missing here is still correct: built on first read, only slower.)
ARCH_READS = {
    "ingress_intrinsic_metadata_for_tm_t": {"ucast_egress_port", "qid", "bypass_egress", "mcast_grp_a",
                                            "mcast_grp_b", "copy_to_cpu"},
    "ingress_intrinsic_metadata_for_deparser_t": {"drop_ctl", "resubmit_type"},
    "egress_intrinsic_metadata_for_deparser_t": {"drop_ctl"},
}
# a scalar field's default and the zero-argument call that makes it on first read
_SCALAR_MAKERS = {"0": "int", "False": "bool"}


def lazy_fields(classes: TypeClasses, t: ast.StructT, used: set[str]) -> dict[str, str]:
    """Fields of ``t`` a pipe whose code names ``used`` need not set up front -> what makes each on
    first read: headers (their class) and scalars defaulting to 0/False (``int``/``bool``) that
    neither the code nor the architecture model (``ARCH_READS``) reads."""
    keep = used | ARCH_READS.get(t.name, set())
    out = {}
    for n, ft in t.fields:
        f = pyfield(n)
        if f in keep:
            continue
        if isinstance(ft, ast.HeaderT):
            out[f] = classes.name(ft)
        elif default_value(ft, classes) in _SCALAR_MAKERS and not isinstance(ft, (ast.StructT, ast.HeaderUnionT)):
            out[f] = _SCALAR_MAKERS[default_value(ft, classes)]
    return out


def pipe_struct(classes: TypeClasses, t: ast.StructT, pipe: str, used: set[str]) -> tuple[str, str] | None:
    """(class name, source) of ``t``'s struct for ``pipe`` building only ``used`` header fields
    eagerly; None when every header field is used (the shared class then serves)."""
    lazy = lazy_fields(classes, t, used)
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
    makers = ", ".join(f"{f!r}: {make}" for f, make in lazy.items())
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
            lazy = lazy_fields(classes, t, used) if cls != classes.name(t) else {}
            preset = dict(presets.get(i, ()))
            lines.append(f"    {obj} = _new({cls})")
            for name, ft in t.fields:
                f = pyfield(name)
                if f in preset:
                    lines.append(f"    {obj}.{f} = {preset.pop(f)}")
                elif f not in lazy:
                    lines += classes.field_init_lines(f, ft, obj, " " * 4)
            lines += [f"    {obj}.{slot} = {v}" for slot, v in classes.extra_slots.get(t.name, ())]
            presets = {**presets, i: list(preset.items())}
        lines += [f"    {obj}.{pyfield(f)} = {v}" for f, v in presets.get(i, ())]
    lines.append("    return (" + "".join(f"o{i}, " for i in range(len(objects))) + ")")
    return "\n".join(lines) + "\n"
