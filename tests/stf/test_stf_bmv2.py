"""The STF corpus on real BMv2, and the BMv2 target's parts that run without BMv2.

* ``test_corpus_on_bmv2``: every ``tests/stf/corpus`` pair through ``p4sim stf --target bmv2``
  (p4c + simple_switch + simple_switch_CLI); skipped with the reason when they are not on PATH.
* nanomsg framing against BMv2's layout and against p4sim's own nanomsg port group (a real
  PAIR socket pair);
* PATH detection, skip reasons and the one-line error of ``p4sim stf --target bmv2``;
* the orchestration (compile, start, readiness polling, packets, CLI batches, ordering,
  check_counter, clean-up) against the stand-ins in ``bmv2_standin.py`` on a temporary PATH.

The STF -> CLI translation has its own file, ``test_stf_bmv2_translate.py``.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4sim.cli import main
from p4sim.errors import UserError
from p4sim.stf import bmv2_target as bt
from p4sim.stf.runner import run_stf

CORPUS = Path(__file__).parent / "corpus"
PAIRS = sorted(p for p in CORPUS.glob("*.stf") if p.with_suffix(".p4").is_file())
STANDIN = Path(__file__).parent / "bmv2_standin.py"


# -- the corpus on real BMv2 --------------------------------------------------------------------

# Corpus files BMv2 cannot pass for a reason in BMv2 itself (not a p4sim/BMv2 disagreement).
BMV2_DEFECTS = {
    "value_set": "simple_switch_CLI 1.15.5's pvs_add sends a bit<8> value in 2 bytes (Python 3 '/' in "
                 "runtime_CLI.parse_pvs_value) and simple_switch aborts; the runner refuses it instead",
    "control_exit_copyout": "p4c 1.2.5's BMv2 back end drops the copy-out of a sub-control's inout "
                            "arguments when it executes exit (P4_16 spec 12.5: copy-out still happens; "
                            "an action's exit does copy out, see action_exit_copyout)",
    "stack_signed_index": "simple_switch 1.15.5 aborts (\"Conversion from negative integer to an unsigned "
                          "type\") on a negative int<> stack index instead of reading a fresh invalid header",
}

# Corpus files using what the BMv2 toolchain does not implement (valid P4_16 that p4sim runs).
BMV2_LIMITATIONS = {
    "for_loops": "BMv2 back end does not support for loops: p4c 1.2.5 refuses for-in loops (\"BMV2 does "
                 "not support for-in loops\") and runs a C-style for loop's body only once",
}


def _corpus_param(stf: Path) -> object:
    reason = BMV2_DEFECTS.get(stf.stem)
    marks = [pytest.mark.xfail(reason=f"BMv2 bug: {reason}", strict=True)] if reason else []
    if stf.stem in BMV2_LIMITATIONS:
        marks = [pytest.mark.xfail(reason=f"BMv2 limitation: {BMV2_LIMITATIONS[stf.stem]}", strict=True)]
    return pytest.param(stf, id=stf.stem, marks=marks)


@pytest.mark.bmv2
@pytest.mark.slow
@pytest.mark.parametrize("stf", [_corpus_param(p) for p in PAIRS])
def test_corpus_on_bmv2(stf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reason = bt.skip_reason()
    if reason:
        pytest.skip(reason)
    rc = main(["stf", "--target", "bmv2", str(stf.with_suffix(".p4")), str(stf)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.rstrip().endswith("1 passed, 0 failed"), out


# -- nanomsg framing -----------------------------------------------------------------------------

def test_framing_is_bmv2s_packed_int32_header() -> None:
    raw = bt.encode_message(bt.PACKET_IN, 3, b"\xaa\xbb")
    assert raw == struct.pack("<iii", 3, 3, 2) + b"\xaa\xbb"
    assert raw.hex() == "03000000" "03000000" "02000000" "aabb"
    assert bt.encode_message(bt.PORT_ADD, 7) == bytes.fromhex("00000000" "07000000" "00000000")
    msg = bt.decode_message(bytes.fromhex("04000000" "01020000" "03000000" "010203ff"))
    assert msg == bt.NnMessage(bt.PACKET_OUT, 0x201, 3, b"\x01\x02\x03")   # bytes past `more` ignored


@pytest.mark.parametrize(("raw", "why"), [
    (b"\x03\x00\x00\x00\x01\x00", "shorter than its 12-byte header"),
    (struct.pack("<iii", 4, 1, 10) + b"abc", "says 10 bytes but carries 3"),
    (struct.pack("<iii", 4, 1, -1), "says -1 bytes"),
])
def test_bad_frames_are_refused(raw: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        bt.decode_message(raw)


def test_framing_interoperates_with_p4sims_nanomsg_port(tmp_path: Path) -> None:
    pynng = pytest.importorskip("pynng")
    try:
        from p4sim.switch.nanomsg import NanomsgPortGroup
    except ImportError as err:
        pytest.skip(f"p4sim.switch.nanomsg not available ({err})")
    addr = f"ipc://{tmp_path}/nn.ipc"
    group = NanomsgPortGroup(addr)
    try:
        with pynng.Pair0(dial=addr, recv_timeout=2000) as sock:
            sock.send(bt.encode_message(bt.PORT_ADD, 5))
            sock.send(bt.encode_message(bt.PACKET_IN, 5, b"hello"))
            got: list[tuple[int, bytes]] = []
            deadline = time.monotonic() + 5
            while not got and time.monotonic() < deadline:
                got = group.recv_pairs(8)
                time.sleep(0.01)
            assert got == [(5, b"hello")]
            assert group.has_port(5)
            group.send(9, b"\x00\x01")
            assert bt.decode_message(sock.recv()) == bt.NnMessage(bt.PACKET_OUT, 9, 2, b"\x00\x01")
    finally:
        group.close()


# -- tools on PATH ---------------------------------------------------------------------------

def _install(bin_dir: Path, names: list[str], body: str | None = None) -> None:
    bin_dir.mkdir(exist_ok=True)
    text = body if body is not None else STANDIN.read_text()
    for name in names:
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n{text}")
        tool.chmod(0o755)


def test_missing_tools_names_each_missing_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert bt.missing_tools() == ["p4c or p4c-bm2-ss", "simple_switch", "simple_switch_CLI"]
    assert bt.skip_reason() == ("BMv2 target: p4c or p4c-bm2-ss, simple_switch, simple_switch_CLI "
                                "not found on PATH")
    _install(tmp_path, ["p4c-bm2-ss", "simple_switch"], "")
    assert bt.missing_tools() == ["simple_switch_CLI"]
    with pytest.raises(UserError, match="^--target bmv2: simple_switch_CLI not found on PATH"):
        bt.find_tools()
    _install(tmp_path, ["simple_switch_CLI"], "")
    assert bt.skip_reason() is None
    tools = bt.find_tools()
    assert tools.compiler == str(tmp_path / "p4c-bm2-ss")
    # p4c-bm2-ss takes no --target/--arch and writes the JSON file named by -o
    assert bt.compile_command(tools, "/x/prog.p4", "/out", ["/inc"]) == [
        str(tmp_path / "p4c-bm2-ss"), "-I", "/inc", "-o", "/out/prog.json", "/x/prog.p4"]
    _install(tmp_path, ["p4c"], "")
    tools = bt.find_tools()
    assert bt.compile_command(tools, "/x/prog.p4", "/out", []) == [
        str(tmp_path / "p4c"), "--target", "bmv2", "--arch", "v1model", "-o", "/out", "/x/prog.p4"]
    assert bt.switch_command(tools, "/w/p.json", "/w", 9999) == [
        str(tmp_path / "simple_switch"), "--packet-in", "ipc:///w/packets.ipc", "--thrift-port", "9999",
        "--device-id", "0", "--notifications-addr", "ipc:///w/notifications.ipc",
        "--log-file", "/w/switch", "--log-flush", "/w/p.json"]
    # queues are a target option, after the JSON and "--" (simple_switch refuses them before)
    assert bt.switch_command(tools, "/w/p.json", "/w", 9999, priority_queues=8)[-4:] == [
        "/w/p.json", "--", "--priority-queues", "8"]


def test_real_path_state_matches_skip_reason() -> None:
    # on this machine BMv2 is absent: the reason must say so; where it is installed, None
    import shutil
    have = all(shutil.which(t) for t in ("simple_switch", "simple_switch_CLI")) and (
        shutil.which("p4c") or shutil.which("p4c-bm2-ss"))
    assert (bt.skip_reason() is None) == bool(have)


def test_cli_target_bmv2_without_tools_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    pair = PAIRS[0]
    rc = main(["stf", "--target", "bmv2", str(pair.with_suffix(".p4")), str(pair)])
    captured = capsys.readouterr()
    assert rc == 1
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "p4c or p4c-bm2-ss" in lines[0] and "simple_switch" in lines[0] and "not found on PATH" in lines[0]
    assert captured.out == ""          # no test ran, no half-printed totals


def test_unknown_target_is_refused() -> None:
    pair = PAIRS[0]
    with pytest.raises(UserError, match="unknown STF target"):
        run_stf(str(pair.with_suffix(".p4")), str(pair), target="tofino")


# -- orchestration against the stand-ins ---------------------------------------------------

@pytest.fixture
def standins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    pytest.importorskip("pynng")
    _install(tmp_path / "bin", ["p4c", "simple_switch", "simple_switch_CLI"])
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(bt, "QUIET_S", 0.1)
    monkeypatch.setattr(bt, "OUTPUT_TIMEOUT_S", 1.0)
    # The run's temp dir holds the switch's nanomsg sockets, and a Unix socket path has at most 107
    # bytes: under pytest-xdist tmp_path (.../popen-gw1/test_standin_..._0/tmp/tmpXXXXXXXX/
    # notifications.ipc) is longer ("pynng AddressInvalid"), so it is a short directory, linked here.
    short = Path(tempfile.mkdtemp(prefix="stf-"))
    (tmp_path / "tmp").symlink_to(short, target_is_directory=True)
    monkeypatch.setattr(bt.tempfile, "tempdir", str(short))
    prog = tmp_path / "prog.p4"
    prog.write_text("// stand-in program\n")
    yield tmp_path
    shutil.rmtree(short, ignore_errors=True)


def _run(base: Path, stf_text: str, prog: str = "prog.p4"):
    stf = base / "t.stf"
    stf.write_text(stf_text)
    return run_stf(str(base / prog), str(stf), target="bmv2")


def test_standin_packets_cli_order_and_cleanup(standins: Path) -> None:
    result = _run(standins, """
