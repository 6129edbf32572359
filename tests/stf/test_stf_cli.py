"""``p4sim stf`` as a user runs it: pairs, several pairs, directories, totals line, exit status."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from p4sim.cli import main
from p4sim.errors import UserError
from p4sim.stf.cli import collect_pairs

CORPUS = Path(__file__).parent / "corpus"


def test_collect_pairs_forms(tmp_path):
    (tmp_path / "a.p4").write_text("")
    (tmp_path / "a.stf").write_text("")
    (tmp_path / "b.p4").write_text("")
    (tmp_path / "b.stf").write_text("")
    (tmp_path / "orphan.stf").write_text("")
    a, b = str(tmp_path / "a.p4"), str(tmp_path / "b.p4")
    assert collect_pairs([a, a[:-3] + ".stf"]) == [(a, a[:-3] + ".stf")]
    assert collect_pairs([a, a[:-3] + ".stf", b, b[:-3] + ".stf"]) == [(a, a[:-3] + ".stf"),
                                                                       (b, b[:-3] + ".stf")]
    assert collect_pairs([str(tmp_path)]) == [(a, a[:-3] + ".stf"), (b, b[:-3] + ".stf")]


@pytest.mark.parametrize("args,fragment", [
    (["x.p4"], "no such file"),
    (["{d}/a.p4"], "program has no STF file after it"),
    (["{d}/a.stf"], "STF file without a program before it"),
    (["{d}/empty"], "directory holds no .stf files"),
])
def test_collect_pairs_errors(tmp_path, args, fragment):
    (tmp_path / "a.p4").write_text("")
    (tmp_path / "a.stf").write_text("")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=fragment):
        collect_pairs([a.format(d=tmp_path) for a in args])


def test_bad_arguments_exit_1_with_one_line(tmp_path, capsys):
    rc = main(["stf", str(tmp_path / "missing.p4"), str(tmp_path / "missing.stf")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("\n") == 1 and "no such file" in err


def test_malformed_stf_is_a_failed_test_not_a_crash(tmp_path, capsys):
    shutil.copy(CORPUS / "untouched_port0.p4", tmp_path / "u.p4")
    (tmp_path / "u.stf").write_text("packet 0 0g\n")
    rc = main(["stf", str(tmp_path / "u.p4"), str(tmp_path / "u.stf")])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert out[0].startswith("FAIL u: ") and "u.stf:1: error: invalid packet data character 'G'" in out[0]
    assert out[-1] == "0 passed, 1 failed"


def _mutated_copy(src: str, dst_dir: Path, name: str) -> None:
    """A corpus pair whose last expected packet has one wrong nibble."""
    shutil.copy(CORPUS / f"{src}.p4", dst_dir / f"{name}.p4")
    lines = (CORPUS / f"{src}.stf").read_text().splitlines()
    i = max(n for n, line in enumerate(lines) if line.startswith("expect "))
    lines[i] = lines[i].replace("00", "0F", 1)
    (dst_dir / f"{name}.stf").write_text("\n".join(lines) + "\n")


@pytest.mark.usefixtures("need_compiler")
def test_directory_run_prints_each_test_and_totals(tmp_path):
    for name in ("table_exact", "multicast"):
        shutil.copy(CORPUS / f"{name}.p4", tmp_path)
        shutil.copy(CORPUS / f"{name}.stf", tmp_path)
    _mutated_copy("arith_wrap", tmp_path, "zz_wrong")
    proc = subprocess.run([sys.executable, "-m", "p4sim.cli", "stf", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "PASS multicast" in lines and "PASS table_exact" in lines
    assert any(line.startswith("FAIL zz_wrong: port 1: packet #1: packet differs") for line in lines)
    assert lines[-1] == "2 passed, 1 failed"


@pytest.mark.usefixtures("need_compiler")
def test_several_pairs_all_pass_exit_0(capsys):
    args = []
    for name in ("clone_i2e", "hash_crc32", "register_counter"):
        args += [str(CORPUS / f"{name}.p4"), str(CORPUS / f"{name}.stf")]
    rc = main(["stf", *args])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out == ["PASS clone_i2e", "PASS hash_crc32", "PASS register_counter", "3 passed, 0 failed"]


@pytest.mark.usefixtures("need_compiler")
def test_compile_error_is_a_failed_test(tmp_path, capsys):
    (tmp_path / "bad.p4").write_text("control C() { apply { x = ; } }\n")
    (tmp_path / "bad.stf").write_text("packet 0 00\n")
    rc = main(["stf", str(tmp_path / "bad.p4"), str(tmp_path / "bad.stf")])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert out[0].startswith("FAIL bad: ") and "bad.p4:1:" in out[0]
    assert out[-1] == "0 passed, 1 failed"


@pytest.mark.usefixtures("need_compiler")
def test_include_dirs_reach_the_compiler(tmp_path, capsys):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "port.p4").write_text("const bit<9> OUT_PORT = 7;\n")
    prog = (CORPUS / "untouched_port0.p4").read_text().replace(
        "#include <v1model.p4>", "#include <v1model.p4>\n#include \"port.p4\"").replace(
        "apply {\n        \n    }", "apply {\n        sm.egress_spec = OUT_PORT;\n    }")
    assert "OUT_PORT;" in prog
    (tmp_path / "p.p4").write_text(prog)
    (tmp_path / "p.stf").write_text("packet 0 0102\nexpect 7 0102 $\n")
    rc = main(["stf", "-I", str(inc), str(tmp_path / "p.p4"), str(tmp_path / "p.stf")])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0, out
    assert out == ["PASS p", "1 passed, 0 failed"]
    rc = main(["stf", str(tmp_path / "p.p4"), str(tmp_path / "p.stf")])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1 and "port.p4" in out[0]


def test_one_queue_by_default_drops_nonzero_priority_like_bmv2():
    """simple_switch without --priority-queues has one queue per port and drops a packet whose
    priority is not 0 ("Priority out of range"); p4sim's STF runner does the same unless the file
    says ``priority_queues N`` (issue 17: STF tests passed on p4sim and lost packets on BMv2)."""
    from p4sim.backend import compile_file
    from p4sim.stf.parser import parse_text
    from p4sim.stf.runner import StfRun
    from p4sim.v1model.pipeline import V1ModelPath

    program = compile_file(str(CORPUS / "sm_priority.p4"), [])
    packet = "packet 0 00 00 0000 00000000 00000000\nexpect 1 00 05 0000 00000000 00000000 $\n"
    one = StfRun(program.instantiate(), parse_text(packet), V1ModelPath)
    assert one.run() and one.path.drops["priority_out_of_range"] == 1
    eight = StfRun(program.instantiate(), parse_text("priority_queues 8\n" + packet), V1ModelPath)
    assert eight.run() == [] and eight.path.drops["priority_out_of_range"] == 0


def test_output_into_a_closed_pipe_is_not_a_traceback():
    """`p4sim ... | head -1`: the reader leaves early; p4sim stops quietly (exit 141, as a shell
    reports SIGPIPE), without a BrokenPipeError traceback on stderr."""
    corpus = Path(__file__).parent / "corpus"
    proc = subprocess.run(f"'{sys.executable}' -m p4sim.cli stf '{corpus}' | head -1",
                          shell=True, capture_output=True, text=True, timeout=300,
                          executable="/bin/bash")
    assert proc.stdout.startswith("PASS "), proc.stdout
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
