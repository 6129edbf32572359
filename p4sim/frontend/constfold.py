"""Compile-time evaluation of P4 constant expressions with exact P4_16 bit-width semantics.

Why it exists: the type checker folds constants (``const`` declarations, widths, enum values,
table sizes, arithmetic on literals) into literals, and the result must be exactly what P4
defines: ``bit<W>`` wraps modulo 2^W, ``int<W>`` is two's complement, ``|+|``/``|-|`` saturate,
shifts are arithmetic for signed values, ``++`` concatenates, slices extract bits. The same
helpers (``wrap``, ``binary_op``) can serve the back end for its own constant handling.
"""

from __future__ import annotations

from p4sim.frontend import ast as A


class FoldError(Exception):
    """A constant expression that P4 does not define (division by zero, negative shift...)."""


def wrap(value: int, width: int, signed: bool) -> int:
    """Reduce ``value`` to ``width`` bits: unsigned in [0, 2^W), signed in [-2^(W-1), 2^(W-1))."""
    mask = (1 << width) - 1
    value &= mask
    if signed and value >> (width - 1):
        value -= 1 << width
    return value


def to_unsigned(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def saturate(value: int, width: int, signed: bool) -> int:
    if signed:
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    else:
        lo, hi = 0, (1 << width) - 1
    return max(lo, min(hi, value))


def literal(value: int | bool, t: A.Type, loc: object = None) -> A.Expression:
    """Make a typed literal for ``value`` (wrapped to ``t``'s width)."""
    if isinstance(t, A.BoolT):
        return A.BoolLiteral(bool(value), type=t, loc=loc)  # type: ignore[arg-type]
    if isinstance(t, A.BitT):
        v = wrap(int(value), t.width, t.signed)
        return A.IntLiteral(v, t.width, t.signed, type=t, loc=loc)  # type: ignore[arg-type]
    if isinstance(t, A.SerEnumT):
        v = wrap(int(value), t.underlying.width, t.underlying.signed)
        return A.IntLiteral(v, t.underlying.width, t.underlying.signed, type=t,
                            loc=loc)  # type: ignore[arg-type]
    return A.IntLiteral(int(value), None, False, type=A.InfIntT(), loc=loc)  # type: ignore[arg-type]


def _div(a: int, b: int) -> int:
    if b == 0:
        raise FoldError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def binary_op(op: str, a: int, b: int, t: A.Type, bwidth: int | None = None) -> int | bool:
    """Evaluate ``a op b`` where both operands have type ``t`` (``BitT`` or ``InfIntT``).

    For ``++`` ``bwidth`` is the right operand's width and ``t`` the left operand's type.
    Comparisons return bool; everything else returns the (wrapped) int.
    """
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    width = t.width if isinstance(t, A.BitT) else None
    signed = t.signed if isinstance(t, A.BitT) else True
    if op == "++":
        assert width is not None and bwidth is not None
        return wrap((to_unsigned(a, width) << bwidth) | to_unsigned(b, bwidth), width + bwidth, signed)
    if op in ("<<", ">>"):
        if b < 0:
            raise FoldError("negative shift amount")
        if op == "<<":
            r = a << b if width is None or b < width + 1 else 0
        else:
            r = a >> b if width is None or not signed or b < width else (-1 if a < 0 else 0)
            if width is not None and not signed:
                r = to_unsigned(a, width) >> b
    elif op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "/":
        if width is None and (a < 0 or b < 0):
            raise FoldError("division of negative infinite-precision integers")
        r = _div(a, b)
    elif op == "%":
        if width is None and (a < 0 or b < 0):
            raise FoldError("modulo of negative infinite-precision integers")
        if b == 0:
            raise FoldError("division by zero")
        r = a - _div(a, b) * b
    elif op == "&":
        r = a & b
    elif op == "|":
        r = a | b
    elif op == "^":
        r = a ^ b
    elif op in ("|+|", "|-|"):
        r = a + b if op == "|+|" else a - b
        if width is not None:
            return saturate(r, width, signed)
        return r
    else:
        raise FoldError(f"operator {op} cannot be folded")
    return wrap(r, width, signed) if width is not None else r


def unary_op(op: str, a: int | bool, t: A.Type) -> int | bool:
    if op == "!":
        return not a
    width = t.width if isinstance(t, A.BitT) else None
    signed = t.signed if isinstance(t, A.BitT) else True
    if op == "-":
        r = -int(a)
    elif op == "~":
        r = ~int(a)
    else:
        raise FoldError(f"operator {op} cannot be folded")
    return wrap(r, width, signed) if width is not None else r


def cast_value(value: int | bool, src: A.Type, dst: A.Type) -> int | bool:
    """Value of ``(dst) value`` where ``value`` has type ``src``."""
    if isinstance(dst, A.BoolT):
        return bool(value)
    v = int(value)
    if isinstance(src, A.BitT) and not src.signed:
        v = to_unsigned(v, src.width)
    if isinstance(dst, A.BitT):
        return wrap(v, dst.width, dst.signed)
    if isinstance(dst, A.SerEnumT):
        return wrap(v, dst.underlying.width, dst.underlying.signed)
    return v


def slice_value(value: int, width: int | None, hi: int, lo: int) -> int:
    v = to_unsigned(value, width) if width is not None else value
    return (v >> lo) & ((1 << (hi - lo + 1)) - 1)