packet 1 0A0B
expect 1 0A0B$
setdefault t fwd(port:2)
packet 1 0C0D
expect 2 0C**
wait
remove all
packet 3 0E
expect 3 0E
check_counter c(0) packets == 3
""")
    assert result.passed, result.errors
    assert result.notes == []
    assert list((standins / "tmp").iterdir()) == []       # temp dir (JSON, sockets, logs) removed
    assert _running(standins / "bin" / "simple_switch") == []   # the switch was stopped


def _running(exe: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(exe).encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def test_standin_mismatch_extra_and_missing_packets_fail(standins: Path) -> None:
    result = _run(standins, """
packet 1 0A0B
expect 1 0A0C
packet 2 01
packet 4 02
expect 4 02
expect 4 03
check_counter c(0) packets == 9
""")
    assert not result.passed
    text = "\n".join(result.errors)
    assert "port 1: packet #1: packet differs at hex digit 3" in text
    assert "port 2: expected 0 packet(s), got 1 (unexpected packet(s))" in text
    assert "port 4: expected 2 packet(s), got 1 (missing packet(s))" in text
    assert "check_counter c(0) packets == 9 failed: it is 3" in text


def test_standin_cli_refusal_is_a_note_and_handles_are_read(standins: Path) -> None:
    result = _run(standins, """
