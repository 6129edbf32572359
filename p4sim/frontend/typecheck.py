"""The P4 type checker: resolves names and types of a parsed program and validates it.

Why it exists: the back end needs a program where every name points at its declaration, every
expression has its exact type and constants are folded (see the contract at the top of
``ast.py``). This module walks declarations, parsers, controls, tables and statements; the
expression and call rules live in ``exprcheck.py``/``callcheck.py`` and the v1model load checks
in ``v1check.py``. Errors are ``file:line:col: error: ...``; constructs outside p4sim's subset
are ``file:line:col: unsupported: ...``; any unexpected failure becomes an internal error with
the location being checked, never a traceback.
"""

from __future__ import annotations

import copy
from typing import Any

from p4sim.errors import P4CompileError, SourceLocation
from p4sim.frontend import ast as A
from p4sim.frontend.callcheck import CallChecker
from p4sim.frontend.scope import Scope, TypeParam, did_you_mean, is_overloadable
from p4sim.frontend.tablecheck import TableChecker
from p4sim.frontend.typeresolve import type_str
from p4sim.frontend.v1check import V1ModelChecks

# externs a control/parser may take as a constructor argument (shared with the caller)
CTOR_EXTERNS = ("counter", "meter", "register")


class Checker(TableChecker, V1ModelChecks, CallChecker):
    """Checks one program; use ``check_program``."""

    def __init__(self, program: A.Program) -> None:
        self.program = program
        self.global_scope = Scope(None, "program")
        self._agg_cache: dict[int, A.Type] = {}
        self.error_names: list[str] = []
        self.match_kinds: list[str] = []
        self.cur_loc: SourceLocation | None = program.loc
        self.applied_tables: dict[int, int] = {}

    # ------------------------------------------------------------------ declarations
    def declare(self, scope: Scope, name: str, decl: Any) -> None:
        previous = scope.add(name, decl)
        if previous:
            if is_overloadable(decl) and all(is_overloadable(p) for p in previous):
                if any(len(p.params) == len(decl.params) for p in previous):
                    raise self.err(decl, f"'{name}' is already declared with "
                                         f"{len(decl.params)} parameter(s)")
                return
            first = previous[0]
            where = f" (first declared at {first.loc})" if getattr(first, "loc", None) else ""
            raise self.err(decl, f"'{name}' is already declared{where}")

    def check(self, require_main: bool = True) -> A.Program:
        for d in self.program.decls:
            self.cur_loc = d.loc or self.cur_loc
            self.top_decl(d)
        self.program.errors = list(self.error_names)
        self.program.match_kinds = list(self.match_kinds)
        self.check_main(require_main)
        return self.program

    def top_decl(self, d: A.Declaration) -> None:
        scope = self.global_scope
        if isinstance(d, A.ErrorDecl):
            for m in d.members:
                if m in self.error_names:
                    raise self.err(d, f"error.{m} is already declared")
                self.error_names.append(m)
            return
        if isinstance(d, A.MatchKindDecl):
            for m in d.members:
                if m in self.match_kinds:
                    raise self.err(d, f"match_kind '{m}' is already declared")
                self.match_kinds.append(m)
            return
        if isinstance(d, A.ExternFunctionDecl) and d.name == "static_assert":
            self.declare(scope, d.name, d)
            self.check_signature(d, scope)
            return
        self.declare(scope, d.name, d)
        if isinstance(d, A.TypedefDecl):
            self.typedef_type(d)
        elif isinstance(d, (A.HeaderDecl, A.HeaderUnionDecl, A.StructDecl, A.EnumDecl)):
            self.aggregate_type(d)
        elif isinstance(d, A.ConstDecl):
            self.const_decl(d, scope)
        elif isinstance(d, A.ExternDecl):
            self.extern_decl(d)
        elif isinstance(d, (A.ExternFunctionDecl, A.ParserTypeDecl, A.ControlTypeDecl,
                            A.PackageTypeDecl)):
            self.check_signature(d, scope)
        elif isinstance(d, A.ActionDecl):
            self.action_decl(d, scope)
        elif isinstance(d, A.FunctionDecl):
            self.function_decl(d, scope)
        elif isinstance(d, A.ParserDecl):
            self.parser_decl(d)
        elif isinstance(d, A.ControlDecl):
            self.control_decl(d)
        elif isinstance(d, A.Instantiation):
            self.instantiation(d, scope)
            if isinstance(d.decl, (A.ParserDecl, A.ControlDecl)):
                # P4_16: parsers and controls are instantiated inside parsers/controls or as
                # package arguments, never at the top level (p4c: "cannot instantiate at top-level")
                raise self.err(d, f"{d.name}: cannot instantiate a "
                                  f"{'parser' if isinstance(d.decl, A.ParserDecl) else 'control'} at top-level")
        else:
            raise self.unsupported(d, f"top-level {type(d).__name__}")

    def type_param_scope(self, scope: Scope, names: list[str]) -> Scope:
        if not names:
            return scope
        inner = scope.child("generic")
        for n in names:
            inner.add(n, TypeParam(n, A.TypeVarT(n)))
        return inner

    def params(self, params: list[A.Param], scope: Scope, what: str) -> None:
        seen: set[str] = set()
        for p in params:
            if p.name in seen:
                raise self.err(p, f"duplicate parameter '{p.name}' in {what}")
            seen.add(p.name)
            p.type = self.resolve_type(p.type, scope, p)
            if isinstance(p.type, A.VoidT):
                raise self.err(p, f"parameter '{p.name}' cannot have type void")
            if p.direction and isinstance(p.type, (A.ExternT, A.ParserT, A.ControlT, A.PackageT)):
                raise self.err(p, f"parameter '{p.name}' of type {type_str(p.type)} cannot have a direction "
                                  f"('{p.direction}'): extern, parser and control values are passed directionless")
            if p.default is not None:
                p.default = self.coerce(self.expr(p.default, scope, p.type), p.type,
                                        f"default value of '{p.name}'")

    def check_signature(self, d: Any, scope: Scope) -> None:
        inner = self.type_param_scope(scope, d.type_params)
        self.params(d.params, inner, f"'{d.name}'")
        if hasattr(d, "return_type") and d.return_type is not None:
            d.return_type = self.resolve_type(d.return_type, inner, d)

    def extern_decl(self, d: A.ExternDecl) -> None:
        inner = self.type_param_scope(self.global_scope, d.type_params)
        for m in d.methods:
            if m.is_constructor and m.name != d.name:
                raise self.err(m, f"constructor '{m.name}' does not match extern '{d.name}'")
            mscope = self.type_param_scope(inner, m.type_params)
            self.params(m.params, mscope, f"'{d.name}.{m.name}'")
            if m.return_type is not None:
                m.return_type = self.resolve_type(m.return_type, mscope, m)

    def const_decl(self, d: A.ConstDecl, scope: Scope) -> None:
        d.type = self.resolve_type(d.type, scope, d)
        value = self.coerce(self.expr(d.value, scope, d.type), d.type, f"constant '{d.name}'")
        if isinstance(value, A.MethodCall) and value.kind == "extern_function" and \
                getattr(value.decl, "name", None) == "static_assert":
            value = A.BoolLiteral(True, type=A.BoolT(), loc=value.loc)   # checked when typed
        if not isinstance(value, (A.IntLiteral, A.BoolLiteral, A.ErrorConst, A.EnumConst,
                                  A.StructInit, A.ListExpr, A.StringLiteral)):
            raise self.err(d.value, f"value of constant '{d.name}' is not a compile-time "
                                    f"constant")
        d.value = value

    def var_decl(self, d: A.VariableDecl, scope: Scope) -> None:
        d.type = self.resolve_type(d.type, scope, d)
        if isinstance(d.type, (A.VoidT, A.InfIntT, A.StringT)):
            raise self.err(d, f"variable '{d.name}' cannot have type {type_str(d.type)}")
        if d.init is not None:
            d.init = self.coerce(self.expr(d.init, scope, d.type), d.type,
                                 f"initializer of '{d.name}'")

    def instantiation(self, d: A.Instantiation, scope: Scope) -> None:
        written = d.type
        t = self.resolve_type(d.type, scope, d)
        d.type = t
        decl = getattr(t, "decl", None)
        if isinstance(decl, (A.ParserDecl, A.ControlDecl)) and decl.type_params:
            decl = self.specialise_block(decl, written, scope, d)
            t = A.ParserT(decl.name, decl) if isinstance(decl, A.ParserDecl) else A.ControlT(decl.name, decl)
            d.type = t
        d.decl = decl
        if isinstance(decl, A.ExternDecl):
            mc = A.MethodCall(A.TypeExpr(t, loc=d.loc), [], d.args, loc=d.loc)
            mc.method = decl.name
            ctors = decl.constructors()
            if not ctors:
                raise self.err(d, f"extern '{decl.name}' has no constructor")
            ctor = self._pick(ctors, d.args, mc, decl.name)
            subst = {p: a for p, a in zip(decl.type_params, t.type_args, strict=False)}
            self._bind(mc, scope, ctor.params, subst, A.VoidT(), [])
            d.args = mc.args
            d.ctor = ctor
            self.object_initializer(d, decl, scope)
            self.check_instantiation(d)  # v1model load checks
        elif isinstance(decl, (A.ParserDecl, A.ControlDecl)):
            self._refuse_self_instantiation(d, decl, scope)
            self.ctor_args(d, scope)
        elif isinstance(decl, A.PackageTypeDecl):
            if scope.kind != "program":
                raise self.err(d, "packages can only be instantiated at the top level")
            self.package_args(d, scope)
        else:
            raise self.err(d, f"cannot instantiate {type_str(t)}")

    def object_initializer(self, d: A.Instantiation, decl: A.ExternDecl, scope: Scope) -> None:
        """``Ext(args) name = { methods };``: the bodies of the extern's abstract methods (TNA's
        RegisterAction.apply), checked as functions in the scope of the instantiation."""
        abstract = {m.name: m for m in decl.methods if m.is_abstract}
        given = getattr(d, "initializer", None)
        if given is None:
            if abstract:
                raise self.err(d, f"instance '{d.name}' of '{decl.name}' must implement "
                                  f"{', '.join(sorted(abstract))} in an initializer {{ ... }}")
            return
        if not abstract:
            raise self.err(d, f"extern '{decl.name}' has no abstract methods to implement")
        for f in given:
            if f.name not in abstract:
                raise self.err(f, f"'{f.name}' is not an abstract method of '{decl.name}'")
            self.function_decl(f, scope.child("block"))
        missing = sorted(set(abstract) - {f.name for f in given})
        if missing:
            raise self.err(d, f"instance '{d.name}' of '{decl.name}' does not implement "
                              f"{', '.join(missing)}")

    def _refuse_self_instantiation(self, d: A.Instantiation, decl: Any, scope: Scope | None) -> None:
        """A parser/control that instantiates itself would be infinitely large (p4c: "Self-referencing
        types not supported")."""
        while scope is not None:
            outer = getattr(scope, "control", None) or getattr(scope, "parser", None)
            if outer is not None and (outer is decl or (type(outer) is type(decl) and outer.name == decl.name)):
                kind = "control" if isinstance(decl, A.ControlDecl) else "parser"
                raise self.err(d, f"self-referencing types not supported: '{decl.name}' within "
                                  f"'{kind} {outer.name}'")
            scope = scope.parent

    def package_args(self, d: A.Instantiation, scope: Scope) -> None:
        pkg: A.PackageTypeDecl = d.decl
        required = len(pkg.params)
        while required and pkg.params[required - 1].optional:   # trailing @optional blocks
            required -= 1
        if not required <= len(d.args) <= len(pkg.params):
            raise self.err(d, f"package '{pkg.name}' expects {len(pkg.params)} arguments, got "
                              f"{len(d.args)}")
        blocks = []
        if d.name == "main":
            self.program.main_instances = {}  # type: ignore[attr-defined]
        for p, a in zip(pkg.params, d.args, strict=False):
            v = a.value
            if isinstance(v, A.MethodCall) and isinstance(v.func, A.TypeExpr):
                v = self.call(v, scope, None)
                target = v.decl
                if getattr(v, "instance", None) is not None and d.name == "main":
                    # constructor arguments of a top-level block, for the backend
                    self.program.main_instances[p.name] = v.instance  # type: ignore[attr-defined]
            elif isinstance(v, A.PathExpr):
                v = self.expr(v, scope)
                inst = v.decl
                target = inst.decl if isinstance(inst, A.Instantiation) else None
                if target is not None and getattr(target, "ctor_params", None) and d.name == "main":
                    self.program.main_instances[p.name] = inst  # type: ignore[attr-defined]
            else:
                raise self.err(a, f"argument '{p.name}' of package '{pkg.name}' must be a "
                                  f"parser or control instance")
            want = p.type
            ok = (isinstance(want, A.ParserT) and isinstance(target, A.ParserDecl)) or \
                (isinstance(want, A.ControlT) and isinstance(target, A.ControlDecl)) or \
                (isinstance(want, A.PackageT) and isinstance(target, A.PackageTypeDecl))
            if not ok:
                raise self.err(a, f"argument '{p.name}' of package '{pkg.name}' must be a "
                                  f"{type_str(want)} "
                                  f"({'parser' if isinstance(want, A.ParserT) else 'control'})")
            self._match_block_signature(a, p, want, target)
            blocks.append((p.name, target))
        d.args = [b for _, b in blocks]
        if d.name == "main":
            self.program.main_blocks = blocks

    def _match_block_signature(self, where: Any, p: A.Param, want: A.Type, target: Any) -> None:
        proto = getattr(want, "decl", None)
        if not isinstance(proto, (A.ParserTypeDecl, A.ControlTypeDecl)):
            return
        required = len(proto.params)
        while required and proto.params[required - 1].optional:   # TNA's @optional parameters
            required -= 1
        if not required <= len(target.params) <= len(proto.params):
            raise self.err(where, f"'{target.name}' has {len(target.params)} parameters but "
                                  f"{proto.name} needs {len(proto.params)}")
        for want_p, got_p in zip(proto.params, target.params, strict=False):
            # p4c accepts a narrower direction ('in' or 'out' for an 'inout' parameter, as in
            # `control vc(in H hdr, inout M meta)` for VerifyChecksum); anything else differs.
            narrower = want_p.direction == "inout" and got_p.direction in ("in", "out")
            if want_p.direction != got_p.direction and not narrower:
                raise self.err(got_p, f"parameter '{got_p.name}' of '{target.name}' must be "
                                      f"'{want_p.direction or 'directionless'}' as in "
                                      f"{proto.name}")
            wt = want_p.type
            if not isinstance(wt, A.TypeVarT) and wt != got_p.type:
                raise self.err(got_p, f"parameter '{got_p.name}' of '{target.name}' must have "
                                      f"type {type_str(wt)} as in {proto.name}")

    def check_main(self, require_main: bool) -> None:
        mains = [d for d in self.program.decls if isinstance(d, A.Instantiation) and
                 d.name == "main"]
        if not mains:
            if require_main:
                loc = self.program.decls[-1].loc if self.program.decls else None
                raise self.err(loc, "program has no 'main' package instantiation")
            return
        main = mains[0]
        if not isinstance(main.decl, A.PackageTypeDecl):
            raise self.err(main, "'main' must be a package instantiation")
        self.program.main = main
        self.program.arch = "v1model" if main.decl.name == "V1Switch" else main.decl.name
        self.check_v1model_program()

    # ------------------------------------------------------------------ actions / functions
    def action_decl(self, d: A.ActionDecl, scope: Scope) -> None:
        self.params(d.params, scope, f"action '{d.name}'")
        seen_data = False
        for p in d.params:
            if p.direction == "":
                seen_data = True
            elif seen_data:
                raise self.err(p, f"action '{d.name}': directional parameter '{p.name}' after "
                                  f"action data parameters")
        inner = scope.child("action")
        inner.action = d  # type: ignore[attr-defined]
        for p in d.params:
            self.declare(inner, p.name, p)
        self.block(d.body, inner, new_scope=False)

    def function_decl(self, d: A.FunctionDecl, scope: Scope) -> None:
        if d.type_params:
            # a generic function is checked once per distinct type-argument list, at its calls
            # (callcheck.specialise_function); here only its signature
            d.template = copy.deepcopy(d)  # type: ignore[attr-defined]
            d.specs = {}  # type: ignore[attr-defined]
            d.decl_scope = scope  # type: ignore[attr-defined]
            self.check_signature(d, scope)
            return
        d.return_type = self.resolve_type(d.return_type, scope, d)
        self.params(d.params, scope, f"function '{d.name}'")
        inner = scope.child("function")
        inner.function = d  # type: ignore[attr-defined]
        for p in d.params:
            self.declare(inner, p.name, p)
        self.block(d.body, inner, new_scope=False)
        if not isinstance(d.return_type, A.VoidT) and not self._always_returns(d.body):
            raise self.err(d, f"function '{d.name}' does not return a value on every path")

    def _always_returns(self, s: A.Statement | None) -> bool:
        if isinstance(s, (A.ReturnStmt, A.ExitStmt)):
            return True
        if isinstance(s, A.BlockStmt):
            return any(self._always_returns(x) for x in s.stmts)
        if isinstance(s, A.IfStmt):
            return self._always_returns(s.then) and self._always_returns(s.else_)
        if isinstance(s, A.SwitchStmt):
            has_default = any(isinstance(lbl, A.DefaultExpr) for c in s.cases for lbl in c.labels)
            return has_default and all(self._always_returns(c.body) for c in s.cases
                                       if c.body is not None)
        return False

    # ------------------------------------------------------------------ parsers
    def specialise_block(self, decl: Any, written: Any, scope: Scope, where: Any) -> Any:
        """``G<bit<8>>() g;``: the copy of generic parser/control ``decl`` checked with these
        type arguments (one per distinct list)."""
        args = [self.resolve_type(a, scope, where) for a in getattr(written, "args", ())]
        if len(args) != len(decl.type_params):
            raise self.err(where, f"'{decl.name}' needs {len(decl.type_params)} type argument(s), "
                                  f"got {len(args)}")
        key = tuple(type_str(a) for a in args)
        spec = decl.specs.get(key)
        if spec is None:
            spec = copy.deepcopy(decl.template)
            spec.type_params = []
            inner = self.global_scope.child("generic")
            for tp, a in zip(decl.type_params, args, strict=True):
                inner.add(tp, TypeParam(tp, a))
            decl.specs[key] = spec
            saved = self.cur_loc
            if isinstance(spec, A.ParserDecl):
                self.parser_decl(spec, inner)
            else:
                self.control_decl(spec, inner)
            self.cur_loc = saved
        return spec

    def _generic_template(self, d: Any) -> bool:
        """A generic parser/control is checked per instantiation (``specialise_block``)."""
        if not d.type_params:
            return False
        d.template = copy.deepcopy(d)
        d.specs = {}
        return True

    def _enter_block(self, d: A.ControlDecl | A.ParserDecl, base: Scope | None, kind: str) -> Scope | None:
        """Scope of a parser/control with its parameters, constructor parameters and locals declared;
        None for a generic template (checked per specialisation instead)."""
        if base is None and self._generic_template(d):
            return None
        scope = (base or self.global_scope).child(kind)
        setattr(scope, kind, d)
        self.params(d.params, scope, f"{kind} '{d.name}'")
        for p in d.params:
            self.declare(scope, p.name, p)
        self.ctor_params(d, scope, kind)
        for loc in d.locals:
            self.local_decl(loc, scope)
        return scope

    def parser_decl(self, d: A.ParserDecl, base: Scope | None = None) -> None:
        scope = self._enter_block(d, base, "parser")
        if scope is None:
            return
        names: dict[str, A.ParserState] = {}
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise self.err(s, f"state '{s.name}' is built in and cannot be redefined")
            if s.name in names:
                raise self.err(s, f"state '{s.name}' is already declared")
            names[s.name] = s
            self.declare(scope, s.name, s)
        if "start" not in names:
            raise self.err(d, f"parser '{d.name}' has no 'start' state")
        builtin = {"accept": A.ACCEPT, "reject": A.REJECT}
        for s in d.states:
            sscope = scope.child("state")
            for st in s.stmts:
                self.stmt(st, sscope)
            tr = s.transition
            if tr is None:
                continue
            if tr.select is None:
                tr.state = self._state_ref(tr.next_state, names, builtin, tr)
                continue
            sel = tr.select
            sel.keys = [self.expr(k, sscope) for k in sel.keys]
            for k in sel.keys:
                self._check_key_type(k, "select key")
            for case in sel.cases:
                case.keyset = self.keyset(case.keyset, [k.type for k in sel.keys], sscope,
                                          allow_value_set=True)
                case.state = self._state_ref(case.next_state, names, builtin, case)

    def _state_ref(self, name: str | None, names: dict[str, A.ParserState],
                   builtin: dict[str, A.ParserState], where: Any) -> A.ParserState:
        if name in builtin:
            return builtin[name]
        if name not in names:
            raise self.err(where, f"unknown parser state '{name}'"
                                  f"{did_you_mean(str(name), list(names) + ['accept', 'reject'])}")
        return names[name]

    def _check_key_type(self, k: A.Expression, what: str) -> None:
        t = k.type
        if not isinstance(t, (A.BitT, A.BoolT, A.SerEnumT, A.ErrorT, A.EnumT, A.InfIntT)):
            raise self.err(k, f"{what} cannot have type {type_str(t)}")

    def keyset(self, ks: A.Expression, types: list[A.Type], scope: Scope,
               allow_value_set: bool = False) -> A.Expression:
        """Check a keyset against key types (one or several keys)."""
        if isinstance(ks, (A.DefaultExpr, A.DontCare)):
            ks.type = types[0] if len(types) == 1 else A.TupleT(tuple(types))
            return ks
        if len(types) > 1:
            if isinstance(ks, A.PathExpr) and allow_value_set:
                return self._value_set_ref(ks, types, scope)
            if not isinstance(ks, A.ListExpr) or len(ks.items) != len(types):
                n = len(ks.items) if isinstance(ks, A.ListExpr) else 1
                raise self.err(ks, f"keyset has {n} element(s) but there are {len(types)} keys")
            ks.items = [self.simple_keyset(i, t, scope) for i, t in
                        zip(ks.items, types, strict=True)]
            ks.type = A.TupleT(tuple(types))
            return ks
        if isinstance(ks, A.ListExpr):
            if len(ks.items) != 1:
                raise self.err(ks, f"keyset has {len(ks.items)} elements but there is 1 key")
            ks = ks.items[0]
        if isinstance(ks, A.PathExpr) and allow_value_set:
            found = scope.lookup(ks.name)
            if found and isinstance(found[0], A.ValueSetDecl):
                return self._value_set_ref(ks, types, scope)
        return self.simple_keyset(ks, types[0], scope)

    def _value_set_ref(self, ks: A.PathExpr, types: list[A.Type], scope: Scope) -> A.Expression:
        ks = self.expr(ks, scope)  # type: ignore[assignment]
        if not isinstance(ks.decl, A.ValueSetDecl):
            raise self.err(ks, f"'{ks.name}' is not a value_set")
        return ks

    def _keyset_value(self, e: A.Expression, t: A.Type, scope: Scope, what: str) -> A.Expression:
        """A keyset component: of the key's type, or (serializable-enum keys) its underlying
        bit<W> type, as p4c accepts ``((bit<16>) E.X) &&& 0xff00`` for an ``E`` key."""
        v = self.expr(e, scope, t)
        if isinstance(t, A.SerEnumT) and v.type != t:
            return self.coerce(v, t.underlying, what)
        return self.coerce(v, t, what)

    def simple_keyset(self, ks: A.Expression, t: A.Type, scope: Scope) -> A.Expression:
        if isinstance(ks, (A.DefaultExpr, A.DontCare)):
            ks.type = t
            return ks
        if isinstance(ks, A.Mask):
            if not isinstance(t, (A.BitT, A.SerEnumT)):
                raise self.err(ks, f"'&&&' needs a bit<W> key, not {type_str(t)}")
            ks.value = self._keyset_value(ks.value, t, scope, "keyset value")
            ks.mask = self._keyset_value(ks.mask, t, scope, "keyset mask")
            ks.type = t
            return ks
        if isinstance(ks, A.Range):
            if not isinstance(t, (A.BitT, A.SerEnumT)):
                raise self.err(ks, f"'..' needs a bit<W> key, not {type_str(t)}")
            ks.low = self._keyset_value(ks.low, t, scope, "range low bound")
            ks.high = self._keyset_value(ks.high, t, scope, "range high bound")
            ks.type = t
            return ks
        return self._keyset_value(ks, t, scope, "keyset")

    # ------------------------------------------------------------------ controls
    def control_decl(self, d: A.ControlDecl, base: Scope | None = None) -> None:
        scope = self._enter_block(d, base, "control")
        if scope is None:
            return
        self.block(d.apply, scope.child("apply"), new_scope=False)

    def ctor_params(self, d: A.ControlDecl | A.ParserDecl, scope: Scope, what: str) -> None:
        """Constructor parameters: compile-time values (bit/int/bool/serializable enum) and
        controls/parsers; each instantiation binds its own arguments (the backend specialises)."""
        self.params(d.ctor_params, scope, f"constructor of {what} '{d.name}'")
        for p in d.ctor_params:
            if p.direction:
                raise self.err(p, f"constructor parameter '{p.name}' cannot have a direction")
            extern_ok = isinstance(p.type, A.ExternT) and p.type.name in CTOR_EXTERNS
            if not extern_ok and not isinstance(p.type, (A.BitT, A.BoolT, A.SerEnumT, A.ControlT,
                                                         A.ParserT)):
                raise self.unsupported(p, f"constructor parameter of type {type_str(p.type)}")
            self.declare(scope, p.name, p)

    def ctor_args(self, d: A.Instantiation, scope: Scope) -> None:
        """Check ``C(args) c;`` against ``C``'s constructor parameters (positional)."""
        decl = d.decl
        params = decl.ctor_params
        if any(getattr(a, "name", None) for a in d.args):
            raise self.unsupported(d, "named constructor arguments")
        values = [a.value if isinstance(a, A.Argument) else a for a in d.args]
        if len(values) != len(params):
            raise self.err(d, f"'{decl.name}' expects {len(params)} constructor argument(s), got "
                              f"{len(values)}")
        out = []
        for p, v in zip(params, values, strict=True):
            if isinstance(p.type, A.ExternT):
                v = self.expr(v, scope)
                inst = v.decl if isinstance(v, A.PathExpr) else None
                ok = isinstance(inst, (A.Instantiation, A.Param)) and isinstance(inst.type, A.ExternT) \
                    and inst.type.name == p.type.name and \
                    (not p.type.type_args or tuple(inst.type.type_args) == tuple(p.type.type_args))
                if not ok:
                    raise self.err(v, f"argument for constructor parameter '{p.name}' must name a "
                                      f"{type_str(p.type)} instance")
                out.append(v)
            elif isinstance(p.type, (A.ControlT, A.ParserT)):
                v = self.expr(v, scope)
                inst = v.decl if isinstance(v, A.PathExpr) else None
                if not (isinstance(inst, A.Instantiation) and
                        isinstance(inst.decl, (A.ControlDecl, A.ParserDecl))) and \
                        not (isinstance(inst, A.Param) and isinstance(inst.type, (A.ControlT, A.ParserT))):
                    raise self.unsupported(v, f"argument for constructor parameter '{p.name}' "
                                              f"(name a control or parser instance)")
                want = p.type.decl.params
                got = inst.decl.params if isinstance(inst, A.Instantiation) else inst.type.decl.params
                if len(want) != len(got):
                    raise self.err(v, f"'{inst.name}' does not match the type of constructor "
                                      f"parameter '{p.name}'")
                out.append(v)
            else:
                out.append(self.coerce(self.expr(v, scope, p.type), p.type,
                                       f"constructor argument '{p.name}'"))
        d.args = out

    def local_decl(self, d: A.Declaration, scope: Scope) -> None:
        self.cur_loc = d.loc or self.cur_loc
        self.declare(scope, d.name, d)
        if isinstance(d, A.VariableDecl):
            self.var_decl(d, scope)
        elif isinstance(d, A.ConstDecl):
            self.const_decl(d, scope)
        elif isinstance(d, A.Instantiation):
            self.instantiation(d, scope)
        elif isinstance(d, A.ActionDecl):
            self.action_decl(d, scope)
        elif isinstance(d, A.TableDecl):
            self.table_decl(d, scope)
        elif isinstance(d, A.FunctionDecl):
            self.function_decl(d, scope)
        elif isinstance(d, A.ValueSetDecl):
            d.type = self.resolve_type(d.type, scope, d)
            size = self.const_int(d.size, scope, "value_set size")
            d.size = A.IntLiteral(size, type=A.InfIntT(), loc=d.size.loc)
        else:
            raise self.unsupported(d, f"local {type(d).__name__}")

    # ------------------------------------------------------------------ statements
    def block(self, b: A.BlockStmt, scope: Scope, new_scope: bool = True) -> None:
        inner = scope.child("block") if new_scope else scope
        for s in b.stmts:
            self.stmt(s, inner)

    def stmt(self, s: A.Statement, scope: Scope) -> None:
        self.cur_loc = s.loc or self.cur_loc
        if isinstance(s, A.AssignStmt):
            if isinstance(s.lhs, A.PathExpr):
                target = self.lookup_value(s.lhs, scope)
                if isinstance(target, A.ConstDecl):
                    raise self.err(s.lhs, f"assignment: cannot write to constant '{target.name}'")
            s.lhs = self.expr(s.lhs, scope)
            self.check_lvalue(s.lhs, "assignment")
            s.rhs = self.coerce(self.expr(s.rhs, scope, s.lhs.type), s.lhs.type,
                                "assignment")  # type: ignore[arg-type]
        elif isinstance(s, A.MethodCallStmt):
            call = self.expr(s.call, scope)
            if not isinstance(call, A.MethodCall):
                if isinstance(s.call.func, A.Member) and s.call.func.member in (
                        "minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
                    s.call.kind = "builtin"
                    return
                raise self.err(s, "statement is not a call")
            s.call = call
            self.check_call_context(call, scope)
        elif isinstance(s, A.BlockStmt):
            self.block(s, scope)
        elif isinstance(s, A.IfStmt):
            s.cond = self.expr(s.cond, scope, A.BoolT())
            if not isinstance(s.cond.type, A.BoolT):
                raise self.err(s.cond, f"if condition must be bool, not {type_str(s.cond.type)}")
            self.stmt_scoped(s.then, scope)
            if s.else_ is not None:
                self.stmt_scoped(s.else_, scope)
        elif isinstance(s, A.SwitchStmt):
            self.switch_stmt(s, scope)
        elif isinstance(s, A.ExitStmt):
            if scope.enclosing("parser") is not None:
                raise self.err(s, "'exit' cannot be used in a parser")
            if scope.enclosing("function") is not None:
                raise self.err(s, "'exit' cannot be used in a function")
        elif isinstance(s, A.ReturnStmt):
            self.return_stmt(s, scope)
        elif isinstance(s, A.EmptyStmt):
            pass
        elif isinstance(s, (A.ForStmt, A.ForInStmt)):
            self.for_stmt(s, scope)
        elif isinstance(s, (A.BreakStmt, A.ContinueStmt)):
            loop = scope.enclosing("loop", "action", "function", "control", "parser", "apply")
            if loop is None or loop.kind != "loop":
                word = "break" if isinstance(s, A.BreakStmt) else "continue"
                raise self.err(s, f"'{word}' outside a for loop")
        elif isinstance(s, A.DeclStmt):
            d = s.decl
            self.declare(scope, d.name, d)
            if isinstance(d, A.VariableDecl):
                self.var_decl(d, scope)
            elif isinstance(d, A.ConstDecl):
                self.const_decl(d, scope)
            else:
                raise self.err(d, f"'{d.name}': instantiations are not allowed inside blocks")
        else:
            raise self.unsupported(s, f"statement {type(s).__name__}")

    def for_stmt(self, s: A.ForStmt | A.ForInStmt, scope: Scope) -> None:
        if scope.enclosing("parser") is not None:
            raise self.unsupported(s, "for loops in a parser")
        inner = scope.child("block")
        if isinstance(s, A.ForStmt):
            for st in s.init:
                self.stmt(st, inner)
            if s.cond is not None:
                s.cond = self.expr(s.cond, inner, A.BoolT())
                if not isinstance(s.cond.type, A.BoolT):
                    raise self.err(s.cond, f"for loop condition must be bool, not "
                                           f"{type_str(s.cond.type)}")
            for st in s.update:
                self.stmt(st, inner)
        else:
            var = s.var
            var.type = self.resolve_type(var.type, scope, var)
            coll = s.collection
            if isinstance(coll, A.Range):
                coll.low = self.coerce(self.expr(coll.low, inner, var.type), var.type,
                                       "for loop range")
                coll.high = self.coerce(self.expr(coll.high, inner, var.type), var.type,
                                        "for loop range")
                coll.type = var.type
            else:
                coll = self.expr(coll, inner)
                if not isinstance(coll.type, A.HeaderStackT):
                    raise self.err(coll, f"cannot iterate over a value of type "
                                         f"{type_str(coll.type)}")
                if coll.type.element != var.type:
                    raise self.err(var, f"loop variable '{var.name}' must have type "
                                        f"{type_str(coll.type.element)}")
                s.collection = coll
            self.declare(inner, var.name, var)
        self.stmt_scoped(s.body, inner.child("loop"))

    def stmt_scoped(self, s: A.Statement, scope: Scope) -> None:
        if isinstance(s, A.DeclStmt):
            raise self.err(s, "a declaration cannot be the body of an if statement")
        self.stmt(s, scope)

    def check_call_context(self, call: A.MethodCall, scope: Scope) -> None:
        in_parser = scope.enclosing("parser") is not None
        if call.kind == "table_apply" and (in_parser or scope.enclosing("action", "function")):
            raise self.err(call, "tables can only be applied in a control's apply block")
        if call.kind == "action" and in_parser:
            raise self.err(call, "actions cannot be called from a parser")
        if call.kind == "extern_method" and call.method in ("extract", "lookahead", "advance") \
                and not in_parser:
            raise self.err(call, f"'{call.method}' can only be called in a parser")
        if call.kind == "extern_method" and call.method in ("extract", "emit"):
            for a in call.args:
                tv = getattr(getattr(a, "type", None), "type_var", None)
                if tv is not None:     # p4c: "argument must be a header"
                    raise self.err(a, f"'{call.method}': argument must be a header, not a value of "
                                      f"type variable '{tv}'")

    def return_stmt(self, s: A.ReturnStmt, scope: Scope) -> None:
        if scope.enclosing("parser") is not None:
            raise self.err(s, "'return' cannot be used in a parser")
        fscope = scope.enclosing("function")
        if fscope is not None:
            fn: A.FunctionDecl = fscope.function  # type: ignore[attr-defined]
            if isinstance(fn.return_type, A.VoidT):
                if s.value is not None:
                    raise self.err(s, f"function '{fn.name}' returns void; 'return' takes no "
                                      f"value")
                return
            if s.value is None:
                raise self.err(s, f"function '{fn.name}' must return a {type_str(fn.return_type)}")
            s.value = self.coerce(self.expr(s.value, scope, fn.return_type), fn.return_type,
                                  "return value")
            return
        if s.value is not None:
            raise self.err(s, "'return' with a value outside a function")

    def switch_stmt(self, s: A.SwitchStmt, scope: Scope) -> None:
        s.expr = self.expr(s.expr, scope)
        t = s.expr.type
        seen: set[Any] = set()
        for i, case in enumerate(s.cases):
            for j, lbl in enumerate(case.labels):
                if isinstance(lbl, A.DefaultExpr):
                    if i != len(s.cases) - 1:
                        raise self.err(lbl, "'default' must be the last switch label")
                    lbl.type = t
                    key: Any = "default"
                elif isinstance(t, A.ActionEnumT):
                    if not isinstance(lbl, A.PathExpr):
                        raise self.err(lbl, "switch on action_run: labels must be action names")
                    table: A.TableDecl = t.decl
                    ref = next((r for r in table.actions if r.name == lbl.name), None)
                    if ref is None:
                        raise self.err(lbl, f"'{lbl.name}' is not an action of table "
                                            f"'{table.name}'")
                    lbl.decl = ref.decl
                    lbl.type = t
                    key = lbl.name
                else:
                    if not isinstance(t, (A.BitT, A.SerEnumT, A.EnumT, A.ErrorT)):
                        raise self.err(s.expr, f"cannot switch on a value of type {type_str(t)}")
                    v = self.coerce(self.expr(lbl, scope, t), t, "switch label")
                    if not isinstance(v, (A.IntLiteral, A.EnumConst, A.ErrorConst)):
                        raise self.err(lbl, "switch label must be a compile-time constant")
                    case.labels[j] = v
                    key = getattr(v, "value", None), getattr(v, "member", None), \
                        getattr(v, "name", None)
                if key in seen:
                    raise self.err(lbl, "duplicate switch label")
                seen.add(key)
            if case.body is not None:
                self.block(case.body, scope)
            elif i == len(s.cases) - 1:
                raise self.err(case, "the last switch case needs a body")


def check_program(program: A.Program, require_main: bool = True) -> A.Program:
    """Type-check ``program`` in place and return it (raises ``P4CompileError``)."""
    checker = Checker(program)
    try:
        return checker.check(require_main)
    except P4CompileError:
        raise
    except RecursionError:
        raise P4CompileError(checker.cur_loc, "program nests too deeply") from None
    except Exception as exc:  # noqa: BLE001 - never a traceback for users
        raise P4CompileError(checker.cur_loc, f"internal error in the type checker: "
                                              f"{type(exc).__name__}: {exc}") from None
