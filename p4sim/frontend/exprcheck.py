"""Expression type checking: typing, implicit casts, constant folding, l-value checks.

Why it exists: every expression the back end sees must carry its exact P4 type, with P4's
implicit conversions made explicit (``Cast`` nodes, sized literals) and compile-time constants
folded, so code generation never needs to re-derive widths. Calls are in ``callcheck.py``.
"""

from __future__ import annotations

from typing import Any

from p4sim.frontend import ast as A
from p4sim.frontend import constfold as CF
from p4sim.frontend.scope import Scope, TypeParam, did_you_mean
from p4sim.frontend.typeresolve import TYPE_DECLS, TypeResolver, type_str

ARITH = ("+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^")
COMPARE = ("<", "<=", ">", ">=")


def is_int(t: A.Type | None) -> bool:
    return isinstance(t, (A.BitT, A.InfIntT))


def is_literal(e: A.Expression) -> bool:
    return isinstance(e, (A.IntLiteral, A.BoolLiteral))


class ExprChecker(TypeResolver):
    """Mixin typing expressions. ``self.call`` (call checking) comes from ``CallChecker``."""

    error_names: list[str]
    program: A.Program

    # ------------------------------------------------------------------ names
    def lookup_value(self, e: A.PathExpr, scope: Scope) -> Any:
        decls = (scope.root() if e.global_scope else scope).lookup(e.name)
        values = [d for d in decls if not isinstance(d, TYPE_DECLS + (TypeParam,))]
        if not values:
            if decls:
                raise self.err(e, f"'{e.name}' is a type, not a value")
            raise self.err(e, f"'{e.name}' is not declared{did_you_mean(e.name, scope.visible())}")
        return values[0]

    @staticmethod
    def value_shadowing_type(name: str, scope: Scope) -> Any:
        """The value declaration (parameter, variable, instance...) that hides a type of the same
        name in ``scope``, if any."""
        found = scope.lookup(name)
        if found and not isinstance(found[0], TYPE_DECLS + (TypeParam,)):
            return found[0]
        return None

    def decl_value_type(self, d: Any, where: Any) -> A.Type:
        if isinstance(d, (A.Param, A.VariableDecl, A.ConstDecl)):
            return d.type
        if isinstance(d, A.Instantiation):
            return d.type
        if isinstance(d, A.TableDecl):
            return A.TableT(d.name, d)
        if isinstance(d, A.ActionDecl):
            return A.ActionT(d.name, d)
        if isinstance(d, A.ValueSetDecl):
            return A.ExternT("value_set", (d.type,), d)
        if isinstance(d, A.ParserState):
            return A.StateT()
        if isinstance(d, (A.FunctionDecl, A.ExternFunctionDecl)):
            raise self.err(where, f"function '{d.name}' must be called")
        raise self.err(where, f"'{getattr(d, 'name', d)}' cannot be used as a value")

    # ------------------------------------------------------------------ constants
    def const_int(self, e: A.Expression, scope: Scope, what: str,
                  target: A.Type | None = None) -> int:
        checked = self.expr(e, scope, target)
        if target is not None:
            checked = self.coerce(checked, target, what)
        if not isinstance(checked, A.IntLiteral):
            raise self.err(e, f"{what} must be a compile-time constant integer")
        return checked.value

    # ------------------------------------------------------------------ coercion
    def coerce(self, e: A.Expression, target: A.Type, what: str) -> A.Expression:
        """Convert ``e`` to ``target`` where P4 converts implicitly, else raise an error."""
        src = e.type
        if src == target or isinstance(target, (A.TypeVarT, A.DontCareT)):
            return e
        if isinstance(e, A.DontCare):
            e.type = target
            return e
        if isinstance(src, A.ExternT) and isinstance(target, A.ExternT) and src.name == target.name and \
                len(src.type_args) == len(target.type_args) and \
                all(t == s or isinstance(t, (A.DontCareT, A.TypeVarT))
                    for s, t in zip(src.type_args, target.type_args, strict=True)):
            return e       # Register<bit<32>, bit<8>> where Register<_, _> is expected (TNA)
        if isinstance(target, A.BitT) and isinstance(src, A.InfIntT):
            if isinstance(e, A.IntLiteral):
                return CF.literal(e.value, target, e.loc)
            return A.Cast(target, e, type=target, loc=e.loc)
        if isinstance(target, A.SerEnumT) and isinstance(src, A.InfIntT) and \
                isinstance(e, A.IntLiteral):
            raise self.err(e, f"{what}: cannot convert an integer to enum {target.name} "
                              f"implicitly; use a cast")
        if isinstance(src, A.SerEnumT) and isinstance(target, A.BitT) and \
                src.underlying == target:
            if isinstance(e, A.IntLiteral):
                return CF.literal(e.value, target, e.loc)
            return A.Cast(target, e, type=target, loc=e.loc)
        if isinstance(e, A.ListExpr) and isinstance(target, (A.StructT, A.HeaderT, A.TupleT)):
            return self.list_to(e, target, what)
        if isinstance(e, A.StructInit) and isinstance(target, (A.StructT, A.HeaderT)):
            return self.struct_init_to(e, target, what)
        if isinstance(e, A.InvalidHeader) and isinstance(target, (A.HeaderT, A.HeaderUnionT)):
            e.type = target
            return e
        if isinstance(src, A.TupleT) and isinstance(target, A.TupleT) and \
                len(src.elements) == len(target.elements) and isinstance(e, A.ListExpr):
            return self.list_to(e, target, what)
        raise self.err(e, f"{what}: cannot convert {type_str(src)} to {type_str(target)}")

    def list_to(self, e: A.ListExpr, target: A.Type, what: str) -> A.Expression:
        if isinstance(target, A.TupleT):
            if len(e.items) != len(target.elements):
                raise self.err(e, f"{what}: expected {len(target.elements)} elements, got "
                                  f"{len(e.items)}")
            e.items = [self.coerce(i, t, what) for i, t in
                       zip(e.items, target.elements, strict=True)]
            e.type = target
            return e
        assert isinstance(target, (A.StructT, A.HeaderT))
        if len(e.items) != len(target.fields):
            raise self.err(e, f"{what}: {type_str(target)} has {len(target.fields)} fields, "
                              f"initializer has {len(e.items)}")
        fields = [(n, self.coerce(i, ft, f"{what}: field '{n}'")) for i, (n, ft) in
                  zip(e.items, target.fields, strict=True)]
        return A.StructInit(fields, type=target, loc=e.loc)

    def struct_init_to(self, e: A.StructInit, target: A.Type, what: str) -> A.Expression:
        assert isinstance(target, (A.StructT, A.HeaderT))
        given = dict(e.fields)
        for n in given:
            if target.field_type(n) is None:
                raise self.err(e, f"{what}: {type_str(target)} has no field '{n}'")
        missing = [n for n, _ in target.fields if n not in given]
        if missing:
            raise self.err(e, f"{what}: initializer for {type_str(target)} lacks field "
                              f"'{missing[0]}'")
        e.fields = [(n, self.coerce(given[n], ft, f"{what}: field '{n}'"))
                    for n, ft in target.fields]
        e.type = target
        return e

    # ------------------------------------------------------------------ l-values
    def check_lvalue(self, e: A.Expression, what: str) -> None:
        base = e
        while isinstance(base, (A.Member, A.Index, A.Slice)):
            if isinstance(base, A.Member) and isinstance(base.expr.type, A.HeaderStackT) and \
                    base.member in ("lastIndex", "size"):
                raise self.err(e, f"{what}: '{base.member}' of a header stack is read-only")
            base = base.expr
        if isinstance(base, A.PathExpr):
            d = base.decl
            if isinstance(d, A.VariableDecl):
                return
            if isinstance(d, A.Param):
                if d.direction in ("out", "inout"):
                    return
                kind = f"'{d.direction}'" if d.direction else "directionless (action data)"
                raise self.err(e, f"{what}: cannot write to parameter '{d.name}', it is {kind}")
            if isinstance(d, A.ConstDecl):
                raise self.err(e, f"{what}: cannot write to constant '{d.name}'")
        if isinstance(e, A.DontCare):
            return
        raise self.err(e, f"{what}: expression is not a left-value")

    # ------------------------------------------------------------------ expressions
    def expr(self, e: A.Expression, scope: Scope, expected: A.Type | None = None) -> A.Expression:
        self.cur_loc = e.loc or self.cur_loc
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise self.unsupported(e, f"expression {type(e).__name__}")
        out = method(e, scope, expected)
        assert out.type is not None, type(e).__name__
        return out

    def _e_IntLiteral(self, e: A.IntLiteral, scope: Scope, exp: A.Type | None) -> A.Expression:
        if e.width is None:
            e.type = A.InfIntT()
            return e
        t = A.BitT(e.width, e.signed)
        if e.signed and e.width < 2 and False:
            raise self.err(e, "int<W> requires W >= 2")
        return CF.literal(e.value, t, e.loc)

    def _e_BoolLiteral(self, e: A.BoolLiteral, scope: Scope, exp: A.Type | None) -> A.Expression:
        e.type = A.BoolT()
        return e

    def _e_StringLiteral(self, e: A.StringLiteral, scope: Scope,
                         exp: A.Type | None) -> A.Expression:
        e.type = A.StringT()
        return e

    def _e_PathExpr(self, e: A.PathExpr, scope: Scope, exp: A.Type | None) -> A.Expression:
        d = self.lookup_value(e, scope)
        e.decl = d
        if isinstance(d, A.ConstDecl):
            v = d.value
            if isinstance(v, A.IntLiteral):
                return A.IntLiteral(v.value, v.width, v.signed, v.base, type=v.type, loc=e.loc)
            if isinstance(v, A.BoolLiteral):
                return A.BoolLiteral(v.value, type=v.type, loc=e.loc)
            if isinstance(v, A.ErrorConst):
                return A.ErrorConst(v.name, type=v.type, loc=e.loc)
            if isinstance(v, A.EnumConst):
                return A.EnumConst(v.enum, v.member, type=v.type, loc=e.loc)
        e.type = self.decl_value_type(d, e)
        return e

    def _e_TypeMember(self, e: A.TypeMember, scope: Scope, exp: A.Type | None) -> A.Expression:
        shadow = self.value_shadowing_type(e.type_name, scope)
        if shadow is not None:
            return self.expr(A.Member(A.PathExpr(e.type_name, loc=e.loc), e.member, loc=e.loc),
                             scope, exp)
        if e.type_name == "error":
            if e.member not in self.error_names:
                raise self.err(e, f"error.{e.member} is not declared"
                                  f"{did_you_mean(e.member, self.error_names)}")
            return A.ErrorConst(e.member, type=A.ErrorT(), loc=e.loc)
        d = self.lookup_type(e.type_name, scope, e)
        t = self._named_type(d, (), scope, e.loc) if not isinstance(d, TypeParam) else d.bound
        if isinstance(t, A.EnumT):
            if e.member not in t.members:
                raise self.err(e, f"enum {t.name} has no member '{e.member}'"
                                  f"{did_you_mean(e.member, t.members)}")
            return A.EnumConst(t.name, e.member, type=t, loc=e.loc)
        if isinstance(t, A.SerEnumT):
            v = t.value_of(e.member)
            if v is None:
                raise self.err(e, f"enum {t.name} has no member '{e.member}'"
                                  f"{did_you_mean(e.member, [m for m, _ in t.members])}")
            return A.IntLiteral(v, t.underlying.width, t.underlying.signed, type=t, loc=e.loc)
        raise self.err(e, f"type {type_str(t)} has no member '{e.member}'")

    def _e_Member(self, e: A.Member, scope: Scope, exp: A.Type | None) -> A.Expression:
        if isinstance(e.expr, A.PathExpr) and not e.expr.global_scope:
            decls = scope.lookup(e.expr.name)
            if decls and isinstance(decls[0], TYPE_DECLS + (TypeParam,)):
                return self.expr(A.TypeMember(e.expr.name, e.member, loc=e.loc), scope, exp)
        e.expr = self.expr(e.expr, scope)
        t = e.expr.type
        if isinstance(t, (A.HeaderT, A.StructT, A.HeaderUnionT)):
            ft = t.field_type(e.member)
            if ft is None:
                raise self.err(e, f"{type_str(t)} has no field '{e.member}'"
                                  f"{did_you_mean(e.member, t.field_names())}")
            e.type = ft
            return e
        if isinstance(t, A.HeaderStackT):
            if e.member in ("next", "last"):
                if e.member == "next" and scope.enclosing("parser") is None:
                    raise self.err(e, "header stack '.next' can only be used in a parser")
                e.type = t.element
                return e
            if e.member == "lastIndex":
                e.type = A.BitT(32)
                return e
            if e.member == "size":
                return A.IntLiteral(t.size, 32, False, type=A.BitT(32), loc=e.loc)
            raise self.err(e, f"header stack has no member '{e.member}'")
        if isinstance(t, A.ApplyResultT):
            if e.member in ("hit", "miss"):
                e.type = A.BoolT()
                return e
            if e.member == "action_run":
                e.type = A.ActionEnumT(t.table, t.decl)
                return e
            raise self.err(e, f"table apply result has no member '{e.member}' "
                              f"(expected hit, miss or action_run)")
        raise self.err(e, f"cannot access member '{e.member}' of {type_str(t)}")

    def _e_Index(self, e: A.Index, scope: Scope, exp: A.Type | None) -> A.Expression:
        e.expr = self.expr(e.expr, scope)
        e.index = self.expr(e.index, scope)
        t = e.expr.type
        if isinstance(t, A.TupleT):
            if not isinstance(e.index, A.IntLiteral):
                raise self.err(e, "tuple index must be a compile-time constant")
            if not 0 <= e.index.value < len(t.elements):
                raise self.err(e, f"tuple index {e.index.value} out of range")
            e.type = t.elements[e.index.value]
            return e
        if not isinstance(t, A.HeaderStackT):
            raise self.err(e, f"cannot index a value of type {type_str(t)}")
        if not is_int(e.index.type):      # p4c also accepts int<W> (a negative one is out of range)
            raise self.err(e.index, f"header stack index must be an integer, not "
                                    f"{type_str(e.index.type)}")
        if isinstance(e.index, A.IntLiteral) and not 0 <= e.index.value < t.size:
            raise self.err(e.index, f"header stack index {e.index.value} out of range "
                                    f"(stack size {t.size})")
        e.type = t.element
        return e

    def _e_Slice(self, e: A.Slice, scope: Scope, exp: A.Type | None) -> A.Expression:
        e.expr = self.expr(e.expr, scope)
        self._no_type_var(e.expr, "[:]")
        hi = self.const_int(e.hi, scope, "slice bound")
        lo = self.const_int(e.lo, scope, "slice bound")
        t = e.expr.type
        if isinstance(t, A.SerEnumT):
            e.expr = self.coerce(e.expr, t.underlying, "slice")
            t = t.underlying
        if not isinstance(t, (A.BitT, A.InfIntT)):
            raise self.err(e, f"cannot slice a value of type {type_str(t)}")
        if lo < 0 or hi < lo:
            raise self.err(e, f"invalid slice [{hi}:{lo}]")
        if isinstance(t, A.BitT) and hi >= t.width:
            raise self.err(e, f"slice [{hi}:{lo}] out of range for {type_str(t)}")
        rt = A.BitT(hi - lo + 1)
        if isinstance(e.expr, A.IntLiteral):
            width = t.width if isinstance(t, A.BitT) else None
            return CF.literal(CF.slice_value(e.expr.value, width, hi, lo), rt, e.loc)
        e.hi = A.IntLiteral(hi, type=A.InfIntT(), loc=e.hi.loc)
        e.lo = A.IntLiteral(lo, type=A.InfIntT(), loc=e.lo.loc)
        e.type = rt
        return e

    def _e_Unary(self, e: A.Unary, scope: Scope, exp: A.Type | None) -> A.Expression:
        e.expr = self.expr(e.expr, scope, exp)
        self._no_type_var(e.expr, e.op)
        t = e.expr.type
        if e.op == "!":
            if not isinstance(t, A.BoolT):
                raise self.err(e, f"'!' needs a bool operand, not {type_str(t)}")
            e.type = t
        elif e.op == "~":
            if not isinstance(t, A.BitT):
                raise self.err(e, f"'~' needs a bit<W> or int<W> operand, not {type_str(t)}")
            e.type = t
        else:
            if not is_int(t):
                raise self.err(e, f"'-' needs an integer operand, not {type_str(t)}")
            e.type = t
        if is_literal(e.expr):
            return CF.literal(CF.unary_op(e.op, e.expr.value, t), t, e.loc)  # type: ignore
        return e

    def _unify_ints(self, e: A.Binary) -> A.Type:
        lt, rt = e.left.type, e.right.type
        if isinstance(lt, A.SerEnumT):
            e.left = self.coerce(e.left, lt.underlying, f"operator {e.op}")
            lt = lt.underlying
        if isinstance(rt, A.SerEnumT):
            e.right = self.coerce(e.right, rt.underlying, f"operator {e.op}")
            rt = rt.underlying
        if not is_int(lt) or not is_int(rt):
            raise self.err(e, f"operator '{e.op}' needs integer operands, got {type_str(lt)} "
                              f"and {type_str(rt)}")
        if isinstance(lt, A.InfIntT) and isinstance(rt, A.BitT):
            e.left = self.coerce(e.left, rt, f"operator {e.op}")
            return rt
        if isinstance(rt, A.InfIntT) and isinstance(lt, A.BitT):
            e.right = self.coerce(e.right, lt, f"operator {e.op}")
            return lt
        if lt != rt:
            raise self.err(e, f"operator '{e.op}': operands have different types "
                              f"{type_str(lt)} and {type_str(rt)}; use a cast")
        return lt

    def _no_type_var(self, e: A.Expression, what: str) -> None:
        """Values of a type variable can be assigned and passed on, nothing else (p4c: "cannot be
        applied to expression 'x' with type 'T'")."""
        tv = getattr(e.type, "type_var", None)
        if tv is not None:
            raise self.err(e, f"{what}: cannot be applied to an expression of type variable '{tv}'")

    def _e_Binary(self, e: A.Binary, scope: Scope, exp: A.Type | None) -> A.Expression:
        op = e.op
        sub_exp = exp if op in ARITH else None
        e.left = self.expr(e.left, scope, sub_exp)
        e.right = self.expr(e.right, scope, sub_exp)
        self._no_type_var(e.left, op)
        self._no_type_var(e.right, op)
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                if not isinstance(side.type, A.BoolT):
                    raise self.err(side, f"operator '{op}' needs bool operands, not "
                                         f"{type_str(side.type)}")
            e.type = A.BoolT()
            if is_literal(e.left) and is_literal(e.right):
                v = (e.left.value and e.right.value) if op == "&&" else \
                    (e.left.value or e.right.value)  # type: ignore[attr-defined]
                return A.BoolLiteral(bool(v), type=A.BoolT(), loc=e.loc)
            return e
        if op in ("==", "!="):
            return self._equality(e)
        if op in ("<<", ">>"):
            return self._shift(e)
        if op == "++":
            return self._concat(e)
        t = self._unify_ints(e)
        if op in ("/", "%") and isinstance(t, A.BitT) and t.signed:
            raise self.unsupported(e, f"operator '{op}' on signed int<{t.width}> values")
        if op in COMPARE:
            e.type = A.BoolT()
        else:
            e.type = t
        if isinstance(e.left, A.IntLiteral) and isinstance(e.right, A.IntLiteral):
            try:
                v = CF.binary_op(op, e.left.value, e.right.value, t)
            except CF.FoldError as fe:
                raise self.err(e, str(fe)) from None
            return CF.literal(v, e.type, e.loc)
        return e

    def _equality(self, e: A.Binary) -> A.Expression:
        lt, rt = e.left.type, e.right.type
        if is_int(lt) or is_int(rt) or isinstance(lt, A.SerEnumT) or isinstance(rt, A.SerEnumT):
            if isinstance(lt, A.SerEnumT) and lt == rt:
                t: A.Type = lt
            else:
                t = self._unify_ints(e)
        else:
            if isinstance(e.right, (A.ListExpr, A.StructInit, A.InvalidHeader)):
                e.right = self.coerce(e.right, lt, "comparison")
            elif isinstance(e.left, (A.ListExpr, A.StructInit, A.InvalidHeader)):
                e.left = self.coerce(e.left, rt, "comparison")
            t = e.left.type
            if e.left.type != e.right.type:
                raise self.err(e, f"cannot compare {type_str(e.left.type)} with "
                                  f"{type_str(e.right.type)}")
            if isinstance(t, (A.ExternT, A.TableT, A.ApplyResultT, A.StringT)):
                raise self.err(e, f"values of type {type_str(t)} cannot be compared")
        e.type = A.BoolT()
        if is_literal(e.left) and is_literal(e.right):
            same = e.left.value == e.right.value  # type: ignore[attr-defined]
            return A.BoolLiteral(same if e.op == "==" else not same, type=A.BoolT(), loc=e.loc)
        if isinstance(e.left, (A.ErrorConst, A.EnumConst)) and \
                isinstance(e.right, (A.ErrorConst, A.EnumConst)):
            same = getattr(e.left, "name", None) == getattr(e.right, "name", None) and \
                getattr(e.left, "member", None) == getattr(e.right, "member", None)
            return A.BoolLiteral(same if e.op == "==" else not same, type=A.BoolT(), loc=e.loc)
        _ = t
        return e

    def _shift(self, e: A.Binary) -> A.Expression:
        lt, rt = e.left.type, e.right.type
        if isinstance(lt, A.SerEnumT):
            e.left = self.coerce(e.left, lt.underlying, "shift")
            lt = lt.underlying
        if not is_int(lt):
            raise self.err(e, f"cannot shift a value of type {type_str(lt)}")
        if not is_int(rt) or (isinstance(rt, A.BitT) and rt.signed):
            raise self.err(e.right, f"shift amount must be an unsigned integer, not "
                                    f"{type_str(rt)}")
        if isinstance(e.right, A.IntLiteral) and e.right.value < 0:
            raise self.err(e.right, "shift amount must not be negative")
        if isinstance(lt, A.InfIntT) and not isinstance(e.right, A.IntLiteral):
            raise self.err(e, "shift of an unsized constant by a non-constant amount: give "
                              "the constant a width")
        e.type = lt
        if isinstance(e.left, A.IntLiteral) and isinstance(e.right, A.IntLiteral):
            return CF.literal(CF.binary_op(e.op, e.left.value, e.right.value, lt), lt, e.loc)
        return e

    def _concat(self, e: A.Binary) -> A.Expression:
        lt, rt = e.left.type, e.right.type
        for side, t in ((e.left, lt), (e.right, rt)):
            if isinstance(t, A.InfIntT):
                raise self.err(side, "'++' needs sized operands; give the constant a width "
                                     "(e.g. 8w1)")
        if isinstance(lt, A.SerEnumT):
            e.left, lt = self.coerce(e.left, lt.underlying, "++"), lt.underlying
        if isinstance(rt, A.SerEnumT):
            e.right, rt = self.coerce(e.right, rt.underlying, "++"), rt.underlying
        if not isinstance(lt, A.BitT) or not isinstance(rt, A.BitT):
            raise self.err(e, f"'++' needs bit<W>/int<W> operands, got {type_str(lt)} and "
                              f"{type_str(rt)}")
        if lt.signed and not rt.signed:
            # p4c (1.2.5) refuses int<W> ++ bit<W2> ("Cannot unify type bit<W2> with int<..>");
            # p4sim follows it so a program is valid on both or on neither (docs/p4sim.md)
            raise self.err(e.right, f"'++': a signed left operand ({type_str(lt)}) needs a signed right "
                                    f"operand, got {type_str(rt)}; cast it, e.g. (int<{rt.width}>)")
        e.type = A.BitT(lt.width + rt.width, lt.signed)
        if isinstance(e.left, A.IntLiteral) and isinstance(e.right, A.IntLiteral):
            v = CF.binary_op("++", e.left.value, e.right.value, lt, rt.width)
            return CF.literal(v, e.type, e.loc)
        return e

    def _e_Cast(self, e: A.Cast, scope: Scope, exp: A.Type | None) -> A.Expression:
        target = self.resolve_type(e.target, scope, e)
        e.target = target
        inner = self.expr(e.expr, scope, target)
        self._no_type_var(inner, "cast")
        src = inner.type
        ok = False
        if isinstance(target, A.BitT):
            ok = isinstance(src, (A.BitT, A.InfIntT)) or (
                isinstance(src, A.BoolT) and target.width == 1 and not target.signed) or \
                isinstance(src, A.SerEnumT)
            if isinstance(src, A.BitT) and src.signed != target.signed and \
                    src.width != target.width:
                ok = False
        elif isinstance(target, A.BoolT):
            ok = isinstance(src, A.BoolT) or (isinstance(src, A.BitT) and src.width == 1 and
                                              not src.signed) or (
                isinstance(inner, A.IntLiteral) and inner.value in (0, 1))
        elif isinstance(target, A.SerEnumT):
            ok = isinstance(src, (A.BitT, A.InfIntT, A.SerEnumT))
        elif isinstance(target, (A.StructT, A.HeaderT, A.TupleT)):
            if isinstance(inner, (A.ListExpr, A.StructInit)) or src == target:
                return self.coerce(inner, target, "cast")
        elif src == target:
            ok = True
        if not ok:
            raise self.err(e, f"cannot cast {type_str(src)} to {type_str(target)}")
        e.expr = inner
        e.type = target
        if src == target:
            return inner
        if is_literal(inner):
            return CF.literal(CF.cast_value(inner.value, src, target), target,  # type: ignore
                              e.loc)
        return e

    def _e_Conditional(self, e: A.Conditional, scope: Scope,
                       exp: A.Type | None) -> A.Expression:
        e.cond = self.expr(e.cond, scope, A.BoolT())
        if not isinstance(e.cond.type, A.BoolT):
            raise self.err(e.cond, f"condition must be bool, not {type_str(e.cond.type)}")
        e.then = self.expr(e.then, scope, exp)
        e.else_ = self.expr(e.else_, scope, exp)
        a, b = e.then.type, e.else_.type
        if isinstance(a, A.InfIntT) and not isinstance(b, A.InfIntT):
            e.then = self.coerce(e.then, b, "conditional expression")  # type: ignore[arg-type]
        elif isinstance(b, A.InfIntT) and not isinstance(a, A.InfIntT):
            e.else_ = self.coerce(e.else_, a, "conditional expression")  # type: ignore[arg-type]
        elif isinstance(a, A.InfIntT) and isinstance(b, A.InfIntT) and \
                not isinstance(e.cond, A.BoolLiteral):
            if isinstance(exp, A.BitT):
                e.then = self.coerce(e.then, exp, "conditional expression")
                e.else_ = self.coerce(e.else_, exp, "conditional expression")
            else:
                raise self.err(e, "conditional expression with unsized constant branches: "
                                  "give the constants a width")
        if e.then.type != e.else_.type:
            raise self.err(e, f"conditional branches have different types "
                              f"{type_str(e.then.type)} and {type_str(e.else_.type)}")
        e.type = e.then.type
        if isinstance(e.cond, A.BoolLiteral):
            return e.then if e.cond.value else e.else_
        return e

    def _e_ListExpr(self, e: A.ListExpr, scope: Scope, exp: A.Type | None) -> A.Expression:
        if isinstance(exp, (A.StructT, A.HeaderT)) and len(e.items) == len(exp.fields):
            items = [self.expr(i, scope, ft) for i, (_, ft) in zip(e.items, exp.fields,
                                                                    strict=True)]
            e.items = items
            e.type = A.TupleT(tuple(i.type for i in items))  # type: ignore[misc]
            return self.list_to(e, exp, "initializer")
        if isinstance(exp, A.TupleT) and len(e.items) == len(exp.elements):
            e.items = [self.coerce(self.expr(i, scope, t), t, "tuple element")
                       for i, t in zip(e.items, exp.elements, strict=True)]
        else:
            e.items = [self.expr(i, scope) for i in e.items]
        e.type = A.TupleT(tuple(i.type for i in e.items))  # type: ignore[misc]
        return e

    def _e_StructInit(self, e: A.StructInit, scope: Scope, exp: A.Type | None) -> A.Expression:
        if not isinstance(exp, (A.StructT, A.HeaderT)):
            raise self.err(e, "a { field = value } initializer needs a struct or header "
                              "type from its context")
        fields = []
        for n, v in e.fields:
            ft = exp.field_type(n)
            fields.append((n, self.expr(v, scope, ft)))
        e.fields = fields
        return self.struct_init_to(e, exp, "initializer")

    def _e_InvalidHeader(self, e: A.InvalidHeader, scope: Scope,
                         exp: A.Type | None) -> A.Expression:
        if not isinstance(exp, (A.HeaderT, A.HeaderUnionT)):
            raise self.err(e, "'{#}' needs a header type from its context")
        e.type = exp
        return e

    def _e_DontCare(self, e: A.DontCare, scope: Scope, exp: A.Type | None) -> A.Expression:
        e.type = exp if exp is not None else A.DontCareT()
        return e

    def _e_DefaultExpr(self, e: A.DefaultExpr, scope: Scope,
                       exp: A.Type | None) -> A.Expression:
        e.type = exp if exp is not None else A.DontCareT()
        return e

    def _e_ErrorConst(self, e: A.Expression, scope: Scope, exp: A.Type | None) -> A.Expression:
        e.type = A.ErrorT()
        return e

    def _e_Mask(self, e: A.Mask, scope: Scope, exp: A.Type | None) -> A.Expression:
        raise self.err(e, "'&&&' is only allowed in select cases and table entries")

    def _e_Range(self, e: A.Range, scope: Scope, exp: A.Type | None) -> A.Expression:
        raise self.err(e, "'..' is only allowed in select cases and table entries")

    def _e_MethodCall(self, e: A.MethodCall, scope: Scope, exp: A.Type | None) -> A.Expression:
        return self.call(e, scope, exp)  # type: ignore[attr-defined]

    def _e_TypeExpr(self, e: A.TypeExpr, scope: Scope, exp: A.Type | None) -> A.Expression:
        e.of = self.resolve_type(e.of, scope, e)
        e.type = e.of
        return e
