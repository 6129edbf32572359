"""Type checking of calls: actions, functions, extern functions/methods, builtins, apply.

Why it exists: calls are where P4's typing is richest -- overloads by arity, named and optional
arguments, parameter directions (``out``/``inout`` need l-values), generic externs whose type
arguments are given or inferred (``pkt.extract(hdr.ipv4)`` binds ``T = ipv4_t``), header and
stack builtins, ``t.apply()`` and its ``hit``/``miss``/``action_run`` results. The checked
``MethodCall`` carries everything the back end needs (see ``ast.MethodCall``).
"""

from __future__ import annotations

import copy
from typing import Any

from p4sim.frontend import ast as A
from p4sim.frontend.exprcheck import ExprChecker, is_int
from p4sim.frontend.scope import Scope, TypeParam, did_you_mean
from p4sim.frontend.typeresolve import has_typevars, substitute, type_str, unify

HEADER_BUILTINS = {"isValid": 0, "setValid": 0, "setInvalid": 0}
STACK_BUILTINS = {"push_front": 1, "pop_front": 1}
SIZE_BUILTINS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


def _has_infint(t: A.Type | None) -> bool:
    if isinstance(t, A.InfIntT):
        return True
    if isinstance(t, A.TupleT):
        return any(_has_infint(e) for e in t.elements)
    return False


def _unsized_arg(params: list[A.Param], typed: list[A.Expression | None],
                 tp: str) -> A.Expression | None:
    """The unsized constant argument that bound type parameter ``tp`` to ``int``."""
    for p, e in zip(params, typed, strict=True):
        if e is None:
            continue
        if p.type == A.TypeVarT(tp):
            if isinstance(e.type, A.InfIntT):
                return e
            if isinstance(e, A.ListExpr):
                for item in e.items:
                    if isinstance(item.type, A.InfIntT):
                        return item
    return None


def _fits(params: list[A.Param], args: list[A.Argument]) -> bool:
    if any(a.name for a in args):
        names = {p.name for p in params}
        if not all(a.name in names for a in args if a.name):
            return False
        given = {a.name for a in args if a.name}
        positional = [a for a in args if not a.name]
        rest = params[len(positional):]
        return all(p.name in given or p.default is not None or p.optional for p in rest)
    required = sum(1 for p in params if p.default is None and not p.optional)
    return required <= len(args) <= len(params)


