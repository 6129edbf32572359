"""Randomised check of generated arithmetic against an independent reference evaluator.

Random typed P4 expressions over bit<8>, bit<16> and int<8> fields (wrap-around, saturating,
shifts, casts, concatenation, slices, ?: on comparisons) are compiled into one program; each
packet's results must equal what the P4_16 rules computed here in plain Python say.
"""

from __future__ import annotations

import random

import pytest

from .helpers import needs_frontend, path_for, simple_program

pytestmark = needs_frontend

TYPES = {"u8": (8, False), "u16": (16, False), "s8": (8, True)}
FIELDS = {"u8": ["a", "b"], "u16": ["c"], "s8": ["s"]}


def wrap(v: int, t: str) -> int:
    w, signed = TYPES[t]
    v &= (1 << w) - 1
    return v - (1 << w) if signed and v >> (w - 1) else v


def p4type(t: str) -> str:
    w, signed = TYPES[t]
    return f"{'int' if signed else 'bit'}<{w}>"


class Gen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def literal(self, t: str):
        w, signed = TYPES[t]
        v = self.rng.choice([0, 1, 2, 3, (1 << w) - 1, (1 << (w - 1)), self.rng.getrandbits(w)])
        if signed:
            return f"((int<8>)8w{v})", lambda env, v=v: wrap(v, "s8")
        return f"{w}w{v}", lambda env, v=v: v

    def expr(self, t: str, depth: int):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            if rng.random() < 0.6:
                f = rng.choice(FIELDS[t])
                return f"hdr.h.{f}", lambda env, f=f: env[f]
            return self.literal(t)
        w, signed = TYPES[t]
        kind = rng.choice(["bin", "bin", "bin", "sat", "un", "shift", "cast", "mux", "slice"])
        if kind == "bin":
            op = rng.choice(["+", "-", "*", "&", "|", "^"])
            (lt, lf), (rt, rf) = self.expr(t, depth - 1), self.expr(t, depth - 1)
            py = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                  "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y}[op]
            return f"({lt} {op} {rt})", lambda env: wrap(py(lf(env), rf(env)), t)
        if kind == "sat":
            op = rng.choice(["|+|", "|-|"])
            (lt, lf), (rt, rf) = self.expr(t, depth - 1), self.expr(t, depth - 1)
            lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)

            def sat(env):
                v = lf(env) + rf(env) if op == "|+|" else lf(env) - rf(env)
                return max(lo, min(hi, v))
            return f"({lt} {op} {rt})", sat
        if kind == "un":
            op = rng.choice(["~", "-"])
            it, f = self.expr(t, depth - 1)
            return f"({op}{it})", (lambda env: wrap(~f(env), t)) if op == "~" else (lambda env: wrap(-f(env), t))
        if kind == "shift":
            op = rng.choice(["<<", ">>"])
            k = rng.randrange(0, w + 3)
            it, f = self.expr(t, depth - 1)
            if op == "<<":
                return f"({it} << {k})", lambda env: wrap(f(env) << k, t)
            return f"({it} >> {k})", lambda env: f(env) >> k    # arithmetic for int, logical for bit
        if kind == "cast":
            src = {"u8": rng.choice(["u16", "s8"]), "u16": "u8", "s8": "u8"}[t]
            it, f = self.expr(src, depth - 1)
            return f"(({p4type(t)})({it}))", lambda env: wrap(f(env), t)
        if kind == "slice" and t == "u16":      # concatenation of two bytes (one may be signed)
            (ht, hf), (lt, lf) = self.expr("u8", depth - 1), self.expr(rng.choice(["u8", "s8"]), depth - 1)
            return f"({ht} ++ {lt})", lambda env: (hf(env) << 8) | (lf(env) & 0xFF)
        if kind == "slice" and t == "u8":
            it, f = self.expr("u16", depth - 1)
            lo = rng.randrange(0, 9)
            return f"({it})[{lo + 7}:{lo}]", lambda env: (f(env) >> lo) & 0xFF
        ct = rng.choice(list(TYPES))
        (ca, fa), (cb, fb) = self.expr(ct, depth - 1), self.expr(ct, depth - 1)
        cmp = rng.choice(["<", "<=", "==", "!=", ">", ">="])
        (xt, xf), (yt, yf) = self.expr(t, depth - 1), self.expr(t, depth - 1)
        pycmp = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, "==": lambda x, y: x == y,
                 "!=": lambda x, y: x != y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}[cmp]
        return (f"(({ca} {cmp} {cb}) ? {xt} : {yt})",
                lambda env: xf(env) if pycmp(fa(env), fb(env)) else yf(env))


@pytest.mark.parametrize("seed", [20261130, 7, 42])
def test_random_expressions_match_reference(tmp_path, seed):
    rng = random.Random(seed)
    gen = Gen(rng)
    cases = []
    for i in range(36):
        t = ["u8", "u16", "s8"][i % 3]
        text, fn = gen.expr(t, 3)
        cases.append((f"r{i}", t, text, fn))
    header = "bit<8> a; bit<8> b; bit<16> c; int<8> s; " + " ".join(
        f"{p4type(t)} {name};" for name, t, _, _ in cases)
    body = "apply { sm.egress_spec = 1; " + " ".join(f"hdr.h.{n} = {x};" for n, _, x, _ in cases) + " }"
    path = path_for(simple_program(tmp_path, header, body))
    nbytes = 5 + sum(TYPES[t][0] // 8 for _, t, _, _ in cases)
    for _ in range(12):
        a, b, c, s = rng.getrandbits(8), rng.getrandbits(8), rng.getrandbits(16), rng.getrandbits(8)
        data = bytes([a, b]) + c.to_bytes(2, "big") + bytes([s]) + bytes(nbytes - 5)
        env = {"a": a, "b": b, "c": c, "s": wrap(s, "s8")}
        out = path.process(data, 0)
        assert len(out) == 1
        got = out[0][1]
        pos = 5
        for name, t, text, fn in cases:
            w = TYPES[t][0] // 8
            value = int.from_bytes(got[pos:pos + w], "big")
            pos += w
            assert value == fn(env) & ((1 << (8 * w)) - 1), f"{name} = {text} with {env}"
