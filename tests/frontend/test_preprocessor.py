"""Preprocessor: includes (-I, shipped core.p4/v1model.p4), macros, conditionals, line map."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.errors import P4CompileError, P4UnsupportedError
from p4sim.frontend.preprocessor import P4INCLUDE_DIR, preprocess


def _lines(pre) -> list[str]:
    return [ln for ln in pre.text.split("\n")]


def test_object_macro_is_expanded_outside_strings():
    pre = preprocess('#define W 16\nbit<W> x = "W";\n', "a.p4")
    assert 'bit<16> x = "W";' in pre.text


def test_macro_expands_recursively_and_undef_removes_it():
    src = "#define A B\n#define B 7\nA\n#undef B\nA\n"
    lines = [ln.strip() for ln in _lines(preprocess(src, "a.p4")) if ln.strip()]
    assert lines == ["7", "B"]


def test_self_referential_macro_does_not_loop():
    pre = preprocess("#define X X + 1\nX\n", "a.p4")
    assert "X + 1" in pre.text


@pytest.mark.parametrize("cond,expected", [
    ("1", "yes"), ("0", "no"), ("defined(FOO)", "yes"), ("defined BAR", "no"),
    ("FOO > 2 && !defined(BAR)", "yes"), ("(FOO << 1) == 6", "yes"), ("UNDEFINED", "no"),
    ("FOO == 3 ? 0 : 1", "no"), ("0x10 / 4 == 4", "yes"), ("-1 < 0", "yes"),
])
def test_if_expressions(cond, expected):
    src = f"#define FOO 3\n#if {cond}\nyes\n#else\nno\n#endif\n"
    words = [ln.strip() for ln in _lines(preprocess(src, "a.p4")) if ln.strip()]
    assert words == [expected]


def test_elif_chain_takes_first_true_branch_only():
    src = "#define V 2\n#if V == 1\none\n#elif V == 2\ntwo\n#elif V >= 2\nthree\n#else\nfour\n#endif\n"
    words = [ln.strip() for ln in _lines(preprocess(src, "a.p4")) if ln.strip()]
    assert words == ["two"]


def test_nested_conditionals_inside_false_branch_are_skipped():
    src = "#ifdef NOPE\n#if 1\nbad\n#endif\n#else\n#ifndef NOPE\ngood\n#endif\n#endif\n"
    words = [ln.strip() for ln in _lines(preprocess(src, "a.p4")) if ln.strip()]
    assert words == ["good"]


def test_define_inside_false_branch_has_no_effect():
    src = "#if 0\n#define Z 1\n#endif\n#ifdef Z\nbad\n#endif\nok\n"
    words = [ln.strip() for ln in _lines(preprocess(src, "a.p4")) if ln.strip()]
    assert words == ["ok"]


def test_line_map_points_into_included_files(tmp_path: Path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "defs.p4").write_text("// header\nconst bit<8> A = 1;\n")
    (tmp_path / "main.p4").write_text('#include "defs.p4"\n\nconst bit<8> B = 2;\n')
    pre = preprocess((tmp_path / "main.p4").read_text(), str(tmp_path / "main.p4"), [str(inc)])
    lines = _lines(pre)
    a = next(i for i, ln in enumerate(lines) if "A = 1" in ln) + 1
    b = next(i for i, ln in enumerate(lines) if "B = 2" in ln) + 1
    assert pre.location(a, 5).file == str(inc / "defs.p4")
    assert (pre.location(a, 5).line, pre.location(a, 5).col) == (2, 5)
    assert pre.location(b, 1).file.endswith("main.p4") and pre.location(b, 1).line == 3


def test_quoted_include_prefers_the_including_files_directory(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.p4").write_text("local\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.p4").write_text("from_I\n")
    (tmp_path / "sub" / "main.p4").write_text('#include "x.p4"\n')
    pre = preprocess((tmp_path / "sub" / "main.p4").read_text(), str(tmp_path / "sub" / "main.p4"),
                     [str(tmp_path / "other")])
    assert "local" in pre.text and "from_I" not in pre.text


def test_angle_include_resolves_shipped_v1model_first(tmp_path: Path):
    (tmp_path / "v1model.p4").write_text("BOGUS\n")
    pre = preprocess("#include <v1model.p4>\n", str(tmp_path / "m.p4"), [str(tmp_path)])
    assert "BOGUS" not in pre.text
    assert "standard_metadata_t" in pre.text
    assert str(Path(P4INCLUDE_DIR) / "core.p4") in pre.files


def test_include_guards_prevent_double_inclusion():
    pre = preprocess("#include <core.p4>\n#include <core.p4>\n#include <v1model.p4>\n", "m.p4")
    assert pre.text.count("extern packet_in") == 1


def test_comments_are_removed_but_lines_kept():
    pre = preprocess("a /* multi\nline */ b // tail\nc\n", "m.p4")
    lines = _lines(pre)
    assert lines[0].split() == ["a"] and lines[1].split() == ["b"] and lines[2] == "c"


def test_line_continuation_in_define():
    pre = preprocess("#define LONG 1 + \\\n  2\nLONG\n", "m.p4")
    assert pre.text.split() == ["1", "+", "2"]
    assert pre.location(3, 1).line == 3


@pytest.mark.parametrize("src,message", [
    ('#include "missing.p4"\n', "m.p4:1:1: error: cannot find include file 'missing.p4'"),
    ("#if 1\nx\n", "m.p4:1:1: error: unterminated conditional directive"),
    ("\n#endif\n", "m.p4:2:1: error: #endif without #if"),
    ("#if 1\n#else\n#else\n#endif\n", "m.p4:3:1: error: #else after #else"),
    ("#if 1 +\n#endif\n", "m.p4:1:1: error: invalid #if expression: unexpected end of expression"),
    ("  #frobnicate\n", "m.p4:1:3: error: unknown preprocessor directive '#frobnicate'"),
    ('#error "stop here"\n', 'm.p4:1:1: error: #error "stop here"'),
    ("x /* open\n", "m.p4:1:3: error: unterminated comment"),
    ("#include junk\n", "m.p4:1:1: error: #include expects \"FILE\" or <FILE>, got 'junk'"),
])
def test_preprocessor_errors(src, message):
    with pytest.raises(P4CompileError) as info:
        preprocess(src, "m.p4")
    assert str(info.value) == message


def test_function_like_macros_expand_with_nested_arguments():
    src = ("#define IS_RESUB(m) (m.instance_type == RESUB)\n#define RESUB 6\n"
           "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#define CAT(a, b) a ## b\n"
           'if (IS_RESUB(sm)) { x = MAX(f(1, 2), "p,q"); CAT(fo, o) = 1; y = IS_RESUB; }\n')
    line = [ln for ln in preprocess(src, "m.p4").text.split("\n") if ln.strip()][0]
    assert line == ('if ((sm.instance_type == 6)) { x = ((f(1, 2)) > ("p,q") ? (f(1, 2)) : '
                    '("p,q")); foo = 1; y = IS_RESUB; }')


def test_function_like_macro_argument_count_is_checked():
    with pytest.raises(P4CompileError) as info:
        preprocess("#define TWO(a, b) a + b\n\nz = TWO(1);\n", "m.p4")
    assert str(info.value) == "m.p4:3:1: error: macro 'TWO' expects 2 argument(s), got 1"


def test_macro_with_bad_parameter_list_is_unsupported():
    with pytest.raises(P4UnsupportedError) as info:
        preprocess("#define VAR(a, ...) a\n", "m.p4")
    assert str(info.value) == "m.p4:1:1: unsupported: macro 'VAR' with parameters 'a, ...'"


def test_recursive_include_is_reported(tmp_path: Path):
    (tmp_path / "loop.p4").write_text('#include "loop.p4"\n')
    with pytest.raises(P4CompileError) as info:
        preprocess((tmp_path / "loop.p4").read_text(), str(tmp_path / "loop.p4"))
    assert "nested too deeply" in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "loop.p4") + ":1:1: error:")


def test_function_like_macro_call_spanning_lines_keeps_the_line_map():
    pre = preprocess("#define ADD(a, b) ((a) + (b))\nx = ADD(1,\n        2);\ny = 3;\n", "m.p4")
    lines = pre.text.split("\n")
    assert lines[1] == "x = ((1) + (2));" and lines[2] == "" and lines[3] == "y = 3;"
    assert pre.location(4, 1).line == 4
