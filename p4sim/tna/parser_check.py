"""Whether a TNA parser begins by extracting the intrinsic metadata the chip puts in front of
every packet (a compile-time look at its start state).

Why it exists: the egress parser's packet starts with ``egress_intrinsic_metadata_t`` (what the
traffic manager measured). Most programs extract it first ("a mandatory state, required by Tofino
Architecture" in the TNA templates), but Intel's own examples (open-p4studio ``EmptyEgressParser``
in p4_16_programs/common/util.p4) extract nothing, and their egress is meant to leave the packet
as it was: that metadata never reaches the wire. p4sim used to send it out as packet bytes; the
code generator now makes such a parser's payload start after it (``p4sim.tna.codegen``), and this
check lets every parser that does extract it first skip that extra step.
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
    first = _first_read(parser, parser.state("start"), set())
    return first is not None and first.method == "extract" and bool(first.args) and \
        getattr(first.args[0].type, "name", None) == intrinsic


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
