"""Parsers in generated code: one function per parser instance, states as loop branches.

A mixin of ``codegen.BlockGen``. The top-level parser takes the packet bytes and returns the
offset of the unparsed payload; errors end the parse with ``standard_metadata.parser_error``
set (the packet continues to ingress, as on BMv2). Sub-parsers share the bit cursor.
"""

from __future__ import annotations

from typing import Any

from p4sim.backend.exprgen import AGGREGATES as AGGREGATES_T
from p4sim.backend.exprgen import width_of
from p4sim.backend.typegen import default_value, mask
from p4sim.backend.writer import Env, Writer
from p4sim.errors import P4CompileError, P4UnsupportedError
from p4sim.frontend import ast


class ParserGen:
    """Mixin: parser instances, sub-parser apply, transitions and select keysets."""

    parser_is_sub = False     # generating a sub-parser (which counts state visits in _PSTEPS)

    def gen_parser(self, d: ast.ParserDecl, prefix: str, sub: bool = False,
                   inst: ast.Instantiation | None = None) -> str:
        """A parser instance as one function: states as branches of a loop over ``_st``.

        The top-level parser takes the packet bytes and returns the payload offset; a
        sub-parser (``sub``) takes and returns the bit cursor, plus its scalar ``out`` values."""
        name = self.gname(("sub_" if sub else "prs_") + prefix)
        saved = (self.w, self.env, self.return_mode, self.prefix, self.sm_expr, self.in_parser, self.fn_outs)
        base = self.ctor_env(inst)
        self.w, self.env, self.return_mode, self.prefix = Writer(1), base, "return", prefix
        self.in_parser, self.sm_expr = True, None
        try:
            pnames = self.bind_params(d.params)
            outs = [pn for pn, p in zip(pnames, d.params, strict=True)
                    if p.direction in ("out", "inout") and not isinstance(p.type, AGGREGATES_T)]
            w = self.w
            if sub:
                pnames = ["_d", "_p", "_n"] + pnames[1:]
                for pn, p in zip(pnames[3:], d.params[1:], strict=True):
                    if p.direction == "out" and not isinstance(p.type, AGGREGATES_T):
                        w.line(f"{pn} = {default_value(p.type, self.classes)}")
            else:
                pnames[0] = "_d"
                w.line("_n = len(_d) << 3")
                w.line("_p = 0")
            self.declare_locals(d.locals, prefix)
            states = [s for s in d.states if s.name not in ("accept", "reject")]
            start = next((s for s in states if s.name == "start"), None)
            if start is None:
                raise P4CompileError(d.loc, f"parser {d.name} has no start state")
            states.remove(start)
            states.insert(0, start)
            index = {id(s): i for i, s in enumerate(states)}
            sm = self.sm_expr
            w.line("_st = 0")
            saved_sub, self.parser_is_sub = self.parser_is_sub, sub
            if not sub:
                w.line("_psteps = 0")

            def body() -> None:
                with w.block("while True:"):
                    # bounded work per packet: a state that loops without advancing must not wedge
                    if sub:
                        w.line("_PSTEPS[0] += 1")
                        with w.block("if _PSTEPS[0] > _PLIMIT:"):
                            w.line("raise _ParserLoopLimit()")
                    else:
                        w.line("_psteps += 1")
                        with w.block("if _psteps > _PLIMIT:"):
                            w.line("raise _ParserLoopLimit()")
                    for i, s in enumerate(states):
                        with w.block(("if " if i == 0 else "elif ") + f"_st == {i}:"):
                            # one scope for the state: its locals are visible in its select
                            outer = self.env
                            self.env = Env(outer)
                            try:
                                for st in s.stmts:
                                    self.stmt(st)
                                self.transition(s, index)
                            finally:
                                self.env = outer
            if sub:      # errors propagate to the top-level parser
                body()
                w.line(f"return (_p, {', '.join(outs)})" if outs else "return (_p,)")
            else:
                with w.block("try:"):
                    body()
                with w.block("except _ParserReject as _r:"):
                    if sm is not None:
                        with w.block("if _r.code is not None:"):
                            w.line(f"{sm}.parser_error = _r.code")
                w.line("return _p >> 3")
            self.functions.append(f"def {name}({', '.join(pnames)}):\n" + w.text())
            self.parser_is_sub = saved_sub
        finally:
            (self.w, self.env, self.return_mode, self.prefix, self.sm_expr, self.in_parser,
             self.fn_outs) = saved
        return name

    def parser_apply(self, call: ast.MethodCall) -> None:
        """``subparser.apply(pkt, args)`` inside a parser state."""
        fn = self.env.lookup(call.target.decl)
        if fn is None or not self.in_parser:
            raise P4UnsupportedError(call.loc, "apply of a parser outside a parser")
        params = call.decl.params
        args, outs = [], []
        for p, a in zip(params[1:], call.args[1:], strict=True):
            scalar_out = p.direction in ("out", "inout") and not isinstance(p.type, AGGREGATES_T)
            if scalar_out:
                outs.append(a)
            args.append(self.arg_value(p, a))
        r = self.w.tmp("pr")
        top = not self.parser_is_sub
        if top:     # the sub-parser counts on from the top-level parser's state visits
            self.w.line("_PSTEPS[0] = _psteps")
        self.w.line(f"{r} = {fn}(_d, _p, _n{''.join(', ' + x for x in args)})")
        if top:
            self.w.line("_psteps = _PSTEPS[0]")
        self.w.line(f"_p = {r}[0]")
        for k, a in enumerate(outs, 1):
            if a is not None and not isinstance(a, ast.DontCare):
                self.assign(a, f"{r}[{k}]")

    def goto(self, target: Any, index: dict[int, int]) -> None:
        name = getattr(target, "name", None)
        if name == "accept":
            self.w.line("break")
        elif name == "reject":
            self.w.line("raise _ParserReject(None)")
        else:
            self.w.line(f"_st = {index[id(target)]}")

    def transition(self, s: ast.ParserState, index: dict[int, int]) -> None:
        tr = s.transition
        if tr is None:
            raise P4CompileError(s.loc, f"state {s.name} has no transition")
        if tr.select is None:
            self.goto(tr.state, index)
            return
        keys = []
        for k in tr.select.keys:
            kv = self.w.tmp("k")
            self.w.line(f"{kv} = {self.as_int(k)}")
            keys.append((kv, width_of(k.type)))
        first = True
        has_default = False
        for case in tr.select.cases:
            cond = self.keyset_cond(case.keyset, keys)
            if cond == "True":
                has_default = True
                with self.w.block("else:" if not first else "if True:"):
                    self.goto(case.state, index)
                break
            with self.w.block(("if " if first else "elif ") + cond + ":"):
                self.goto(case.state, index)
            first = False
        if not has_default:
            with self.w.block("else:" if not first else "if True:"):
                self.w.line(f"raise _ParserReject({self.error_index['NoMatch']})")

    def keyset_cond(self, ks: ast.Expression, keys: list[tuple[str, int]]) -> str:
        if isinstance(ks, (ast.DefaultExpr, ast.DontCare)):
            return "True"
        if isinstance(ks, ast.PathExpr) and isinstance(ks.decl, ast.ValueSetDecl):
            vs = self.env.lookup(ks.decl)
            return f"{vs}.matches(({''.join(k + ', ' for k, _ in keys)}))"
        items = ks.items if isinstance(ks, ast.ListExpr) else [ks]
        if len(items) != len(keys):
            raise P4CompileError(ks.loc, f"keyset has {len(items)} values for {len(keys)} select keys")
        conds = []
        for item, (k, w) in zip(items, keys, strict=True):
            full = mask(w) if w else -1
            if isinstance(item, (ast.DefaultExpr, ast.DontCare)):
                continue
            if isinstance(item, ast.Mask):
                m = self.const_value(item.mask) & full
                v = self.const_value(item.value) & m
                conds.append(f"({k} & {hex(m)}) == {hex(v)}")
            elif isinstance(item, ast.Range):
                conds.append(f"{hex(self.const_value(item.low) & full)} <= {k} <= "
                             f"{hex(self.const_value(item.high) & full)}")
            elif isinstance(item, ast.PathExpr) and isinstance(item.decl, ast.ValueSetDecl):
                conds.append(f"{self.env.lookup(item.decl)}.matches(({k},))")
            else:
                conds.append(f"{k} == {hex(self.const_value(item) & full)}")
        return " and ".join(conds) or "True"
