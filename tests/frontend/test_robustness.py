"""Robustness: mangled programs give one-line compile errors, never a traceback or an
internal error (truncations and random token insertions/deletions, fixed seed)."""

from __future__ import annotations

import random

from p4sim.errors import P4CompileError
from p4sim.frontend import check_source

from .conftest import PROGRAMS

TOKENS = ["(", ")", "{", "}", ";", "<", ">", ">>", "8w1", "x", "bit<8>", ".", ",", "=", "if",
          "else", "apply", "_", "default", ":", "&&&", "..", "true", '"s"', '@name("a")', "hdr",
          "error.NoError", "++", "|+|", "[1:0]", "[0]", "#define", "state", "table", "{#}"]


def _mutations(count: int):
    rng = random.Random(20261130)
    sources = [(PROGRAMS / f"{n}.p4").read_text() for n in
               ("basic", "calc", "fabric_like", "special_ops", "basic_tunnel")]
    for _ in range(count):
        s = rng.choice(sources)
        if rng.random() < 0.3:
            yield s[:rng.randrange(len(s))]
            continue
        for _ in range(rng.randint(1, 3)):
            p = rng.randrange(len(s))
            if rng.random() < 0.5:
                s = s[:p] + s[min(len(s), p + rng.randint(1, 20)):]
            else:
                s = s[:p] + " " + rng.choice(TOKENS) + " " + s[p:]
        yield s


def test_mangled_programs_fail_cleanly():
    failures = 0
    for text in _mutations(120):
        try:
            check_source(text, "fuzz.p4", [str(PROGRAMS)])
        except P4CompileError as err:
            failures += 1
            msg = str(err)
            assert "\n" not in msg
            assert "internal error" not in msg, msg
            assert msg.startswith("fuzz.p4:") or ".p4:" in msg.split(" ")[0], msg
    assert failures > 100  # nearly every mutation must be rejected


def test_deeply_nested_expression_is_a_clean_error_or_accepted():
    text = "const bit<8> A = " + "(" * 400 + "1" + ")" * 400 + ";\n"
    try:
        prog = check_source(text, "deep.p4")
    except P4CompileError as err:
        assert str(err).startswith("deep.p4:")
    else:
        assert prog.decls[0].value.value == 1


def test_missing_file_is_a_compile_error(tmp_path):
    from p4sim.frontend import load_program
    missing = tmp_path / "nope.p4"
    try:
        load_program(str(missing))
    except P4CompileError as err:
        assert str(err).startswith(f"{missing}:1:1: error: cannot read file")
    else:  # pragma: no cover
        raise AssertionError("expected an error")


def test_very_long_operator_chain_is_a_clean_error():
    text = "const bit<8> A = " + "1 + " * 3000 + "1;\n"
    try:
        check_source(text, "chain.p4")
    except P4CompileError as err:
        assert str(err) in ("chain.p4:1:1: error: program nests too deeply",
                            "chain.p4:1:1: error: program has no 'main' package instantiation")
