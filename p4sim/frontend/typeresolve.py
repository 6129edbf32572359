"""Type resolution, substitution and unification for the P4 type checker.

Why it exists: the parser leaves type references as names (``TypeName``, ``bit<(W)>``,
``H[4]``); this mixin turns them into the semantic types of ``ast.py`` (following typedefs,
building header/struct field lists, folding widths and stack sizes) and implements the small
amount of generic typing P4 needs for extern calls (substitute type variables, unify a parameter
type with an argument type).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from p4sim.errors import P4CompileError, P4UnsupportedError, SourceLocation
from p4sim.frontend import ast as A
from p4sim.frontend.scope import Scope, TypeParam, did_you_mean
from p4sim.frontend.transform import MAX_WIDTH

MAX_STACK_SIZE = 65536    # every packet allocates the whole stack: a bound against memory bombs

TYPE_DECLS = (A.HeaderDecl, A.HeaderUnionDecl, A.StructDecl, A.EnumDecl, A.TypedefDecl,
              A.ExternDecl, A.ParserTypeDecl, A.ControlTypeDecl, A.PackageTypeDecl,
              A.ParserDecl, A.ControlDecl)


def type_str(t: A.Type | None) -> str:
    """P4 spelling of a type, for messages."""
    if t is None:
        return "<unknown>"
    if isinstance(t, A.BitT):
        return f"{'int' if t.signed else 'bit'}<{t.width}>"
    if isinstance(t, A.BoolT):
        return "bool"
    if isinstance(t, A.InfIntT):
        return "int"
    if isinstance(t, A.VarbitT):
        return f"varbit<{t.max_width}>"
    if isinstance(t, A.StringT):
        return "string"
    if isinstance(t, A.VoidT):
        return "void"
    if isinstance(t, A.ErrorT):
        return "error"
    if isinstance(t, A.MatchKindT):
        return "match_kind"
    if isinstance(t, A.HeaderStackT):
        return f"{type_str(t.element)}[{t.size}]"
    if isinstance(t, A.TupleT):
        return f"tuple<{', '.join(type_str(e) for e in t.elements)}>"
    if isinstance(t, A.ExternT) and t.type_args:
        return f"{t.name}<{', '.join(type_str(e) for e in t.type_args)}>"
    if isinstance(t, A.ApplyResultT):
        return f"{t.table}.apply() result"
    if isinstance(t, A.ActionEnumT):
        return f"{t.table}.action_run"
    if isinstance(t, A.TableT):
        return f"table {t.name}"
    if isinstance(t, A.TypeVarT):
        return t.name
    if isinstance(t, A.DontCareT):
        return "_"
    name = getattr(t, "name", None)
    return name if isinstance(name, str) else type(t).__name__


def has_typevars(t: A.Type) -> bool:
    if isinstance(t, A.TypeVarT):
        return True
    if isinstance(t, A.TupleT):
        return any(has_typevars(e) for e in t.elements)
    if isinstance(t, A.HeaderStackT):
        return has_typevars(t.element)
    if isinstance(t, A.ExternT):
        return any(has_typevars(e) for e in t.type_args)
    return False


def substitute(t: A.Type, subst: dict[str, A.Type]) -> A.Type:
    if isinstance(t, A.TypeVarT):
        return subst.get(t.name, t)
    if isinstance(t, A.TupleT):
        return A.TupleT(tuple(substitute(e, subst) for e in t.elements))
    if isinstance(t, A.HeaderStackT):
        return A.HeaderStackT(substitute(t.element, subst), t.size)
    if isinstance(t, A.ExternT) and t.type_args:
        return A.ExternT(t.name, tuple(substitute(e, subst) for e in t.type_args), t.decl)
    return t


def unify(param: A.Type, arg: A.Type | None, subst: dict[str, A.Type]) -> None:
    """Bind type variables of ``param`` so that it matches ``arg`` (first binding wins, except
    that a binding to ``int`` is replaced by a sized type)."""
    if arg is None:
        return
    if isinstance(param, A.TypeVarT):
        cur = subst.get(param.name)
        if cur is None or isinstance(cur, (A.InfIntT, A.DontCareT)):
            if not isinstance(arg, A.DontCareT):
                subst[param.name] = arg
        return
    if isinstance(param, A.TupleT) and isinstance(arg, A.TupleT) and \
            len(param.elements) == len(arg.elements):
        for p, a in zip(param.elements, arg.elements, strict=True):
            unify(p, a, subst)
    elif isinstance(param, A.HeaderStackT) and isinstance(arg, A.HeaderStackT):
        unify(param.element, arg.element, subst)
    elif isinstance(param, A.ExternT) and isinstance(arg, A.ExternT):
        for p, a in zip(param.type_args, arg.type_args, strict=False):
            unify(p, a, subst)


class TypeResolver:
    """Mixin: ``resolve_type`` and helpers. Needs ``self.const_int``, ``self.lookup``."""

    _agg_cache: dict[int, A.Type]

    # errors -----------------------------------------------------------------------------
    @staticmethod
    def err(where: Any, msg: str) -> P4CompileError:
        loc = where if isinstance(where, SourceLocation) or where is None else getattr(
            where, "loc", None)
        return P4CompileError(loc, msg)

    @staticmethod
    def unsupported(where: Any, feature: str) -> P4UnsupportedError:
        loc = where if isinstance(where, SourceLocation) or where is None else getattr(
            where, "loc", None)
        return P4UnsupportedError(loc, feature)

    # lookup -----------------------------------------------------------------------------
    def lookup_type(self, name: str, scope: Scope, where: Any) -> Any:
        for d in scope.lookup(name):
            if isinstance(d, TypeParam) or isinstance(d, TYPE_DECLS):
                return d
        if scope.lookup(name):
            raise self.err(where, f"'{name}' is not a type")
        raise self.err(where, f"unknown type '{name}'{did_you_mean(name, scope.visible())}")

    # resolution -------------------------------------------------------------------------
    def resolve_type(self, t: A.Type, scope: Scope, where: Any = None) -> A.Type:
        loc = getattr(t, "loc", None) or (where.loc if hasattr(where, "loc") else where)
        if isinstance(t, A.TypeName):
            return self._named_type(self.lookup_type(t.name, scope, loc), (), scope, loc)
        if isinstance(t, A.SpecializedTypeName):
            args = tuple(self.resolve_type(a, scope, loc) for a in t.args)
            return self._named_type(self.lookup_type(t.name, scope, loc), args, scope, loc)
        if isinstance(t, A.BitTypeExpr):
            w = self.const_int(t.width, scope, "type width")
            if w <= 0:
                raise self.err(loc, f"invalid type width {w}: must be positive")
            if w > MAX_WIDTH:
                raise self.err(loc, f"{'int' if t.signed else 'bit'}<{w}>: widths up to {MAX_WIDTH} are "
                                    f"supported (as p4c)")
            return A.BitT(w, t.signed)
        if isinstance(t, A.VarbitTypeExpr):
            w = self.const_int(t.width, scope, "varbit width")
            if w <= 0:
                raise self.err(loc, f"invalid varbit width {w}: must be positive")
            if w > MAX_WIDTH:
                raise self.err(loc, f"varbit<{w}>: widths up to {MAX_WIDTH} are supported (as p4c)")
            return A.VarbitT(w)
        if isinstance(t, A.StackTypeExpr):
            elem = self.resolve_type(t.element, scope, loc)
            size = self.const_int(t.size, scope, "header stack size")
            if size <= 0:
                raise self.err(loc, f"invalid header stack size {size}: must be positive")
            if size > MAX_STACK_SIZE:
                raise self.unsupported(loc, f"header stack size {size} (at most {MAX_STACK_SIZE})")
            if not isinstance(elem, (A.HeaderT, A.HeaderUnionT, A.TypeVarT)):
                raise self.err(loc, f"header stack element must be a header or header_union, "
                                    f"not {type_str(elem)}")
            return A.HeaderStackT(elem, size)
        if isinstance(t, A.TupleT):
            return A.TupleT(tuple(self.resolve_type(e, scope, loc) for e in t.elements))
        return t

    def _named_type(self, d: Any, args: tuple[A.Type, ...], scope: Scope, loc: Any) -> A.Type:
        if isinstance(d, TypeParam):
            bound = d.bound
            if isinstance(bound, A.TypeVarT) or bound.type_var is not None:
                return bound
            return dataclasses.replace(bound, type_var=d.name)
        if isinstance(d, A.TypedefDecl):
            if args:
                raise self.err(loc, f"type '{d.name}' is not generic")
            return self.typedef_type(d)
        if isinstance(d, (A.HeaderDecl, A.HeaderUnionDecl, A.StructDecl, A.EnumDecl)):
            if args:
                raise self.unsupported(loc, f"generic type '{d.name}'")
            return self.aggregate_type(d)
        if isinstance(d, A.ExternDecl):
            if len(args) > len(d.type_params):
                raise self.err(loc, f"extern '{d.name}' takes {len(d.type_params)} type "
                                    f"argument(s), got {len(args)}")
            return A.ExternT(d.name, args, d)
        if isinstance(d, (A.ParserTypeDecl, A.ParserDecl)):
            return A.ParserT(d.name, d)
        if isinstance(d, (A.ControlTypeDecl, A.ControlDecl)):
            return A.ControlT(d.name, d)
        if isinstance(d, A.PackageTypeDecl):
            return A.PackageT(d.name, d)
        raise self.err(loc, f"'{getattr(d, 'name', d)}' is not a type")

    def typedef_type(self, d: A.TypedefDecl) -> A.Type:
        key = id(d)
        if key not in self._agg_cache:
            self._agg_cache[key] = self.resolve_type(d.type, self.global_scope, d)
            d.type = self._agg_cache[key]
        return self._agg_cache[key]

    def aggregate_type(self, d: Any) -> A.Type:
        """The semantic type of a header/union/struct/enum declaration (cached per decl)."""
        key = id(d)
        if key in self._agg_cache:
            return self._agg_cache[key]
        if isinstance(d, A.EnumDecl):
            t = self._enum_type(d)
        else:
            fields: list[tuple[str, A.Type]] = []
            seen: set[str] = set()
            for f in d.fields:
                if f.name in seen:
                    raise self.err(f, f"duplicate field '{f.name}' in '{d.name}'")
                seen.add(f.name)
                ft = self.resolve_type(f.type, self.global_scope, f)
                f.type = ft
                self._check_field_type(d, f, ft)
                fields.append((f.name, ft))
            cls = {A.HeaderDecl: A.HeaderT, A.HeaderUnionDecl: A.HeaderUnionT,
                   A.StructDecl: A.StructT}[type(d)]
            t = cls(d.name, tuple(fields), d)
            if isinstance(d, (A.HeaderDecl, A.StructDecl)):
                try:
                    d.width = A.type_width(t)
                except ValueError:
                    d.width = None
        self._agg_cache[key] = t
        return t

    def _check_field_type(self, d: Any, f: A.Field, ft: A.Type) -> None:
        if isinstance(d, A.HeaderDecl):
            if isinstance(ft, A.VarbitT):
                if sum(isinstance(x.type, A.VarbitT) for x in d.fields) > 1:
                    raise self.err(f, f"header '{d.name}' has more than one varbit field")
                return
            if not isinstance(ft, (A.BitT, A.BoolT, A.SerEnumT)) and not (
                    isinstance(ft, A.StructT) and self._flat_bits(ft)):
                raise self.err(f, f"field '{f.name}' of header '{d.name}' has type "
                                  f"{type_str(ft)}; header fields must be bit<W>, int<W>, "
                                  f"bool, varbit or a serializable enum")
        elif isinstance(d, A.HeaderUnionDecl):
            if not isinstance(ft, A.HeaderT):
                raise self.err(f, f"field '{f.name}' of header_union '{d.name}' must be a "
                                  f"header, not {type_str(ft)}")
        elif isinstance(ft, (A.VoidT, A.InfIntT, A.StringT)):
            raise self.err(f, f"field '{f.name}' of struct '{d.name}' cannot have type "
                              f"{type_str(ft)}")

    def _flat_bits(self, t: A.StructT) -> bool:
        return all(isinstance(ft, (A.BitT, A.BoolT, A.SerEnumT)) or
                   (isinstance(ft, A.StructT) and self._flat_bits(ft)) for _, ft in t.fields)

    def _enum_type(self, d: A.EnumDecl) -> A.Type:
        names = [m.name for m in d.members]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise self.err(d, f"duplicate member '{sorted(dup)[0]}' in enum '{d.name}'")
        if d.underlying is None:
            return A.EnumT(d.name, tuple(names), d)
        under = self.resolve_type(d.underlying, self.global_scope, d)
        if not isinstance(under, A.BitT):
            raise self.err(d, f"enum '{d.name}': underlying type must be bit<W> or int<W>, "
                              f"not {type_str(under)}")
        d.underlying = under
        members = []
        for m in d.members:
            if m.value is None:
                raise self.err(m, f"enum '{d.name}': member '{m.name}' needs a value")
            v = self.const_int(m.value, self.global_scope, f"value of {d.name}.{m.name}",
                               target=under)
            m.value = A.IntLiteral(v, under.width, under.signed, type=under, loc=m.value.loc)
            members.append((m.name, v))
        return A.SerEnumT(d.name, under, tuple(members), d)

    # stubs provided by the expression checker
    global_scope: Scope

    def const_int(self, e: A.Expression, scope: Scope, what: str,
                  target: A.Type | None = None) -> int:  # pragma: no cover - overridden
        raise NotImplementedError
