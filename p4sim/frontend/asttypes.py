"""Semantic types of the P4 AST (re-exported by ``p4sim.frontend.ast``, import them from there).

Why it exists: keeps the type vocabulary -- resolved types such as ``BitT``/``HeaderT``/``ExternT``
and the parse-only placeholders the checker replaces -- separate from the syntax nodes, so
``ast.py`` stays readable. Types are frozen dataclasses that compare structurally (aggregates by
name and fields; the ``decl`` back-reference is excluded from comparison).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4sim.errors import SourceLocation


# --------------------------------------------------------------------------- semantic types
@dataclass(frozen=True)
class Type:
    """Base of resolved (semantic) types. ``type_var`` names the type parameter a type was
    written as inside a generic declaration (the bound type stands in for it in each
    specialisation): values of a type variable can only be moved, never operated on (P4_16, p4c)."""

    type_var: str | None = field(default=None, compare=False, hash=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class BitT(Type):
    width: int
    signed: bool = False


@dataclass(frozen=True)
class BoolT(Type):
    pass


@dataclass(frozen=True)
class InfIntT(Type):
    """The type of an unsized integer constant."""


@dataclass(frozen=True)
class VarbitT(Type):
    max_width: int


@dataclass(frozen=True)
class StringT(Type):
    pass


@dataclass(frozen=True)
class VoidT(Type):
    pass


@dataclass(frozen=True)
class DontCareT(Type):
    """The type of ``_`` before the checker knows its context."""


@dataclass(frozen=True)
class ErrorT(Type):
    pass


@dataclass(frozen=True)
class MatchKindT(Type):
    pass


@dataclass(frozen=True)
class TypeVarT(Type):
    """A type parameter of a generic extern/method/parser type (only in declarations)."""

    name: str


@dataclass(frozen=True)
class _Aggregate(Type):
    name: str
    fields: tuple[tuple[str, Type], ...]
    decl: Any = field(default=None, compare=False, repr=False, hash=False)

    def field_type(self, name: str) -> Type | None:
        for fname, ftype in self.fields:
            if fname == name:
                return ftype
        return None

    def field_names(self) -> list[str]:
        return [f for f, _ in self.fields]


@dataclass(frozen=True)
class HeaderT(_Aggregate):
    pass


@dataclass(frozen=True)
class HeaderUnionT(_Aggregate):
    pass


@dataclass(frozen=True)
class StructT(_Aggregate):
    pass


@dataclass(frozen=True)
class HeaderStackT(Type):
    element: Type
    size: int


@dataclass(frozen=True)
class EnumT(Type):
    name: str
    members: tuple[str, ...]
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class SerEnumT(Type):
    name: str
    underlying: BitT
    members: tuple[tuple[str, int], ...]
    decl: Any = field(default=None, compare=False, repr=False, hash=False)

    def value_of(self, member: str) -> int | None:
        for m, v in self.members:
            if m == member:
                return v
        return None


@dataclass(frozen=True)
class TupleT(Type):
    elements: tuple[Type, ...]


@dataclass(frozen=True)
class ExternT(Type):
    name: str
    type_args: tuple[Type, ...] = ()
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class ParserT(Type):
    """A parser type declaration or a parser declaration, used as a type."""

    name: str
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class ControlT(Type):
    name: str
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class PackageT(Type):
    name: str
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class TableT(Type):
    """The type of a table name (only ``.apply()`` can be done with it)."""

    name: str
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class ApplyResultT(Type):
    """The result of ``t.apply()``: members ``hit``, ``miss`` (bool), ``action_run``."""

    table: str
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class ActionEnumT(Type):
    """The type of ``t.apply().action_run``."""

    table: str
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class ActionT(Type):
    """The type of an action name (used in table properties, switch labels)."""

    name: str
    decl: Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class StateT(Type):
    """The type of a parser state name."""


# ---- parse-only type placeholders (replaced by the checker)
@dataclass(frozen=True)
class TypeName(Type):
    name: str
    loc: SourceLocation | None = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class SpecializedTypeName(Type):
    """``name<T1, T2>`` as written (e.g. ``register<bit<32>>``)."""

    name: str
    args: tuple[Type, ...]
    loc: SourceLocation | None = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class BitTypeExpr(Type):
    """``bit<(expr)>`` / ``int<(expr)>`` with a non-literal width."""

    width: Any  # Expression
    signed: bool = False
    loc: SourceLocation | None = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class VarbitTypeExpr(Type):
    width: Any  # Expression
    loc: SourceLocation | None = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class StackTypeExpr(Type):
    element: Type
    size: Any  # Expression
    loc: SourceLocation | None = field(default=None, compare=False, repr=False, hash=False)


def type_width(t: Type) -> int:
    """Width in bits of a fixed-size type (header/struct summed; varbit at its maximum)."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, VarbitT):
        return t.max_width
    if isinstance(t, SerEnumT):
        return t.underlying.width
    if isinstance(t, (HeaderT, StructT)):
        return sum(type_width(ft) for _, ft in t.fields)
    if isinstance(t, HeaderUnionT):
        return max((type_width(ft) for _, ft in t.fields), default=0)
    if isinstance(t, HeaderStackT):
        return type_width(t.element) * t.size
    if isinstance(t, TupleT):
        return sum(type_width(e) for e in t.elements)
    raise ValueError(f"type {t} has no bit width")
