"""Lexical scopes for the P4 type checker.

Why it exists: P4 names live in nested scopes (program, parser/control, action, block, parser
state). A name may be overloaded by arity (extern functions such as ``log_msg``, extern
methods such as ``extract``), so each scope maps a name to a list of declarations.
"""

from __future__ import annotations

import difflib
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

    def visible(self) -> list[str]:
        """Every name visible from this scope (for "did you mean" hints)."""
        names: list[str] = []
        scope: Scope | None = self
        while scope is not None:
            names.extend(scope.names)
            scope = scope.parent
        return names

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


def did_you_mean(name: str, candidates: Any) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


def is_overloadable(decl: Any) -> bool:
    return isinstance(decl, (A.ExternFunctionDecl, A.MethodDecl))