class CallChecker(ExprChecker):
    """Mixin: ``call`` checks a ``MethodCall`` and returns it with everything resolved."""

    def call(self, mc: A.MethodCall, scope: Scope, expected: A.Type | None) -> A.Expression:
        f = mc.func
        args: list[A.Argument] = mc.args
        if isinstance(f, A.TypeExpr):
            return self._constructor_call(mc, scope)
        if isinstance(f, A.PathExpr):
            decls = (scope.root() if f.global_scope else scope).lookup(f.name)
            if not decls:
                raise self.err(f, f"'{f.name}' is not declared"
                                  f"{did_you_mean(f.name, scope.visible())}")
            callables = [d for d in decls if isinstance(
                d, (A.ActionDecl, A.FunctionDecl, A.ExternFunctionDecl))]
            if not callables:
                raise self.err(f, f"'{f.name}' is not a function or action")
            decl = self._pick(callables, args, mc, f.name)
            f.decl = decl
            mc.decl = decl
            mc.method = decl.name
            if isinstance(decl, A.ActionDecl):
                mc.kind = "action"
                return self._bind(mc, scope, decl.params, {}, A.VoidT(), [])
            if isinstance(decl, A.FunctionDecl):
                mc.kind = "function"
                if decl.type_params:
                    out = self._bind(mc, scope, decl.params, {}, decl.return_type, decl.type_params)
                    mc.decl = self.specialise_function(decl, mc)
                    return out
                return self._bind(mc, scope, decl.params, {}, decl.return_type, [])
            mc.kind = "extern_function"
            out = self._bind(mc, scope, decl.params, {}, decl.return_type, decl.type_params)
            self.check_extern_function_call(mc)  # type: ignore[attr-defined]
            return out
        if isinstance(f, A.TypeMember):
            return self._type_member_call(mc, f, scope)
        if not isinstance(f, A.Member):
            raise self.err(mc, "expression is not callable")
        name = f.member
        # `Type.minSizeInBits()` etc.
        if isinstance(f.expr, A.PathExpr) and name in SIZE_BUILTINS:
            found = scope.lookup(f.expr.name)
            if found and not isinstance(found[0], (A.Param, A.VariableDecl)):
                t = self.resolve_type(A.TypeName(f.expr.name, loc=f.expr.loc), scope, f)
                return self._size_builtin(mc, t, name)
        target = self.expr(f.expr, scope)
        f.expr = target
        mc.target = target
        mc.method = name
        t = target.type
        if isinstance(t, A.ExternT):
            decl = t.decl
            if isinstance(decl, A.ValueSetDecl) or decl is None:
                raise self.err(f, f"{type_str(t)} has no method '{name}'")
            methods = decl.find_methods(name)
            if not methods:
                names = [m.name for m in decl.methods if not m.is_constructor]
                raise self.err(f, f"extern {t.name} has no method '{name}'"
                                  f"{did_you_mean(name, names)}")
            m = self._pick(methods, args, mc, f"{t.name}.{name}")
            mc.kind = "extern_method"
            mc.decl = m
            subst = {p: a for p, a in zip(decl.type_params, t.type_args, strict=False)}
            out = self._bind(mc, scope, m.params, subst, m.return_type or A.VoidT(),
                             m.type_params)
            if isinstance(target, A.PathExpr) and isinstance(target.decl, A.Instantiation):
                self._refine_instance_type(target.decl, mc)
            return out
        if isinstance(t, (A.HeaderT, A.HeaderUnionT)) and name in HEADER_BUILTINS:
            if isinstance(t, A.HeaderUnionT) and name != "isValid":
                raise self.err(f, f"header_union has no method '{name}'")
            if args:
                raise self.err(mc, f"{name}() takes no arguments")
            if name != "isValid":
                self.check_lvalue(target, f"{name}()")
            mc.kind, mc.args, mc.params = "builtin", [], []
            mc.type = A.BoolT() if name == "isValid" else A.VoidT()
            return mc
        if isinstance(t, A.HeaderStackT) and name in STACK_BUILTINS:
            if len(args) != 1 or args[0].name:
                raise self.err(mc, f"{name}() takes one argument (the count)")
            count = self.const_int(args[0].value, scope, f"{name}() count")
            if count < 0:
                raise self.err(mc, f"{name}() count must not be negative")
            self.check_lvalue(target, f"{name}()")
            mc.kind, mc.params = "builtin", []
            mc.args = [A.IntLiteral(count, type=A.InfIntT(), loc=args[0].loc)]
            mc.type = A.VoidT()
            return mc
        if name in SIZE_BUILTINS and isinstance(t, (A.HeaderT, A.StructT, A.BitT)):
            return self._size_builtin(mc, t, name)
        if isinstance(t, A.TableT) and name == "apply":
            if args:
                raise self.err(mc, "table apply() takes no arguments")
            mc.kind, mc.decl, mc.args, mc.params = "table_apply", t.decl, [], []
            mc.type = A.ApplyResultT(t.name, t.decl)
            self.note_table_apply(t.decl, mc)  # type: ignore[attr-defined]
            return mc
        if isinstance(t, (A.ParserT, A.ControlT)) and name == "apply":
            decl = t.decl     # a *TypeDecl when applying a constructor parameter
            if not isinstance(decl, (A.ParserDecl, A.ControlDecl, A.ParserTypeDecl, A.ControlTypeDecl)):
                raise self.err(mc, f"cannot apply {type_str(t)}")
            is_parser = isinstance(decl, (A.ParserDecl, A.ParserTypeDecl))
            if is_parser and scope.enclosing("parser") is None:
                raise self.err(mc, "a parser can only be applied from a parser state")
            mc.kind = "parser_apply" if is_parser else "control_apply"
            mc.decl = decl
            return self._bind(mc, scope, decl.params, {}, A.VoidT(), [])
        raise self.err(f, f"{type_str(t)} has no method '{name}'")

    def specialise_function(self, decl: A.FunctionDecl, mc: A.MethodCall) -> A.FunctionDecl:
        """The copy of generic function ``decl`` checked with the call's type arguments (one
        per distinct argument list, shared by the calls that use it)."""
        subst = getattr(mc, "_subst", {})
        args = [subst.get(tp) for tp in decl.type_params]
        if any(a is None or has_typevars(a) for a in args):
            raise self.err(mc, f"cannot infer the type arguments of '{decl.name}'; give them "
                               f"(e.g. {decl.name}<bit<8>>(...))")
        key = tuple(type_str(a) for a in args)
        spec = decl.specs.get(key)  # type: ignore[attr-defined]
        if spec is None:
            spec = copy.deepcopy(decl.template)  # type: ignore[attr-defined]
            spec.type_params = []
            inner = decl.decl_scope.child("generic")  # type: ignore[attr-defined]
            for tp, a in zip(decl.type_params, args, strict=True):
                inner.add(tp, TypeParam(tp, a))
            decl.specs[key] = spec  # type: ignore[attr-defined]
            saved = self.cur_loc
            self.function_decl(spec, inner)  # type: ignore[attr-defined]
            self.cur_loc = saved
        return spec

    def _type_member_call(self, mc: A.MethodCall, f: A.TypeMember,
                          scope: Scope) -> A.Expression:
        """``T.minSizeInBits()`` on a type, or direct application ``MyControl.apply(...)``."""
        if self.value_shadowing_type(f.type_name, scope) is not None:
            mc.func = A.Member(A.PathExpr(f.type_name, loc=f.loc), f.member, loc=f.loc)
            return self.call(mc, scope, None)
        if f.type_name == "error":
            raise self.err(mc, "expression is not callable")
        t = self.resolve_type(A.TypeName(f.type_name, loc=f.loc), scope, f)
        if f.member in SIZE_BUILTINS:
            return self._size_builtin(mc, t, f.member)
        decl = getattr(t, "decl", None)
        if f.member == "apply" and isinstance(decl, (A.ControlDecl, A.ParserDecl)):
            # Direct application: an implicit instance local to the enclosing block.
            owner_scope = scope.enclosing("control", "parser")
            owner = getattr(owner_scope, "control", None) or getattr(owner_scope, "parser", None)
            if owner is None:
                raise self.err(mc, f"'{decl.name}.apply()' is only allowed inside a control or "
                                   f"parser")
            inst = A.Instantiation(f"{decl.name}_inst_{len(owner.locals)}", t, [],
                                   loc=mc.loc)
            inst.decl = decl
            # p4c names the implicit instance after the type (`I.Sub.st` in P4Info); a second
            # direct application of the same type here (p4c refuses: conflicting names) keeps
            # its unique name
            named = {a.args[0].value for loc_decl in owner.locals if isinstance(loc_decl, A.Instantiation)
                     for a in loc_decl.annotations if a.name == "name" and a.args
                     and isinstance(a.args[0], A.StringLiteral)}
            if decl.name not in named:
                inst.annotations.append(A.Annotation("name", [A.StringLiteral(decl.name, loc=mc.loc)],
                                                     f'"{decl.name}"', loc=mc.loc))
            owner.locals.append(inst)
            assert owner_scope is not None
            owner_scope.add(inst.name, inst)
            path = A.PathExpr(inst.name, type=t, loc=f.loc)
            path.decl = inst
            mc.func = A.Member(path, "apply", loc=f.loc)
            return self.call(mc, scope, None)
        raise self.err(mc, f"type {type_str(t)} has no method '{f.member}'")

    # ------------------------------------------------------------------ helpers
    def _pick(self, decls: list[Any], args: list[A.Argument], mc: A.MethodCall,
              what: str) -> Any:
        fitting = [d for d in decls if _fits(d.params, args)]
        if not fitting and any(a.name for a in args):
            names = {p.name for d in decls for p in d.params}
            bad = next((a for a in args if a.name and a.name not in names), None)
            if bad is not None:
                raise self.err(bad, f"'{what}' has no parameter named '{bad.name}'")
        if not fitting:
            counts = sorted({len(d.params) for d in decls})
            want = " or ".join(str(c) for c in counts)
            raise self.err(mc, f"'{what}' expects {want} argument(s), got {len(args)}")
        if len(fitting) > 1:
            exact = [d for d in fitting if len(d.params) == len(args)]
            if exact:
                return exact[0]
        return fitting[0]

    def _size_builtin(self, mc: A.MethodCall, t: A.Type, name: str) -> A.Expression:
        try:
            if name.startswith("min") and isinstance(t, A.HeaderT):
                bits = sum(A.type_width(ft) for _, ft in t.fields
                           if not isinstance(ft, A.VarbitT))
            else:
                bits = A.type_width(t)
        except ValueError:
            raise self.err(mc, f"{name}() is not defined for {type_str(t)}") from None
        value = bits if name.endswith("Bits") else (bits + 7) // 8
        return A.IntLiteral(value, type=A.InfIntT(), loc=mc.loc)

    def _constructor_call(self, mc: A.MethodCall, scope: Scope) -> A.Expression:
        te: A.TypeExpr = mc.func  # type: ignore[assignment]
        t = self.resolve_type(te.of, scope, mc)
        te.of = t
        te.type = t
        decl = getattr(t, "decl", None)
        mc.kind = "constructor"
        mc.decl = decl
        mc.type = t
        if isinstance(decl, (A.ParserDecl, A.ControlDecl)):
            if mc.args or decl.ctor_params:
                # `MyIngress(5)` as a package argument: an instance with its constructor arguments
                inst = A.Instantiation(decl.name, t, mc.args, loc=mc.loc)
                inst.decl = decl
                self.ctor_args(inst, scope)  # type: ignore[attr-defined]
                mc.instance = inst
                mc.args = list(inst.args)
            mc.params = []
            return mc
        if isinstance(decl, A.ExternDecl):
            ctor = self._pick(decl.constructors(), mc.args, mc, decl.name)
            subst = {p: a for p, a in zip(decl.type_params, t.type_args, strict=False)}
            return self._bind(mc, scope, ctor.params, subst, t, [])
        raise self.err(mc, f"cannot construct {type_str(t)} here")

    def _refine_instance_type(self, inst: A.Instantiation, mc: A.MethodCall) -> None:
        """Record extern type arguments inferred from a method call (``counter<I>``)."""
        t = inst.type
        if not isinstance(t, A.ExternT) or t.decl is None:
            return
        decl: A.ExternDecl = t.decl
        if len(t.type_args) >= len(decl.type_params):
            return
        bound = getattr(mc, "_subst", {})
        args = list(t.type_args)
        for tp in decl.type_params[len(args):]:
            if tp in bound and not isinstance(bound[tp], (A.TypeVarT, A.InfIntT, A.DontCareT)):
                args.append(bound[tp])
            else:
                return
        inst.type = A.ExternT(t.name, tuple(args), decl)

    def _bind(self, mc: A.MethodCall, scope: Scope, params: list[A.Param],
              subst: dict[str, A.Type], ret: A.Type, type_params: list[str]) -> A.Expression:
        """Match arguments to ``params``, infer type variables, coerce, check directions."""
        if mc.type_args:
            if len(mc.type_args) != len(type_params):
                raise self.err(mc, f"'{mc.method}' takes {len(type_params)} type argument(s), "
                                   f"got {len(mc.type_args)}")
            for tp, ta in zip(type_params, mc.type_args, strict=True):
                subst[tp] = self.resolve_type(ta, scope, mc)
        # order the arguments by parameter
        slots: list[A.Argument | None] = [None] * len(params)
        pos = 0
        for a in mc.args:
            if a.name:
                idx = next((i for i, p in enumerate(params) if p.name == a.name), None)
                if idx is None:
                    raise self.err(a, f"'{mc.method}' has no parameter named '{a.name}'")
                if slots[idx] is not None:
                    raise self.err(a, f"parameter '{a.name}' given twice")
                slots[idx] = a
            else:
                if pos >= len(params):
                    raise self.err(a, f"too many arguments to '{mc.method}'")
                slots[pos] = a
                pos += 1
        # pass 1: type the arguments, inferring type variables
        typed: list[A.Expression | None] = []
        for p, a in zip(params, slots, strict=True):
            if a is None:
                if p.default is None and not p.optional:
                    raise self.err(mc, f"missing argument for parameter '{p.name}' of "
                                       f"'{mc.method}'")
                typed.append(None)
                continue
            pt = substitute(p.type, subst)
            exp = None if has_typevars(pt) else pt
            if isinstance(a.value, A.DontCare):
                if p.direction != "out":
                    raise self.err(a, f"'_' can only be passed to an 'out' parameter, "
                                      f"'{p.name}' is {p.direction or 'directionless'}")
                a.value.type = exp or A.DontCareT()
                typed.append(a.value)
                continue
            e = self.expr(a.value, scope, exp)
            unify(p.type if not has_typevars(pt) else pt, e.type, subst)
            typed.append(e)
        # pass 2: coerce to the (now substituted) parameter types, check directions
        final: list[A.Expression | None] = []
        new_params: list[A.Param] = []
        for p, e in zip(params, typed, strict=True):
            pt = substitute(p.type, subst)
            np = A.Param(p.name, p.direction, pt, p.default, annotations=p.annotations, loc=p.loc)
            new_params.append(np)
            if e is None:
                # an omitted defaulted argument takes the (checked) default; @optional -> None
                final.append(p.default if p.default is not None else None)
                continue
            what = f"argument '{p.name}' of '{mc.method}'"
            if isinstance(e, A.DontCare):
                e.type = pt
                final.append(e)
                continue
            if not has_typevars(pt):
                if p.direction in ("out", "inout"):
                    if e.type != pt:
                        raise self.err(e, f"{what}: expected {type_str(pt)}, got "
                                          f"{type_str(e.type)} (an '{p.direction}' argument "
                                          f"must have exactly the parameter's type)")
                else:
                    e = self.coerce(e, pt, what)
            if p.direction in ("out", "inout"):
                self.check_lvalue(e, what)
            final.append(e)
        mc.args = final
        mc.params = new_params
        for tp in type_params:
            if _has_infint(subst.get(tp)):
                culprit = _unsized_arg(params, typed, tp) or mc
                text = f"'{culprit.value}' " if isinstance(culprit, A.IntLiteral) else ""
                raise self.err(culprit, f"could not infer a width for the unsized constant "
                                        f"{text}(type parameter '{tp}' of '{mc.method}'); give "
                                        f"it one, e.g. 16w0 or (bit<16>)0, as p4c requires")
        mc.type_args = [subst.get(tp, A.DontCareT()) for tp in type_params]
        mc._subst = subst  # type: ignore[attr-defined]
        rt = substitute(ret, subst)
        if has_typevars(rt):
            raise self.err(mc, f"cannot infer the return type of '{mc.method}'; give its "
                               f"type arguments (e.g. {mc.method}<bit<8>>(...))")
        mc.type = rt
        return mc

    @staticmethod
    def is_int_type(t: A.Type | None) -> bool:
        return is_int(t)
