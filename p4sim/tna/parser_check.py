"""Compile-time looks at a TNA parser's start state: does it begin by extracting the intrinsic
metadata the chip puts in front of every packet, and which of its first stores are no-ops.

Why it exists: the egress parser's packet starts with ``egress_intrinsic_metadata_t`` (what the
traffic manager measured). Most programs extract it first ("a mandatory state, required by Tofino
Architecture" in the TNA templates), but Intel's own examples (open-p4studio ``EmptyEgressParser``
in p4_16_programs/common/util.p4) extract nothing, and their egress is meant to leave the packet
as it was: that metadata never reaches the wire. p4sim used to send it out as packet bytes; the
code generator now makes such a parser's payload start after it (``p4sim.tna.codegen``), and this
check lets every parser that does extract it first skip that extra step, and names that first
extract (TnaPath may hand the parser the header already filled, ``_PREFILL_egress``).

``fresh_default_stores``: TNA parsers zero their metadata first (``md = {0, 0, ...}``, twice per
packet in p4src/tofino/dlcp.p4, 26 stores); the objects come fresh from ``_FRESH_<pipe>()``,
already holding those defaults, so such stores before anything else writes the struct are
no-ops the generated code leaves out (issue 15: the TNA path's per-packet cost).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import Any

from p4sim.frontend import ast

# links to other declarations: not part of a statement's own syntax tree
_LINKS = frozenset({"decl", "state", "target", "params", "type", "annotations"})


def extracts_first(parser: ast.ParserDecl, intrinsic: str) -> bool:
    """Whether the first packet read reached from ``parser``'s start state (through sub-parser
    applies and plain transitions) is ``pkt.extract`` of an ``intrinsic`` header."""
    return first_extract(parser, intrinsic) is not None


def first_extract(parser: ast.ParserDecl, intrinsic: str) -> ast.MethodCall | None:
    """That first ``pkt.extract`` call of an ``intrinsic`` header (None: the parser reads
    something else first, or nothing)."""
    first = _first_read(parser, parser.state("start"), set())
    if first is not None and first.method == "extract" and first.args and \
            getattr(first.args[0].type, "name", None) == intrinsic:
        return first
    return None


def fresh_default_stores(parser: ast.ParserDecl) -> set[int]:
    """Ids of the start state's assignments of literals to ``out`` struct parameters (a whole
    ``{...}`` or one field) made before any other statement names what they write: each field
    still holds its default then. Empty when a transition leads back to ``start``."""
    start = parser.state("start")
    if start is None or any(_targets(s, "start") for s in parser.states):
        return set()
    params = {id(p) for p in parser.params if p.direction == "out" and isinstance(p.type, ast.StructT)}
    written: dict[int, set[str] | None] = {}        # param -> fields named so far (None: all of it)
    out: set[int] = set()
    for stmt in start.stmts:
        target = _literal_store(stmt, params)
        if target is not None:
            decl, field = target
            named = written.get(decl, set())
            if named is not None and (field is None and not named or field is not None and field not in named):
                out.add(id(stmt))
            _name(written, decl, field)
            continue
        for decl, field in _references(stmt, params):
            _name(written, decl, field)
    return out


def _name(written: dict[int, set[str] | None], decl: int, field: str | None) -> None:
    if field is None:
        written[decl] = None
    elif written.get(decl, set()) is not None:
        written.setdefault(decl, set()).add(field)


def _literal_store(stmt: Any, params: set[int]) -> tuple[int, str | None] | None:
    """(param, field or None for the whole struct) of ``p = {literals}`` / ``p.f = literal``."""
    if not isinstance(stmt, ast.AssignStmt) or stmt.compound:
        return None
    lhs, rhs = stmt.lhs, stmt.rhs
    literal = (ast.IntLiteral, ast.BoolLiteral)
    if isinstance(lhs, ast.PathExpr) and id(lhs.decl) in params and isinstance(rhs, ast.StructInit) \
            and all(isinstance(e, literal) for _, e in rhs.fields):
        return id(lhs.decl), None
    if isinstance(lhs, ast.Member) and isinstance(lhs.expr, ast.PathExpr) and id(lhs.expr.decl) in params \
            and isinstance(rhs, literal):
        return id(lhs.expr.decl), lhs.member
    return None


def _references(node: Any, params: set[int]) -> Iterator[tuple[int, str | None]]:
    """(param, field or None) for every use of a parameter in ``node``'s syntax tree."""
    if isinstance(node, list):
        for item in node:
            yield from _references(item, params)
        return
    if isinstance(node, ast.Member) and isinstance(node.expr, ast.PathExpr) and id(node.expr.decl) in params:
        yield id(node.expr.decl), node.member
        return
    if isinstance(node, ast.PathExpr) and id(node.decl) in params:
        yield id(node.decl), None
        return
    if isinstance(node, ast.Node):
        for f in fields(node):
            if f.name not in _LINKS and f.name != "loc":
                yield from _references(getattr(node, f.name), params)


def _targets(state: ast.ParserState, name: str) -> bool:
    tr = state.transition
    if tr is None:
        return False
    if tr.select is None:
        return tr.next_state == name
    return any(getattr(c, "next_state", None) == name for c in tr.select.cases)


def _first_read(parser: ast.ParserDecl, state: ast.ParserState | None, seen: set[int]) -> ast.MethodCall | None:
    """The first ``packet_in`` method call run from ``state`` on (None: a select comes first)."""
    while state is not None and id(state) not in seen and state.transition is not None:
        seen.add(id(state))
        for stmt in state.stmts:
            for call in _calls(stmt):
                if call.kind == "extern_method" and getattr(call.target.type, "name", None) == "packet_in":
                    return call
                if call.kind == "parser_apply" and isinstance(call.decl, ast.ParserDecl):
                    inner = _first_read(call.decl, call.decl.state("start"), seen)
                    if inner is not None:
                        return inner
        if state.transition.select is not None:
            return None
        state = parser.state(state.transition.next_state)
    return None


def _calls(node: Any) -> Iterator[ast.MethodCall]:
    """Method calls in ``node``'s own syntax tree, arguments before the call that uses them."""
    if isinstance(node, list):
        for item in node:
            yield from _calls(item)
        return
    if not isinstance(node, ast.Node):
        return
    for f in fields(node):
        if f.name not in _LINKS and f.name != "loc":
            yield from _calls(getattr(node, f.name))
    if isinstance(node, ast.MethodCall):
        yield node
