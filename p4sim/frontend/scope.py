"""Lexical scopes for the P4 type checker.

Why it exists: P4 names live in nested scopes (program, parser/control, action, block, parser
state). A name may be overloaded by arity (extern functions such as ``log_msg``, extern
methods such as ``extract``), so each scope maps a name to a list of declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4sim.frontend import ast as A


@dataclass(eq=False)
class TypeParam:
    """A type parameter visible in a scope; ``bound`` is its type (a ``TypeVarT`` if unbound)."""

    name: str
    bound: A.Type


@dataclass(eq=False)
class Scope:
    parent: Scope | None = None
    kind: str = "block"  # program | parser | control | action | function | block | state
    names: dict[str, list[Any]] = field(default_factory=dict)

    def add(self, name: str, decl: Any) -> list[Any]:
        """Add ``decl``; returns the declarations already bound to ``name`` in *this* scope."""
        existing = self.names.setdefault(name, [])
        previous = list(existing)
        existing.append(decl)
        return previous

    def lookup(self, name: str) -> list[Any]:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return []

    def root(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def child(self, kind: str = "block") -> Scope:
        return Scope(self, kind)

    def enclosing(self, *kinds: str) -> Scope | None:
        scope: Scope | None = self
        while scope is not None:
            if scope.kind in kinds:
                return scope
            scope = scope.parent
        return None


def is_overloadable(decl: Any) -> bool:
    return isinstance(decl, (A.ExternFunctionDecl, A.MethodDecl))
