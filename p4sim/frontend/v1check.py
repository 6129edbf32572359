"""v1model load-time checks: what p4c's BMv2 back end or BMv2 itself would refuse.

Why it exists: a program that runs on p4sim must also load on BMv2 (issue 2, item 4). BMv2 does
not register a ``random`` hash algorithm, checksum algorithms must be compile-time constants,
``log_msg`` needs a literal format string, externs need constant positive sizes, register and
meter cells must be ``bit<W>``. These checks report ``unsupported`` (with the reason) or
``error`` exactly where the offending argument is written.
"""

from __future__ import annotations

import re
from typing import Any

from p4sim.frontend import ast as A
from p4sim.frontend.typeresolve import type_str

HASH_USERS = {"hash": 1, "verify_checksum": 3, "update_checksum": 3,
              "verify_checksum_with_payload": 3, "update_checksum_with_payload": 3}
SIZED_EXTERNS = ("counter", "meter", "register", "action_profile", "action_selector")


class V1ModelChecks:
    """Mixin (used by ``typecheck.Checker``)."""

    def _random_algo(self: Any, e: A.Expression | None, where: str) -> None:
        if isinstance(e, A.EnumConst) and e.enum == "HashAlgorithm" and e.member == "random":
            raise self.unsupported(e, f"HashAlgorithm.random in {where}: BMv2 does not register "
                                      f"a 'random' hash algorithm, so the program would not "
                                      f"load on BMv2")

    def check_instantiation(self: Any, d: A.Instantiation) -> None:
        t = d.type
        if not isinstance(t, A.ExternT):
            return
        if t.name == "action_selector" and d.args:
            self._random_algo(d.args[0], "action_selector")
            if not isinstance(d.args[0], A.EnumConst):
                raise self.err(d.args[0] or d, "action_selector algorithm must be a "
                                               "HashAlgorithm constant")
        if t.name in SIZED_EXTERNS:
            for p, a in zip(d.ctor.params if d.ctor else [], d.args, strict=False):
                if p.name in ("size", "outputWidth") and a is not None:
                    if not isinstance(a, A.IntLiteral):
                        raise self.err(a, f"{t.name} '{d.name}': {p.name} must be a "
                                          f"compile-time constant")
                    if a.value <= 0:
                        raise self.err(a, f"{t.name} '{d.name}': {p.name} must be positive, "
                                          f"got {a.value}")
        if t.name in ("register", "direct_meter") and t.type_args:
            vt = t.type_args[0]
            # a serializable enum is its underlying bit<W> (p4c's BMv2 back end takes it too)
            if not isinstance(vt, A.BitT) and not (t.name == "register" and
                                                   isinstance(vt, (A.StructT, A.HeaderT, A.SerEnumT))):
                raise self.err(d, f"{t.name} '{d.name}': cell type must be bit<W> or int<W>, "
                                  f"not {type_str(vt)}")
        if t.name == "register" and not t.type_args:
            raise self.err(d, f"register '{d.name}' needs its cell type: register<bit<W>>(size)")
        if t.name == "direct_meter" and not t.type_args:
            raise self.err(d, f"direct_meter '{d.name}' needs its result type: "
                              f"direct_meter<bit<W>>(type)")

    def check_extern_function_call(self: Any, mc: A.MethodCall) -> None:
        name = mc.method
        if name in HASH_USERS:
            idx = HASH_USERS[name]
            algo = mc.args[idx] if idx < len(mc.args) else None
            self._random_algo(algo, f"{name}()")
            if name != "hash" and not isinstance(algo, A.EnumConst):
                raise self.err(algo or mc, f"{name}(): the algorithm must be a compile-time "
                                           f"HashAlgorithm constant")
            data = mc.args[idx + 1] if name == "hash" else mc.args[1]
            if data is not None and not isinstance(
                    data.type, (A.TupleT, A.StructT, A.HeaderT, A.BitT)):
                raise self.err(data, f"{name}(): data must be a list of fields, not "
                                     f"{type_str(data.type)}")
        elif name == "log_msg":
            fmt = mc.args[0]
            if not isinstance(fmt, A.StringLiteral):
                raise self.err(fmt or mc, "log_msg(): the message must be a string literal")
            holes = len(re.findall(r"\{\}", fmt.value))
            given = 0
            if len(mc.args) > 1 and mc.args[1] is not None:
                t = mc.args[1].type
                given = len(t.elements) if isinstance(t, A.TupleT) else (
                    len(t.fields) if isinstance(t, A.StructT) else 1)
            if holes != given:
                raise self.err(mc, f"log_msg(): the message has {holes} '{{}}' placeholder(s) "
                                   f"but {given} value(s) are given")
        elif name == "static_assert":
            cond = mc.args[0]
            if not isinstance(cond, A.BoolLiteral):
                raise self.err(cond or mc, "static_assert(): condition must be a compile-time "
                                           "constant")
            if not cond.value:
                msg = mc.args[1].value if len(mc.args) > 1 and isinstance(
                    mc.args[1], A.StringLiteral) else "static assertion failed"
                raise self.err(mc, f"static_assert failed: {msg}")
        elif name in ("digest",):
            data = mc.args[1]
            if data is not None and not isinstance(data.type, (A.StructT, A.HeaderT,
                                                               A.TupleT, A.BitT)):
                raise self.err(data, f"digest(): data must be a struct, not "
                                     f"{type_str(data.type)}")

    def check_v1model_program(self: Any) -> None:
        if self.program.arch != "v1model":
            return
        names = [n for n, _ in self.program.main_blocks]
        expected = ["p", "vr", "ig", "eg", "ck", "dep"]
        if names != expected:  # pragma: no cover - the shipped V1Switch guarantees it
            raise self.err(self.program.main, f"V1Switch blocks are {names}, expected {expected}")
        self._check_v1switch_type_args()

    def _check_v1switch_type_args(self: Any) -> None:
        """V1Switch<H, M>: every block must agree on H and M (p4c: "Type of argument ... does not
        match"), and M must be a struct (p4c-bm2-ss: "expected the user metadata type to be a
        struct"; p4sim's code generator builds M as a class). v1model's block types all name
        their parameters H and M, so the names bind."""
        bound: dict[str, tuple[A.Type, str]] = {}
        main = self.program.main
        for (_, target), pkg_param in zip(self.program.main_blocks, main.decl.params, strict=False):
            proto = getattr(pkg_param.type, "decl", None)
            for want_p, got_p in zip(getattr(proto, "params", ()), target.params, strict=False):
                if not isinstance(want_p.type, A.TypeVarT):
                    continue
                var = want_p.type.name
                if var not in bound:
                    bound[var] = (got_p.type, target.name)
                elif bound[var][0] != got_p.type:
                    first, by = bound[var]
                    raise self.err(got_p, f"type of argument '{target.name}' does not match V1Switch: "
                                          f"its {var} is {type_str(got_p.type)}, but {type_str(first)} "
                                          f"in '{by}'")
        if "M" in bound and not isinstance(bound["M"][0], A.StructT):
            t, by = bound["M"]
            raise self.err(main, f"{type_str(t)}: expected the user metadata type of V1Switch to be a "
                                 f"struct (as in '{by}')")
