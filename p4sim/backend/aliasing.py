"""When a call must copy an aggregate argument in and out instead of passing it by reference.

P4_16 passes every argument by copy-in/copy-out (spec 6.8): the callee works on copies, and
``out``/``inout`` copies are written back left to right when it returns (or exits). Generated
code passes headers and structs by reference because copying them on every call is costly; that
is only observable when the callee can reach the same storage another way -- another argument
of the same call overlapping it (``c.apply(hdr.h.a, hdr)``), or an action reading or writing the
caller's variable directly while it also has it as a parameter. ``aggregate_copies`` finds
those arguments, so only they pay for real copies.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from p4sim.frontend import ast

AGGREGATES = (ast.HeaderT, ast.StructT, ast.HeaderUnionT, ast.HeaderStackT)
ANY_INDEX = "*"


def lvalue_path(e: Any) -> tuple | None:
    """The storage ``e`` names as a path from its root declaration (None for a non-lvalue)."""
    if isinstance(e, ast.PathExpr):
        return (id(e.decl),) if e.decl is not None else None
    if isinstance(e, ast.Member):
        base = lvalue_path(e.expr)
        return None if base is None else base + (e.member,)
    if isinstance(e, ast.Index):
        base = lvalue_path(e.expr)
        if base is None:
            return None
        idx = e.index.value if isinstance(e.index, ast.IntLiteral) else ANY_INDEX
        return base + (idx,)
    if isinstance(e, ast.Slice):
        return lvalue_path(e.expr)
    return None


def overlap(a: tuple, b: tuple) -> bool:
    """Whether two storage paths share bits (one contains the other)."""
    return all(x == y or ANY_INDEX in (x, y) for x, y in zip(a, b, strict=False))


def referenced_roots(decl: Any, seen: set[int] | None = None) -> set[int]:
    """Ids of the declarations an action's body names, through the actions it calls."""
    seen = set() if seen is None else seen
    if id(decl) in seen:
        return set()
    seen.add(id(decl))
    out: set[int] = set()

    def visit(node: Any) -> None:
        if isinstance(node, ast.PathExpr) and node.decl is not None:
            out.add(id(node.decl))
        if isinstance(node, ast.MethodCall) and node.kind == "action" and node.decl is not None:
            out.update(referenced_roots(node.decl, seen))
        if isinstance(node, list | tuple):
            for item in node:
                visit(item)
        elif dataclasses.is_dataclass(node) and isinstance(node, ast.Node):
            for f in dataclasses.fields(node):
                if f.name not in ("type", "decl", "loc", "annotations", "params"):
                    visit(getattr(node, f.name, None))

    visit(getattr(decl, "body", None))
    return out


def aggregate_copies(params: list[Any], args: list[Any], callee_roots: set[int] | frozenset = frozenset()) -> set[int]:
    """Indices of aggregate arguments that need a real copy-in (and copy-out when ``out``/``inout``)."""
    paths = [lvalue_path(a) if a is not None else None for a in args]
    need: set[int] = set()
    for i, (p, a) in enumerate(zip(params, args, strict=False)):
        if a is None or paths[i] is None or not isinstance(p.type, AGGREGATES):
            continue
        if paths[i][0] in callee_roots:
            need.add(i)
            continue
        for j, q in enumerate(params[:len(args)]):
            if j != i and paths[j] is not None and "out" in (p.direction + q.direction) \
                    and overlap(paths[i], paths[j]):
                need.add(i)
                break
    return need
