"""P4 statements, action inlining and table application, as generated Python.

Actions are inlined where they run (a table's action dispatch or a direct call), so control
locals stay Python locals and no closure or frame object is created per packet. A table apply
becomes: build the key tuple, ``Table.lookup``, pick the entry's (or default) ``ActionCall``,
map its name to a small int through a per-table dict, and branch to the inlined bodies.
"""

from __future__ import annotations

import copy
from typing import Any

from p4sim.backend.aliasing import aggregate_copies, referenced_roots
from p4sim.backend.exprgen import AGGREGATES, ExprGen, is_signed, width_of, wrap
from p4sim.backend.typegen import default_value, mask
from p4sim.backend.writer import Env, Writer
from p4sim.errors import P4CompileError, P4UnsupportedError
from p4sim.frontend import ast


def _walk(node: Any, out: list) -> None:
    """Collect table-apply calls inside an expression, in evaluation order."""
    if isinstance(node, ast.MethodCall):
        for a in node.args:
            if a is not None:
                _walk(a, out)
        if node.kind == "table_apply":
            out.append(node)
        return
    if isinstance(node, ast.Expression):
        for name in ("expr", "left", "right", "cond", "then", "else_", "index", "value", "mask", "low", "high"):
            child = getattr(node, name, None)
            if isinstance(child, ast.Expression):
                _walk(child, out)
        for item in getattr(node, "items", None) or []:
            _walk(item, out)


_CHILDREN = ("expr", "left", "right", "cond", "then", "else_", "index", "value", "mask", "low", "high")


def contains_stmt(stmt: Any, kinds: tuple[type, ...]) -> bool:
    """Whether ``stmt`` is or (in nested blocks, branches and loops) contains a ``kinds``."""
    if isinstance(stmt, kinds):
        return True
    if isinstance(stmt, ast.BlockStmt):
        return any(contains_stmt(s, kinds) for s in stmt.stmts)
    if isinstance(stmt, ast.IfStmt):
        return contains_stmt(stmt.then, kinds) or (stmt.else_ is not None and contains_stmt(stmt.else_, kinds))
    if isinstance(stmt, ast.SwitchStmt):
        return any(c.body is not None and contains_stmt(c.body, kinds) for c in stmt.cases)
    if isinstance(stmt, ast.ForStmt):
        return any(contains_stmt(s, kinds) for s in (*stmt.init, *stmt.update, stmt.body))
    if isinstance(stmt, ast.ForInStmt):
        return contains_stmt(stmt.body, kinds)
    return False


def contains_return(stmt: Any) -> bool:
    return contains_stmt(stmt, (ast.ReturnStmt,))


