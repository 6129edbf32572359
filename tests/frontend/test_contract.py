"""The AST contract (top of ``p4sim/frontend/ast.py``) holds on whole checked programs: every
expression is typed, every name resolved, no parse-only placeholder survives."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from p4sim.frontend import ast as A
from p4sim.frontend import load_program

from .conftest import PROGRAMS

PLACEHOLDERS = (A.TypeName, A.SpecializedTypeName, A.BitTypeExpr, A.VarbitTypeExpr,
                A.StackTypeExpr)
CORPUS = Path(__file__).resolve().parent.parent / "stf" / "corpus"
# back references, annotation bodies (not checked) and the callee expression of a call
# (``MethodCall.func`` is not a value; ``target``/``decl`` describe the callee)
BACK_REFS = {"decl", "state", "params", "implementation", "counters", "meters",
             "main", "main_blocks", "ctor", "annotations", "func"}


def _types_in(t: A.Type):
    yield t
    if isinstance(t, A.TupleT):
        for e in t.elements:
            yield from _types_in(e)
    elif isinstance(t, A.HeaderStackT):
        yield from _types_in(t.element)
    elif isinstance(t, A.ExternT):
        for e in t.type_args:
            yield from _types_in(e)
    elif isinstance(t, (A.HeaderT, A.StructT, A.HeaderUnionT)):
        for _, ft in t.fields:
            yield from _types_in(ft)


def _walk(node, seen, problems, where="program"):
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, A.Expression):
        if node.type is None:
            problems.append(f"untyped {type(node).__name__} at {node.loc}")
        if isinstance(node, A.TypeMember):
            problems.append(f"TypeMember survived at {node.loc}")
        if isinstance(node, A.PathExpr) and node.decl is None:
            problems.append(f"unresolved name {node.name} at {node.loc}")
        if isinstance(node, A.MethodCall) and node.kind not in A.METHOD_CALL_KINDS:
            problems.append(f"call without kind at {node.loc}")
    if isinstance(node, A.ActionRef) and not isinstance(node.decl, A.ActionDecl):
        problems.append(f"action ref {node.name} unresolved at {node.loc}")
    for f in dataclasses.fields(node):
        if f.name in BACK_REFS:
            continue
        value = getattr(node, f.name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, tuple):
                item = item[-1]
            if isinstance(item, A.Type):
                for t in _types_in(item):
                    if isinstance(t, PLACEHOLDERS):
                        problems.append(f"placeholder {type(t).__name__} in {type(node).__name__}"
                                        f".{f.name} at {node.loc}")
            elif isinstance(item, A.Node):
                _walk(item, seen, problems)


def _programs():
    paths = sorted(PROGRAMS.glob("*.p4"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.glob("*.p4"))
    return paths


@pytest.mark.parametrize("path", _programs(), ids=lambda p: p.stem)
def test_checked_program_satisfies_the_contract(path):
    prog = load_program(str(path))
    problems: list[str] = []
    seen: set[int] = set()
    for d in prog.decls:
        if isinstance(d, (A.ExternDecl, A.ExternFunctionDecl, A.ParserTypeDecl,
                          A.ControlTypeDecl, A.PackageTypeDecl)):
            continue  # generic prototypes legitimately keep type variables
        if isinstance(d, (A.FunctionDecl, A.ControlDecl, A.ParserDecl)) and d.type_params:
            for spec in d.specs.values():   # a generic function is checked per specialisation
                _walk(spec, seen, problems)
            continue
        _walk(d, seen, problems)
    assert not problems, problems[:10]
    assert prog.arch == "v1model" and len(prog.main_blocks) == 6
