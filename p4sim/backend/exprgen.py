"""P4 expressions to Python expressions with exact P4 bit-width semantics.

Values are Python ints: ``bit<W>`` in ``[0, 2**W)``, ``int<W>`` in two's-complement range as a
signed Python int, ``bool`` as Python bool, ``error``/plain enums as their index. Every operator
is written out with its masks precomputed as literals (wrap-around, saturation, shifts guarded
against huge amounts), so the generated code needs no helper calls for arithmetic.
"""

from __future__ import annotations

from typing import Any

from p4sim.backend.typegen import TypeClasses, mask, pyfield
from p4sim.backend.writer import Env
from p4sim.errors import P4UnsupportedError
from p4sim.frontend import ast

AGGREGATES = (ast.HeaderT, ast.StructT, ast.HeaderUnionT, ast.HeaderStackT)


def width_of(t: ast.Type | None) -> int:
    if isinstance(t, ast.BitT):
        return t.width
    if isinstance(t, ast.SerEnumT):
        return t.underlying.width
    if isinstance(t, ast.BoolT):
        return 1
    return 0


def is_signed(t: ast.Type | None) -> bool:
    return isinstance(t, ast.BitT) and t.signed


def wrap(expr: str, t: ast.Type | None) -> str:
    """Reduce ``expr`` to the value range of ``t``."""
    w = width_of(t)
    if not w or isinstance(t, ast.BoolT):
        return expr
    if is_signed(t):
        h = 1 << (w - 1)
        return f"((({expr}) + {hex(h)} & {hex(mask(w))}) - {hex(h)})"
    return f"(({expr}) & {hex(mask(w))})"