class StmtGen(ExprGen):
    """Statement and call generation into a ``Writer``; externs come from a mixin."""

    w: Writer
    in_action_loop: int
    return_mode: str   # "return" (control/function) or "break" (inlined action)
    loop_depth = 0     # P4 loops open inside the action being inlined
    ret_flag: str | None = None   # set by `return` inside a loop of an inlined action
    may_exit = True    # whether the program has an `exit` anywhere (copy-out must survive it)
    action_depth = 0   # actions being inlined around the current statement (0: a control body)

    # ---- statements ------------------------------------------------------------------------
    def stmt(self, s: ast.Statement) -> None:
        method = getattr(self, "st_" + type(s).__name__, None)
        if method is None:
            raise P4UnsupportedError(s.loc, f"statement {type(s).__name__}")
        method(s)

    def stmts(self, items: list[ast.Statement]) -> None:
        saved = self.env
        self.env = Env(saved)
        try:
            for s in items:
                self.stmt(s)
        finally:
            self.env = saved

    def hoist(self, e: Any) -> Any:
        """Emit what must run before ``e`` can be evaluated as one Python expression (table
        applies, calls that copy values out), keeping P4's left-to-right order and the
        short-circuit of ``&&``, ``||`` and ``?:``; returns the expression to evaluate then."""
        if e is None or not self.effectful(e):
            return e
        return self.linearize(e)

    def effectful(self, e: Any) -> bool:
        if isinstance(e, ast.MethodCall):
            if e.kind == "table_apply" or (e.kind == "function" and self.copies_out(e.decl)):
                return True
            return any(a is not None and self.effectful(a) for a in e.args)
        if isinstance(e, ast.Expression):
            for name in _CHILDREN:
                child = getattr(e, name, None)
                if isinstance(child, ast.Expression) and self.effectful(child):
                    return True
            if isinstance(e, ast.StructInit):
                return any(self.effectful(v) for _, v in e.fields)
            return any(self.effectful(i) for i in (getattr(e, "items", None) or []))
        return False

    @staticmethod
    def copies_out(d: Any) -> bool:
        """A function with scalar out/inout params returns (value, outs...) in Python."""
        return any(p.direction in ("out", "inout") and not isinstance(p.type, AGGREGATES)
                   for p in getattr(d, "params", ()))

    def temp_expr(self, name: str, t: Any) -> ast.Expression:
        sentinel = ast.PathExpr(name, type=t)
        sentinel.decl = sentinel
        self.env.bind(sentinel, name)
        return sentinel

    def linearize(self, e: Any) -> Any:
        if not self.effectful(e):
            return e
        w = self.w
        if isinstance(e, ast.Binary) and e.op in ("&&", "||"):
            t = w.tmp("sc")
            w.line(f"{t} = {self.ex(self.linearize(e.left))}")
            with w.block(f"if {t}:" if e.op == "&&" else f"if not {t}:"):
                w.line(f"{t} = {self.ex(self.linearize(e.right))}")
            return self.temp_expr(t, e.type)
        if isinstance(e, ast.Conditional):
            t = w.tmp("cv")
            with w.block(f"if {self.ex(self.linearize(e.cond))}:"):
                w.line(f"{t} = {self.value(self.linearize(e.then))}")
            with w.block("else:"):
                w.line(f"{t} = {self.value(self.linearize(e.else_))}")
            return self.temp_expr(t, e.type)
        if isinstance(e, ast.MethodCall):
            new = copy.copy(e)
            new.args = self.settle_args(e)
            if e.kind == "table_apply":
                hit, act = w.tmp("hit"), w.tmp("act")
                self.apply_table(new, hit, act)
                self.hoisted[id(e)] = (hit, act)
                self.hoisted[id(new)] = (hit, act)
                return e
            if e.kind == "function" and self.copies_out(e.decl):
                return self.temp_expr(self.function_call_copyout(new), e.type)
            return new
        new = copy.copy(e)
        for name in _CHILDREN:
            child = getattr(e, name, None)
            if isinstance(child, ast.Expression):
                setattr(new, name, self.settle(child))
        if getattr(e, "items", None):
            new.items = [self.settle(i) for i in e.items]
        if isinstance(e, ast.StructInit):
            new.fields = [(n, self.settle(v)) for n, v in e.fields]
        return new

    def arg_value(self, p: ast.Param, a: Any) -> str:
        """An argument for a function/control/parser call. Aggregates go by reference: ``out``/
        ``inout`` ones are written in place and ``in`` ones are read-only in P4, so no copy is
        needed; scalars go by value."""
        if a is None:
            return "None"
        if p.direction in ("out", "inout") or isinstance(p.type, AGGREGATES):
            return self.ex(a)
        return self.value(a)

    def settle_args(self, call: ast.MethodCall) -> list[Any]:
        """Arguments evaluated in order; ``out``/``inout`` ones stay lvalues (written back later)."""
        params = call.params or getattr(call.decl, "params", None) or []
        out = []
        for i, a in enumerate(call.args):
            direction = params[i].direction if i < len(params) else "in"
            out.append(a if direction in ("out", "inout") else self.settle(a))
        return out

    def settle(self, e: Any) -> Any:
        """Linearize ``e`` and pin its value in a temporary (so later effects cannot change it)."""
        if e is None:
            return None
        lin = self.linearize(e)
        if isinstance(lin, (ast.IntLiteral, ast.BoolLiteral, ast.StringLiteral, ast.ErrorConst, ast.EnumConst)) \
                or isinstance(lin.type, AGGREGATES) or isinstance(lin, (ast.Mask, ast.Range, ast.DefaultExpr)) \
                or (isinstance(lin, ast.MethodCall) and lin.kind == "table_apply") \
                or (isinstance(lin, ast.Member) and isinstance(lin.expr, ast.MethodCall)):
            return lin
        t = self.w.tmp("ev")
        self.w.line(f"{t} = {self.ex(lin)}")
        return self.temp_expr(t, lin.type)

    def st_BlockStmt(self, s: ast.BlockStmt) -> None:
        self.stmts(s.stmts)

    def st_EmptyStmt(self, s: ast.EmptyStmt) -> None:
        pass

    def st_DeclStmt(self, s: ast.DeclStmt) -> None:
        d = s.decl
        if isinstance(d, ast.VariableDecl):
            name = self.w.tmp("v_" + d.name[:12])
            if d.init is not None:
                self.w.line(f"{name} = {self.value(self.hoist(d.init))}")
            else:
                self.w.line(f"{name} = {default_value(d.type, self.classes)}")
            self.env.bind(d, name)
        elif isinstance(d, ast.ConstDecl):
            name = self.w.tmp("c_" + d.name[:12])
            self.w.line(f"{name} = {self.value(d.value)}")
            self.env.bind(d, name)
        else:
            raise P4UnsupportedError(s.loc, f"local declaration {type(d).__name__}")

    def lvalue(self, e: Any) -> Any:
        """Evaluate the effects in an lvalue's indexes first (P4 evaluates the left side first)."""
        if not self.effectful(e):
            return e
        new = copy.copy(e)
        if isinstance(e, ast.Index):
            new.expr = self.lvalue(e.expr)
            new.index = self.settle(e.index)
        elif isinstance(e, (ast.Member, ast.Slice)):
            new.expr = self.lvalue(e.expr)
        return new

    def st_AssignStmt(self, s: ast.AssignStmt) -> None:
        if self.effectful(s.lhs):
            lhs = self.lvalue(s.lhs)
            rhs = s.rhs
            if s.compound and isinstance(rhs, ast.Binary):
                # `a[f(x)] op= v`: the lvalue's effects happen once; the read uses the same index
                rhs = copy.copy(rhs)
                rhs.left = lhs
            s = ast.AssignStmt(lhs, rhs, loc=s.loc)
        rhs = self.hoist(s.rhs)
        if isinstance(s.lhs.type, ast.VarbitT) and isinstance(s.lhs, ast.Member) and isinstance(s.rhs, ast.Member):
            self.w.line(f"{self.ex(s.lhs)}_len = {self.ex(s.rhs)}_len")   # a varbit value carries its length
        self.assign(s.lhs, self.value(rhs))

    def assign(self, lhs: ast.Expression, code: str) -> None:
        """Store Python value ``code`` into P4 lvalue ``lhs``."""
        if isinstance(lhs, ast.DontCare):
            self.w.line(f"_ = {code}")
            return
        if isinstance(lhs, ast.Slice):
            hi, lo = int(lhs.hi.value), int(lhs.lo.value)
            m = mask(hi - lo + 1) << lo
            target = self.ex(lhs.expr)
            t = lhs.expr.type
            full = mask(width_of(t))
            newv = f"({target} & {hex(full ^ m)}) | (({code}) << {lo} & {hex(m)})"
            self.assign(lhs.expr, wrap(newv, t) if is_signed(t) else newv)
            return
        if isinstance(lhs, ast.Index) and isinstance(lhs.expr.type, ast.HeaderStackT):
            if not (isinstance(lhs.index, ast.IntLiteral) and 0 <= lhs.index.value < lhs.expr.type.size):
                base, idx = self.ex(lhs.expr), self.w.tmp("i")
                self.w.line(f"{idx} = {self.ex(lhs.index)}")
                with self.w.block(f"if 0 <= {idx} < {base}.size:"):
                    self.w.line(f"{base}.h[{idx}] = {code}")
                return
        if isinstance(lhs, ast.Member) and isinstance(lhs.expr.type, ast.HeaderUnionT) \
                and isinstance(lhs.type, ast.HeaderT):
            # assigning a union member: the others become invalid when the value is valid
            union = self.ex(lhs.expr)
            tmp = self.w.tmp("u")
            self.w.line(f"{tmp} = {code}")
            with self.w.block(f"if {tmp}._v:"):
                self.w.line(f"{union}._setinvalid()")
            self.w.line(f"{self.ex(lhs)} = {tmp}")
            return
        if isinstance(lhs, ast.PathExpr):
            decl = lhs.decl
            target = self.env.lookup(decl)
            if target is None:
                raise P4UnsupportedError(lhs.loc, f"assignment to {lhs.name}")
            if isinstance(decl, ast.Param) and decl.direction in ("out", "inout") \
                    and isinstance(decl.type, AGGREGATES):
                self.w.line(f"_assign_into({target}, {code})")   # the caller's object, by reference
                return
            self.w.line(f"{target} = {code}")
            return
        self.w.line(f"{self.ex(lhs)} = {code}")

    def st_IfStmt(self, s: ast.IfStmt) -> None:
        cond = self.hoist(s.cond)
        with self.w.block(f"if {self.ex(cond)}:"):
            self.stmt(s.then)
        if s.else_ is not None:
            with self.w.block("else:"):
                self.stmt(s.else_)

    def st_SwitchStmt(self, s: ast.SwitchStmt) -> None:
        val = self.w.tmp("sw")
        self.w.line(f"{val} = {self.ex(self.hoist(s.expr))}")
        action_run = isinstance(s.expr, ast.Member) and s.expr.member == "action_run"
        table = s.expr.expr.decl if action_run else None
        pending: list[str] = []
        first = True
        default_body = None
        for case in s.cases:
            labels = []
            for label in case.labels:
                if isinstance(label, (ast.DefaultExpr, ast.DontCare)):
                    labels.append(None)
                elif action_run:
                    labels.append(str(self.action_index(table, label.decl)))
                else:
                    labels.append(self.ex(label))
            if None in labels:
                if case.body is None:
                    continue
                default_body = case.body
                continue
            pending.extend(labels)
            if case.body is None:
                continue
            cond = " or ".join(f"{val} == {v}" for v in pending)
            pending = []
            with self.w.block(("if " if first else "elif ") + cond + ":"):
                self.stmt(case.body)
            first = False
        if default_body is not None:
            if first:
                self.stmt(default_body)
            else:
                with self.w.block("else:"):
                    self.stmt(default_body)

    # ---- loops -----------------------------------------------------------------------------
    def st_ForStmt(self, s: ast.ForStmt) -> None:
        """``for (init; cond; update) body`` as ``while True`` whose update runs at the top of
        every iteration but the first, so ``continue`` needs no special case."""
        saved = self.env
        self.env = Env(saved)
        try:
            for st in s.init:
                self.stmt(st)
            first = self.w.tmp("first")
            self.w.line(f"{first} = True")
            with self.w.block("while True:"):
                if s.update:
                    with self.w.block(f"if {first}:"):
                        self.w.line(f"{first} = False")
                    with self.w.block("else:"):
                        for st in s.update:
                            self.stmt(st)
                else:
                    self.w.line(f"{first} = False")
                if s.cond is not None:
                    cond = self.hoist(s.cond)
                    with self.w.block(f"if not ({self.ex(cond)}):"):
                        self.w.line("break")
                self.loop_body(s.body)
        finally:
            self.env = saved
        self.after_loop(s.body)

    def st_ForInStmt(self, s: ast.ForInStmt) -> None:
        saved = self.env
        self.env = Env(saved)
        try:
            var = self.w.tmp("v_" + s.var.name[:12])
            coll = s.collection
            if isinstance(coll, ast.Range):
                lo, hi = self.w.tmp("lo"), self.w.tmp("hi")
                self.w.line(f"{lo} = {self.value(self.hoist(coll.low))}")
                self.w.line(f"{hi} = {self.value(self.hoist(coll.high))}")
                header = f"for {var} in range({lo}, {hi} + 1):"
            else:
                items = self.w.tmp("items")
                self.w.line(f"{items} = [_e._copy() for _e in {self.ex(self.hoist(coll))}.h]")
                header = f"for {var} in {items}:"
            self.env.bind(s.var, var)
            with self.w.block(header):
                self.loop_body(s.body)
        finally:
            self.env = saved
        self.after_loop(s.body)

    def loop_body(self, body: ast.Statement) -> None:
        self.loop_depth += 1
        try:
            self.stmt(body)
        finally:
            self.loop_depth -= 1

    def after_loop(self, body: ast.Statement) -> None:
        """An action's ``return`` inside a loop left the loop only: leave the action too."""
        if self.return_mode == "break" and self.ret_flag and contains_return(body):
            with self.w.block(f"if {self.ret_flag}:"):
                self.w.line("break")

    def st_BreakStmt(self, s: ast.BreakStmt) -> None:
        self.w.line("break")

    def st_ContinueStmt(self, s: ast.ContinueStmt) -> None:
        self.w.line("continue")

    def st_ExitStmt(self, s: ast.ExitStmt) -> None:
        self.w.line("raise _ExitBlock()")

    def st_ReturnStmt(self, s: ast.ReturnStmt) -> None:
        if self.return_mode == "break":
            if self.loop_depth and self.ret_flag:
                self.w.line(f"{self.ret_flag} = True")
            self.w.line("break")
        elif self.return_mode == "tuple":
            value = self.value(self.hoist(s.value)) if s.value is not None else "None"
            self.w.line(f"return ({value}, {', '.join(self.fn_outs)})")
        elif s.value is not None:
            self.w.line(f"return {self.value(self.hoist(s.value))}")
        else:
            self.w.line("return")

    def st_MethodCallStmt(self, s: ast.MethodCallStmt) -> None:
        call = s.call
        if any(a is not None and self.effectful(a) for a in call.args):
            call = copy.copy(call)
            call.args = self.settle_args(s.call)
        if call.kind == "table_apply":
            self.apply_table(call, None, None)
            return
        if call.kind == "function" and self.copies_out(call.decl):
            self.function_call_copyout(call)
            return
        code = self.call(call, statement=True)
        if code:
            self.w.line(code)

    # ---- calls -----------------------------------------------------------------------------
    def ex_MethodCall(self, e: ast.MethodCall) -> str:
        code = self.call(e, statement=False)
        if not code:
            raise P4UnsupportedError(e.loc, f"call to {e.method} used as a value")
        return code

    def call(self, call: ast.MethodCall, statement: bool) -> str | None:
        kind = call.kind
        if kind == "builtin":
            return self.builtin(call)
        if kind == "action":
            name = self.action_name(call.decl)
            # p4c lists an action called from a control body; one called only from other
            # actions is inlined into them and disappears from its P4Info
            if self.action_depth == 0 and name not in self.manifest.called_actions:
                self.manifest.called_actions.append(name)
            self.inline_action(call.decl, call.args, None)
            return None
        if kind == "function":
            return self.function_call(call)
        if kind == "extern_function":
            return self.extern_function(call)
        if kind == "extern_method":
            return self.extern_method(call)
        if kind == "control_apply":
            return self.control_apply(call)
        if kind == "parser_apply":
            self.parser_apply(call)
            return None
        raise P4UnsupportedError(call.loc, f"call of kind {kind}")

    def builtin(self, call: ast.MethodCall) -> str | None:
        m = call.method
        target = call.target
        t = target.type
        obj = self.ex(target)
        if m == "isValid":
            return f"{obj}._v"
        if m == "setValid":
            if isinstance(target, ast.Member) and isinstance(target.expr.type, ast.HeaderUnionT):
                self.w.line(f"{self.ex(target.expr)}._setinvalid()")
            return f"{obj}._v = True"
        if m == "setInvalid":
            return f"{obj}._setinvalid()"
        if m in ("push_front", "pop_front"):
            count = self.ex(call.args[0])
            return f"_{m}({obj}, {count}, {self.classes.name(t.element)})"
        if m in ("minSizeInBits", "maxSizeInBits"):
            return str(ast.type_width(t))
        if m in ("minSizeInBytes", "maxSizeInBytes"):
            return str((ast.type_width(t) + 7) // 8)
        raise P4UnsupportedError(call.loc, f"method {m}")

    # ---- actions ---------------------------------------------------------------------------
    def inline_action(self, decl: ast.ActionDecl, args: list[Any] | None, data: str | None) -> None:
        """Inline ``decl``'s body; action data come from ``args`` (direct call) or, for
        directionless params, from the tuple named ``data`` (table dispatch)."""
        saved_env, saved_mode = self.env, self.return_mode
        self.env = Env(saved_env)
        writebacks: list[tuple[ast.Expression, str]] = []
        data_i = 0
        # an aggregate argument the body can also reach another way (another overlapping argument,
        # or the caller's variable named directly) is copied in and out, as P4_16 requires
        copied = aggregate_copies(decl.params, list(args or []), referenced_roots(decl)) if args else set()
        for i, p in enumerate(decl.params):
            arg = args[i] if args is not None and i < len(args) else None
            name = self.w.tmp("a_" + p.name[:12])
            if i in copied and arg is not None:
                self.w.line(f"{name} = {self.ex(arg)}._copy()")
                if p.direction == "out":
                    self.w.line(f"{name}._setinvalid()" if isinstance(p.type, (ast.HeaderT, ast.HeaderUnionT))
                                else f"{name} = {default_value(p.type, self.classes)}")
                if p.direction in ("out", "inout"):
                    writebacks.append((arg, name))
            elif p.direction == "" and arg is None and data is not None:
                value = f"{data}[{data_i}]"      # control-plane data arrive as unsigned ints
                if isinstance(p.type, ast.BoolT):
                    value = f"({value} != 0)"
                elif is_signed(p.type):
                    h = 1 << (p.type.width - 1)
                    value = f"(({value} ^ {hex(h)}) - {hex(h)})"
                self.w.line(f"{name} = {value}")
                data_i += 1
            elif p.direction == "out":
                if isinstance(p.type, AGGREGATES) and arg is not None:
                    self.w.line(f"{name} = {self.ex(arg)}")
                    self.w.line(f"{name}._setinvalid()" if isinstance(p.type, (ast.HeaderT, ast.HeaderUnionT))
                                else f"{name} = {default_value(p.type, self.classes)}")
                    if not isinstance(p.type, (ast.HeaderT, ast.HeaderUnionT)):
                        writebacks.append((arg, name))
                else:
                    self.w.line(f"{name} = {default_value(p.type, self.classes)}")
                    if arg is not None:
                        writebacks.append((arg, name))
            elif arg is None:
                self.w.line(f"{name} = {default_value(p.type, self.classes)}")
            elif p.direction == "inout" or (isinstance(p.type, AGGREGATES) and p.direction == "in"):
                self.w.line(f"{name} = {self.ex(arg)}")
                if p.direction == "inout" and not isinstance(p.type, AGGREGATES):
                    writebacks.append((arg, name))
            else:
                self.w.line(f"{name} = {self.value(arg)}")
            self.env.bind(p, name)
        saved_loop = (self.loop_depth, self.ret_flag)
        self.loop_depth, self.ret_flag = 0, None
        guard = bool(writebacks) and self.may_exit
        self.action_depth += 1
        try:
            if guard:     # `exit` still copies the out/inout arguments back (P4_16 spec, 12.5)
                with self.w.block("try:"):
                    self.action_body(decl)
                with self.w.block("except _ExitBlock:"):
                    self.env = saved_env
                    for arg, name in writebacks:
                        self.assign(arg, name)
                    self.w.line("raise")
            else:
                self.action_body(decl)
        finally:
            self.action_depth -= 1
            self.env, self.return_mode = saved_env, saved_mode
            self.loop_depth, self.ret_flag = saved_loop
        for arg, name in writebacks:
            self.assign(arg, name)

    def action_body(self, decl: ast.ActionDecl) -> None:
        if contains_return(decl.body):
            self.return_mode = "break"
            if contains_stmt(decl.body, (ast.ForStmt, ast.ForInStmt)):
                self.ret_flag = self.w.tmp("ret")
                self.w.line(f"{self.ret_flag} = False")
            with self.w.block("for _ in _ONCE:"):
                self.stmts(decl.body.stmts)
        else:
            self.stmts(decl.body.stmts)

    # ---- tables ----------------------------------------------------------------------------
    def action_index(self, table: ast.TableDecl, action: ast.ActionDecl) -> int:
        for i, ref in enumerate(self.table_action_decls(table)):
            if ref is action:
                return i
        raise P4CompileError(table.loc, f"action {action.name} is not an action of table {table.name}")

    def table_action_decls(self, table: ast.TableDecl) -> list[ast.ActionDecl]:
        return [ref.decl for ref in self.table_action_refs(table)]

    def default_ref(self, table: ast.TableDecl) -> ast.ActionRef | None:
        """The table's default action; p4c makes it ``NoAction`` when none is given."""
        if table.default_action is not None:
            return table.default_action
        implicit = self._implicit_defaults.get(id(table))
        if implicit is None:
            no_action = next((d for d in self.program.decls if isinstance(d, ast.ActionDecl)
                              and d.name == "NoAction"), None)
            if no_action is None:
                return None
            implicit = ast.ActionRef("NoAction", [], [ast.Annotation("defaultonly")])
            implicit.decl = no_action
            self._implicit_defaults[id(table)] = implicit
        return implicit

    def listed_action_refs(self, table: ast.TableDecl) -> list[ast.ActionRef]:
        """The ``actions`` list, plus p4c's implicit ``@defaultonly NoAction`` when the table
        has no default action and does not list NoAction."""
        refs = list(table.actions)
        default = self.default_ref(table)
        if table.default_action is None and default is not None and default.decl not in [r.decl for r in refs]:
            refs.append(default)
        return refs

    def table_action_refs(self, table: ast.TableDecl) -> list[ast.ActionRef]:
        refs = self.listed_action_refs(table)
        default = self.default_ref(table)
        if default is not None and default.decl not in [r.decl for r in refs]:
            refs.append(default)
        return refs

    @staticmethod
    def bound_args(ref: ast.ActionRef) -> list[Any]:
        """Arguments written in the table for the action's directional params (``a(hdr.x)``)."""
        n_dir = sum(1 for p in ref.decl.params if p.direction != "")
        return list(ref.args[:n_dir]) + [None] * (len(ref.decl.params) - min(n_dir, len(ref.args)))

    def apply_table(self, call: ast.MethodCall, hit: str | None, act: str | None) -> None:
        table: ast.TableDecl = call.decl
        desc = self.table_desc(table)
        desc.applied = True
        w = self.w
        e = w.tmp("e")
        c = w.tmp("c")
        keys = [self.as_int(k.expr) for k in table.keys if k.match_kind != "selector"]
        if keys:
            w.line(f"{e} = {desc.pyname}.lookup(({''.join(k + ', ' for k in keys)}))")
        else:
            w.line(f"{e} = None")
        with w.block(f"if {e} is None:"):
            w.line(f"{c} = {desc.pyname}.default_action")
            if hit:
                w.line(f"{hit} = False")
        with w.block("else:"):
            w.line(f"{c} = {e}.action")
            if hit:
                w.line(f"{hit} = True")
            if desc.direct_counter:
                w.line(f"{e}.packets += 1")
                w.line(f"{e}.bytes += {self.packet_length_expr()}")
            if desc.implementation:
                self.resolve_profile_action(table, desc, e, c)
        idx = w.tmp("ai")
        args = w.tmp("ar")
        w.line(f"{idx} = {desc.pyname}_A.get({c}.name, -1) if {c} is not None else -1")
        if act:
            w.line(f"{act} = {idx}")
        refs = self.table_action_refs(table)
        first = True
        for i, ref in enumerate(refs):
            decl = ref.decl
            if not decl.body.stmts and not any(p.direction == "" for p in decl.params):
                continue
            with w.block(("if " if first else "elif ") + f"{idx} == {i}:"):
                if any(p.direction == "" for p in decl.params):
                    w.line(f"{args} = {c}.args")
                saved = self.current_entry
                self.current_entry = (e, desc)
                try:
                    self.inline_action(decl, self.bound_args(ref), args)
                finally:
                    self.current_entry = saved
            first = False