add t a:1 fwd(port:1) = A
register_write nosuch 0 1
packet 0 AA
expect 0 AA
""")
    assert result.passed, result.errors
    assert len(result.notes) == 1 and "simple_switch_CLI: Error: unknown command 'register_write'" in result.notes[0]


def test_standin_compile_error_is_one_user_error(standins: Path) -> None:
    (standins / "bad.p4").write_text("#error nope\n")
    with pytest.raises(UserError, match=r"bad\.p4: p4c failed: .*bad\.p4\(1\).*error"):
        _run(standins, "packet 0 00\n", prog="bad.p4")
    assert list((standins / "tmp").iterdir()) == []


def test_standin_switch_that_dies_is_reported(standins: Path) -> None:
    _install(standins / "bin", ["simple_switch"], "import sys\nprint('boom: no such device')\nsys.exit(3)\n")
    with pytest.raises(UserError, match="simple_switch exited with status 3 at start-up: boom"):
        _run(standins, "packet 0 00\n")
    assert list((standins / "tmp").iterdir()) == []


NO_PACKET_IN = """import socket, sys, time
port = int(sys.argv[sys.argv.index("--thrift-port") + 1])
srv = socket.create_server(("127.0.0.1", port))
time.sleep(60)
"""


def test_standin_switch_without_packet_interface_is_reported(standins: Path) -> None:
    # a BMv2 built without nanomsg has no --packet-in socket: one clear error, switch stopped
    _install(standins / "bin", ["simple_switch"], NO_PACKET_IN)
    with pytest.raises(UserError, match="cannot connect to its --packet-in socket.*built with nanomsg"):
        _run(standins, "packet 0 00\n")
    assert list((standins / "tmp").iterdir()) == []
    assert _running(standins / "bin" / "simple_switch") == []


def test_standin_switch_dying_mid_test_fails_it(standins: Path) -> None:
    result = _run(standins, "packet 1 01\nexpect 1 01\npacket 1 DEAD\nexpect 1 DEAD\n")
    assert not result.passed
    assert any("simple_switch exited during the test with status 7: Assertion failed" in e
               for e in result.errors), result.errors
    assert list((standins / "tmp").iterdir()) == []