class ExprGen:
    """Compiles expressions; subclasses add statements, calls and blocks."""

    def __init__(self, program: ast.Program, classes: TypeClasses) -> None:
        self.program = program
        self.classes = classes
        self.error_index = {name: i for i, name in enumerate(program.errors)}
        self.hoisted: dict[int, tuple[str, str]] = {}   # id(table apply call) -> (hit var, action var)
        self._implicit_defaults: dict[int, ast.ActionRef] = {}
        self.env = Env()

    # ---- entry points ----------------------------------------------------------------------
    def ex(self, e: ast.Expression) -> str:
        method = getattr(self, "ex_" + type(e).__name__, None)
        if method is None:
            raise P4UnsupportedError(e.loc, f"expression {type(e).__name__}")
        return method(e)

    def value(self, e: ast.Expression) -> str:
        """``ex`` for a value that will be stored: aggregates are copied."""
        code = self.ex(e)
        if isinstance(e.type, AGGREGATES) and isinstance(e, (ast.PathExpr, ast.Member, ast.Index)):
            return f"{code}._copy()"
        return code

    def as_int(self, e: ast.Expression) -> str:
        """The unsigned bit pattern of ``e`` (table keys, hash inputs, digests)."""
        code = self.ex(e)
        t = e.type
        if isinstance(t, ast.BoolT):
            return f"int({code})"
        if is_signed(t):
            return f"({code} & {hex(mask(t.width))})"
        return code

    # ---- leaves ----------------------------------------------------------------------------
    def ex_IntLiteral(self, e: ast.IntLiteral) -> str:
        t = e.type
        v = e.value
        w = width_of(t)
        if w and not isinstance(t, ast.BoolT):
            if is_signed(t):
                h = 1 << (w - 1)
                v = ((v + h) & mask(w)) - h
            else:
                v &= mask(w)
        return str(v) if -1000 < v < 1000 else hex(v)

    def ex_BoolLiteral(self, e: ast.BoolLiteral) -> str:
        return "True" if e.value else "False"

    def ex_StringLiteral(self, e: ast.StringLiteral) -> str:
        return repr(e.value)

    def ex_ErrorConst(self, e: ast.ErrorConst) -> str:
        return str(self.error_index[e.name])

    def ex_EnumConst(self, e: ast.EnumConst) -> str:
        t = e.type
        if isinstance(t, ast.EnumT):
            return str(t.members.index(e.member))
        if isinstance(t, ast.SerEnumT):
            return str(t.value_of(e.member))
        raise P4UnsupportedError(e.loc, "enum constant of unknown type")

    def ex_PathExpr(self, e: ast.PathExpr) -> str:
        found = self.env.lookup(e.decl)
        if found is not None:
            return found
        decl = e.decl
        if isinstance(decl, ast.ConstDecl):
            return self.ex(decl.value)
        raise P4UnsupportedError(e.loc, f"reference to {e.name} here")

    def ex_InvalidHeader(self, e: ast.InvalidHeader) -> str:
        return f"{self.classes.name(e.type)}()"

    # ---- structure -------------------------------------------------------------------------
    def ex_Member(self, e: ast.Member) -> str:
        if isinstance(e.expr, ast.MethodCall) and e.expr.kind == "table_apply":
            hit, act = self.hoisted[id(e.expr)]
            if e.member == "hit":
                return hit
            if e.member == "miss":
                return f"(not {hit})"
            if e.member == "action_run":
                return act
        base_t = e.expr.type
        if isinstance(base_t, ast.HeaderStackT):
            base = self.ex(e.expr)
            factory = self.classes.name(base_t.element)
            if e.member == "last":
                return f"_stack_last({base}, {factory})"
            if e.member == "next":
                return f"_stack_at({base}, {base}.n, {factory})"
            if e.member == "lastIndex":
                return f"(({base}.n - 1) & 0xffffffff)"
            if e.member == "nextIndex":
                return f"{base}.n"
            if e.member == "size":
                return str(base_t.size)
        if isinstance(base_t, (ast.HeaderT, ast.StructT, ast.HeaderUnionT)):
            return f"{self.ex(e.expr)}.{pyfield(e.member)}"
        raise P4UnsupportedError(e.loc, f"member .{e.member} of {type(base_t).__name__}")

    def ex_Index(self, e: ast.Index) -> str:
        base_t = e.expr.type
        base = self.ex(e.expr)
        if isinstance(base_t, ast.HeaderStackT):
            if isinstance(e.index, ast.IntLiteral) and 0 <= e.index.value < base_t.size:
                return f"{base}.h[{e.index.value}]"
            return f"_stack_at({base}, {self.ex(e.index)}, {self.classes.name(base_t.element)})"
        if isinstance(base_t, ast.TupleT):
            return f"{base}[{self.ex(e.index)}]"
        raise P4UnsupportedError(e.loc, "indexing this type")

    def ex_Slice(self, e: ast.Slice) -> str:
        hi, lo = int(e.hi.value), int(e.lo.value)
        inner = self.ex(e.expr)
        shifted = inner if lo == 0 else f"({inner} >> {lo})"
        return f"({shifted} & {hex(mask(hi - lo + 1))})"

    def ex_ListExpr(self, e: ast.ListExpr) -> str:
        return "(" + "".join(self.value(i) + ", " for i in e.items) + ")"

    def ex_StructInit(self, e: ast.StructInit) -> str:
        cls = self.classes.name(e.type)
        vals = [self.value(v) for _, v in e.fields]
        if isinstance(e.type, ast.HeaderT):
            vals = ["True"] + vals
        return f"{cls}()._mk({', '.join(vals)})"

    def ex_Conditional(self, e: ast.Conditional) -> str:
        return f"({self.ex(e.then)} if {self.ex(e.cond)} else {self.ex(e.else_)})"

    # ---- operators -------------------------------------------------------------------------
    def ex_Unary(self, e: ast.Unary) -> str:
        v = self.ex(e.expr)
        t = e.type
        if e.op == "!":
            return f"(not {v})"
        if e.op == "+":
            return v
        if e.op == "-":
            return wrap(f"-{v}", t) if width_of(t) else f"(-{v})"
        if e.op == "~":
            if is_signed(t) or not width_of(t):
                return f"(~{v})"
            return f"({v} ^ {hex(mask(width_of(t)))})"
        raise P4UnsupportedError(e.loc, f"operator {e.op}")

    def ex_Binary(self, e: ast.Binary) -> str:
        op = e.op
        t = e.type
        if op == "&&":
            return f"({self.ex(e.left)} and {self.ex(e.right)})"
        if op == "||":
            return f"({self.ex(e.left)} or {self.ex(e.right)})"
        if op in ("==", "!="):
            lt = e.left.type
            a, b = self.ex(e.left), self.ex(e.right)
            if isinstance(lt, AGGREGATES):
                res = f"{a}._eq({b})"
                return res if op == "==" else f"(not {res})"
            if isinstance(lt, ast.VarbitT) and isinstance(e.left, ast.Member) and isinstance(e.right, ast.Member):
                return f"(({a}, {a}_len) {op} ({b}, {b}_len))"
            return f"({a} {op} {b})"
        if op in ("<", "<=", ">", ">="):
            return f"({self.ex(e.left)} {op} {self.ex(e.right)})"
        a, b = self.ex(e.left), self.ex(e.right)
        w = width_of(t)
        if op == "++":
            rw = width_of(e.right.type)
            rb = self.as_int(e.right)
            la = self.as_int(e.left)
            return wrap(f"({la} << {rw}) | {rb}", t) if is_signed(t) else f"(({la} << {rw}) | {rb})"
        if op in ("<<", ">>"):
            return self._shift(op, a, b, e)
        if not w:   # arbitrary-precision (compile-time integers that escaped folding)
            pyop = {"/": "//", "|+|": "+", "|-|": "-"}.get(op, op)
            return f"({a} {pyop} {b})"
        m = mask(w)
        signed = is_signed(t)
        if op in ("+", "-", "*"):
            return wrap(f"{a} {op} {b}", t)
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "/":
            return f"(({a} // {b}) if {b} else 0)" if not signed else \
                wrap(f"(int({a} / {b}) if {b} else 0)", t)
        if op == "%":
            return f"(({a} % {b}) if {b} else 0)" if not signed else \
                wrap(f"(_math_fmod({a}, {b}) if {b} else 0)", t)
        if op == "|+|":
            if signed:
                h = 1 << (w - 1)
                return f"max(min({a} + {b}, {h - 1}), {-h})"
            return f"min({a} + {b}, {hex(m)})"
        if op == "|-|":
            if signed:
                h = 1 << (w - 1)
                return f"max(min({a} - {b}, {h - 1}), {-h})"
            return f"max({a} - {b}, 0)"
        raise P4UnsupportedError(e.loc, f"operator {op}")

    def _shift(self, op: str, a: str, b: str, e: ast.Binary) -> str:
        t = e.type
        w = width_of(t)
        const = e.right.value if isinstance(e.right, ast.IntLiteral) else None
        if op == ">>":
            if const is not None:
                if w and const >= w:
                    return "(-1 if " + a + " < 0 else 0)" if is_signed(t) else "0"
                return f"({a} >> {const})"
            if w and not is_signed(t):
                return f"(({a} >> {b}) if {b} < {w} else 0)"
            if w:
                return f"({a} >> ({b} if {b} < {w} else {w}))"
            return f"({a} >> {b})"
        if not w:
            return f"({a} << {b})"
        if const is not None:
            if const >= w:
                return "0"
            return wrap(f"{a} << {const}", t)
        return f"({wrap(f'{a} << {b}', t)} if {b} < {w} else 0)"

    def ex_Cast(self, e: ast.Cast) -> str:
        src_t = e.expr.type
        dst = e.target if e.target is not None else e.type
        v = self.ex(e.expr)
        if isinstance(dst, ast.BoolT):
            return v if isinstance(src_t, ast.BoolT) else f"({v} != 0)"
        if isinstance(src_t, ast.BoolT):
            return f"(1 if {v} else 0)"
        dw = width_of(dst)
        if not dw:
            return v
        sw = width_of(src_t)
        if is_signed(dst):
            h = 1 << (dw - 1)
            return f"(((({v}) & {hex(mask(dw))}) ^ {hex(h)}) - {hex(h)})"
        if isinstance(src_t, (ast.BitT, ast.SerEnumT)) and not is_signed(src_t) and sw and sw <= dw:
            return v
        return f"({v} & {hex(mask(dw))})"

    # ---- keysets (select / const entries) --------------------------------------------------
    def const_value(self, e: Any) -> int:
        if isinstance(e, ast.IntLiteral):
            return e.value
        if isinstance(e, ast.BoolLiteral):
            return int(e.value)
        if isinstance(e, ast.Cast):
            return self.const_value(e.expr) & mask(width_of(e.type) or 1024)
        if isinstance(e, ast.ErrorConst):
            return self.error_index[e.name]
        if isinstance(e, ast.EnumConst):
            return int(self.ex(e))
        raise P4UnsupportedError(e.loc, f"non-constant value {type(e).__name__} where a constant is needed")
