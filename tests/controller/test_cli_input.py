"""Hostile and careless ``dlcpctl`` input (issue 11): one-line ``file:line: key: message`` errors,
never a traceback, bounded memory, nothing written.

The regression cases come from an adversarial run against a fresh clone (binary and UTF-16 files,
``election_id: 2**128``, ``device_id: 1e23``, an alias bomb, ``policy: /etc/passwd``,
``queues: {depth: 0}``). The fuzz test pushes >= 1,000 mutated network and policy YAML files
through ``dlcpctl apply --dry-run`` in-process against real p4sim switches (so files that parse
reach the gRPC path too); ``DLCP_FUZZ_SECONDS`` runs it longer (``make fuzz``).
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import random
import resource
import time
from pathlib import Path

import pytest
from ctl_support import three_switch_yaml
from device_switch import DeviceSwitch, dlcp_yaml
from switch_proc import SwitchProcess

from controller.cli import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, EXIT_SWITCH, main

DEFAULT_POLICY = Path(__file__).resolve().parents[2] / "controller" / "data" / "default_policy.yaml"


def _run(path: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["-c", str(path), *argv])
    return code, out.getvalue(), err.getvalue()


def _one_line(err: str) -> bool:
    return err.startswith("dlcpctl: ") and err.count("\n") == 1


@pytest.fixture
def net_text() -> str:
    return three_switch_yaml([1, 2, 3])


def test_binary_file(tmp_path):
    path = tmp_path / "net.yaml"
    path.write_bytes(b"switches:\n  s1: \xff\xfe\x00 junk \x80\n")
    code, out, err = _run(path, "apply", "--dry-run")
    assert code == EXIT_INPUT and out == "" and _one_line(err)
    assert err == f"dlcpctl: {path}:2: not UTF-8 text (byte 0xff at offset 16); save the file as UTF-8\n"


def test_utf16_file_is_read_like_utf8(tmp_path, net_text):
    """YAML allows UTF-16 with a byte order mark: the same file in UTF-16 reaches the same error."""
    plain, wide = tmp_path / "plain.yaml", tmp_path / "wide.yaml"
    bad = net_text.replace("device_id: 2}", "device_id: -2}")
    plain.write_text(bad)
    wide.write_bytes(bad.encode("utf-16"))
    code, _, err = _run(wide, "apply", "--dry-run")
    assert code == EXIT_INPUT and _one_line(err)
    assert err.replace(str(wide), "F") == _run(plain, "apply", "--dry-run")[2].replace(str(plain), "F")
    assert ":6: switches.s2.device_id: " in err
    wide.write_bytes(b"\xff\xfe" + b"s\x00w\x00\x00\xd8")          # a lone surrogate: not UTF-16
    code, _, err = _run(wide, "status")
    assert code == EXIT_INPUT and _one_line(err) and "not UTF-16 text" in err


def test_election_id_wider_than_128_bits(tmp_path, net_text):
    path = tmp_path / "net.yaml"
    path.write_text(net_text + f"controller: {{election_id: {2 ** 128}}}\n")
    code, _, err = _run(path, "apply", "--dry-run")
    assert code == EXIT_INPUT and _one_line(err)
    assert err.startswith(f"dlcpctl: {path}:15: controller.election_id: {2 ** 128} does not fit P4Runtime's "
                          "128-bit election_id")


def test_switch_limits_checked_on_the_command_line(tmp_path, net_text, capsys):
    path = tmp_path / "net.yaml"
    path.write_text(net_text)
    with pytest.raises(SystemExit) as exc:
        main(["-c", str(path), "--election-id", str(2 ** 128), "status"])
    assert exc.value.code == 2 and "does not fit P4Runtime's 128-bit election id" in capsys.readouterr().err


@pytest.mark.parametrize("spelling", ["1e23", "1.0e+23", "2.0", "true"])
def test_device_id_spelled_as_float_or_bool(tmp_path, net_text, spelling):
    path = tmp_path / "net.yaml"
    path.write_text(net_text.replace("device_id: 1}", f"device_id: {spelling}}}"))
    code, _, err = _run(path, "apply", "--dry-run")
    assert code == EXIT_INPUT and _one_line(err)
    assert err.startswith(f"dlcpctl: {path}:5: switches.s1.device_id: expected an integer, got ")


def test_device_id_wider_than_64_bits(tmp_path, net_text):
    path = tmp_path / "net.yaml"
    path.write_text(net_text.replace("device_id: 1}", f"device_id: {2 ** 64}}}"))
    code, _, err = _run(path, "apply", "--dry-run")
    assert code == EXIT_INPUT and _one_line(err) and "does not fit P4Runtime's 64-bit device_id" in err


def _alias_bomb(levels: int = 9) -> str:
    lines = ['lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_fast_and_small(tmp_path, net_text):
    path = tmp_path / "net.yaml"
    path.write_text(net_text + _alias_bomb() + "policy:\n  thresholds: []\n  x: *l8\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    code, _, err = _run(path, "apply", "--dry-run")
    took = time.perf_counter() - t0
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert code == EXIT_INPUT and _one_line(err), err
    assert "aliases expand to more than" in err
    assert took < 5 and grew_mb < 100, (took, grew_mb)


def test_deep_nesting(tmp_path, net_text):
    path = tmp_path / "net.yaml"
    path.write_text(net_text + "policy: " + "[" * 900 + "]" * 900 + "\n")
    code, _, err = _run(path, "apply", "--dry-run")
    assert code == EXIT_INPUT and _one_line(err)


def test_policy_path_naming_another_file_is_not_echoed(tmp_path, net_text):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:the-secret-line:/root:/bin/bash\nline two\n")
    keyed = tmp_path / "keyed.yaml"
    keyed.write_text("API_TOKEN: the-secret-value\n")
    for target in ("/etc/passwd", str(secret), str(keyed)):
        path = tmp_path / "net.yaml"
        path.write_text(net_text + f"policy: {target}\n")
        code, out, err = _run(path, "apply", "--dry-run")
        assert code == EXIT_INPUT and out == "" and _one_line(err), err
        assert err.startswith(f"dlcpctl: {path}:15: policy: {target} is not a DLCP policy file")
        assert "root:" not in err and "secret" not in err.replace(str(secret), "") and "API_TOKEN" not in err


def test_queue_depth_the_switch_refuses_is_refused_before_anything_is_written(tmp_path):
    sw = DeviceSwitch(1)
    try:
        path = tmp_path / "net.yaml"
        good = dlcp_yaml([sw.port, 1, 2]).replace("  s2: {grpc", "  #s2: {grpc").replace(
            "  s3: {grpc", "  #s3: {grpc").split("hosts:")[0]
        line = good.count("\n") + 1
        for bad, key in (("queues: {depth: 0}\n", "queues.depth"), ("queues: {depth: 4294967296}\n", "queues.depth")):
            path.write_text(good + bad)
            code, out, err = _run(path, "apply")
            assert code == EXIT_INPUT and out == "" and _one_line(err), err
            assert err.startswith(f"dlcpctl: {path}:{line}: {key}: queue depth ")
            assert all(len(t) == 0 for t in sw.device.pipeline.tables.values())
        path.write_text(good.replace("  s1: {grpc", "  s1: {ports: {1: {depth: 0}}, grpc"))
        code, _, err = _run(path, "apply")
        assert code == EXIT_INPUT and ": switches.s1.ports.1.depth: queue depth 0 is not in 1.." in err
        assert all(len(t) == 0 for t in sw.device.pipeline.tables.values())
    finally:
        sw.stop()


@pytest.mark.parametrize("value", ["!!timestamp 2001-12-14x", "!!int abc", "!!float x", "!!bool maybe",
                                   "!!timestamp 2001-13-45"])
def test_tagged_values_pyyaml_cannot_construct(tmp_path, net_text, value):
    """Found by the fuzz test: PyYAML raises AttributeError/ValueError/KeyError on these."""
    path = tmp_path / "net.yaml"
    path.write_text(net_text.replace("device_id: 1}", f"device_id: {value}}}"))
    code, _, err = _run(path, "status")
    assert code == EXIT_INPUT and _one_line(err) and err.startswith(f"dlcpctl: {path}:5: cannot read the ")


def test_nul_in_a_file_name(tmp_path, net_text):
    """Found by the fuzz test: open() raises ValueError on a NUL in a path."""
    path = tmp_path / "net.yaml"
    path.write_text(net_text + 'policy: "pol\\u0000icy.yaml"\n')
    code, _, err = _run(path, "status")
    assert code == EXIT_INPUT and err == f"dlcpctl: {path}:15: policy: a file name cannot contain a NUL character\n"


# --- fuzzing ----------------------------------------------------------------------------------

HOSTILE_SCALARS = [
    "1e23", "-1", "0", "2.5", str(2 ** 128), str(10 ** 400), "null", "~", "[]", "{}", "''", "yes", "0x1F",
    "0o17", ".inf", "-.inf", ".nan", "!!binary aGVsbG8=", "!!python/object/apply:os.system ['id']",
    "*undefined", "&a", "'\\x00'", '"\\u0000"', "\t", "x" * 5000, "ü€😀", "- a", ": b", "? c", "%TAG",
    "!!set {a, b}", "!!timestamp 2001-12-14", "2001-12-14", "0b101", "+12", "1_000", "=", "<<: *x",
    "/etc/passwd", "../../../../etc/shadow", "{a: &x [*x]}", "1:2:3", "127.0.0.1:99999", "s1:999",
]


def _mutate(text: str, rng: random.Random) -> bytes:
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(10)
    if kind == 0 and lines:                                   # replace a value with a hostile one
        i = rng.randrange(len(lines))
        head, sep, _ = lines[i].partition(": ")
        lines[i] = (head + sep if sep else "") + rng.choice(HOSTILE_SCALARS) + "\n"
    elif kind == 1 and lines:                                 # a token inside a flow mapping
        i = rng.randrange(len(lines))
        parts = lines[i].split(" ")
        parts[rng.randrange(len(parts))] = rng.choice(HOSTILE_SCALARS)
        lines[i] = " ".join(parts)
    elif kind == 2 and lines:                                 # drop, duplicate or swap lines
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        op = rng.randrange(3)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[j])
        else:
            lines[i], lines[j] = lines[j], lines[i]
    elif kind == 3 and lines:                                 # indentation
        i = rng.randrange(len(lines))
        lines[i] = " " * rng.randrange(0, 9) + lines[i].lstrip(" ")
    elif kind == 4:                                           # alias bombs and anchors
        lines.append(rng.choice(["x: &a [1]\n", _alias_bomb(rng.randrange(2, 10)), "y: *a\n",
                                 "<<: *nothing\n", "z: &r {k: *r}\n"]))
    elif kind == 5:                                           # new keys, wrong places
        lines.insert(rng.randrange(len(lines) + 1),
                     rng.choice(["controller: {election_id: 0}\n", "queues: {depth: 0, rate_pps: -5}\n",
                                 "policy: {queues: 99}\n", "routes: [{switch: s9, prefix: 1/40, ports: [1]}]\n",
                                 "hosts: 7\n", "links: [[s1:1]]\n", "switches: {}\n", "derive_routes: maybe\n"]))
    data = "".join(lines).encode()
    if kind == 6 and data:                                    # raw bytes
        for _ in range(rng.randrange(1, 8)):
            pos = rng.randrange(len(data))
            data = data[:pos] + bytes([rng.randrange(256)]) + data[pos + 1:]
    elif kind == 7 and data:                                  # truncation
        data = data[: rng.randrange(len(data))]
    elif kind == 8:                                           # another encoding
        data = "".join(lines).encode(rng.choice(["utf-16", "utf-16-le", "utf-32", "latin-1"]), errors="replace")
    elif kind == 9 and data:                                  # a run of random bytes
        pos = rng.randrange(len(data))
        data = data[:pos] + rng.randbytes(rng.randrange(1, 64)) + data[pos:]
    return data


def _fuzz_seed(tmp_path: Path, sw: SwitchProcess) -> str:
    """A one-switch network using most of the YAML (hosts, routes, queues, ports, controller); the
    P4Info in binary form so a file that parses costs one quick dry run against the live switch."""
    from device_switch import dlcp_program
    from switch_proc import compiled_dlcp
    _, config = compiled_dlcp()
    p4info = tmp_path / "dlcp.p4info.bin"
    p4info.write_bytes(dlcp_program().p4info.SerializeToString())
    return (f"defaults:\n  target: p4sim\n  pipeline: {{p4info: {p4info}, config: {config}}}\n"
            "controller: {election_id: 7, timeout: 5, batch_size: 100}\n"
            "switches:\n"
            f'  s1: {{grpc: "{sw.grpc_addr}", device_id: 1, mac: "02:00:00:00:01:00",\n'
            "       ports: {1: {depth: 32}, 2: {rate_pps: 1000}}}\n"
            "hosts:\n"
            '  h1: {ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}\n'
            '  h2: {ip: 10.0.0.2, mac: "00:00:00:00:00:02", switch: s1, port: 2}\n'
            "routes:\n"
            "  - {switch: s1, prefix: 10.1.0.0/16, ports: [1, 2], spray: true}\n"
            "queues: {depth: 64, rate_mbps: 20}\n"       # the policy (a copy of the shipped one) gives delays
            "policy: policy.yaml\n")


RSS_EVERY = 20      # files between two RSS samples of the fuzz run


def _rss_kib() -> int:
    """This process's current resident set (``ru_maxrss`` is the peak: it cannot show growth)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.mark.fuzz
def test_fuzz_yaml_through_apply_dry_run(tmp_path):
    """>= 1,000 mutated network/policy files: every one ends in a documented exit code and, when
    refused, in exactly one ``dlcpctl:`` line; no traceback; RSS flat within 10 %."""
    seconds = float(os.environ.get("DLCP_FUZZ_SECONDS", "0"))
    minimum = 1000
    sw = SwitchProcess(tmp_path, 1)        # its own process: RSS here is the controller's alone
    sw.start()
    try:
        net = _fuzz_seed(tmp_path, sw)
        # comments carry no meaning: mutating them only repeats the seed's dry run
        policy = "".join(ln for ln in DEFAULT_POLICY.read_text().splitlines(keepends=True)
                         if ln.strip() and not ln.lstrip().startswith("#"))
        (tmp_path / "policy.yaml").write_text(policy)
        path = tmp_path / "net.yaml"
        path.write_text(net)
        code, _, err = _run(path, "apply", "--dry-run")
        assert code == EXIT_OK, err                           # the seed itself is fine
        rng = random.Random(int(os.environ.get("DLCP_FUZZ_SEED", "11")))
        # what the runs leave behind: live objects after a full collection, and the process's
        # current RSS every RSS_EVERY files (last 10 % of the samples within 10 % of the first
        # 10 %: flat however long the run; was +440 MB in 200 s when GC pauses kept cycles)
        gc.collect()
        objects0 = len(gc.get_objects())
        rss: list[int] = []
        codes: dict[int, int] = {}
        seen: set[int] = set()
        t0 = time.monotonic()
        done = 0
        while done < minimum or time.monotonic() - t0 < seconds:
            mutate_policy = rng.random() < 0.4
            case_net = net.encode() if mutate_policy else _mutate(net, rng)
            case_policy = _mutate(policy, rng) if mutate_policy else policy.encode()
            if hash((case_net, case_policy)) in seen:
                continue                                      # the same files again: nothing new
            seen.add(hash((case_net, case_policy)))
            path.write_bytes(case_net)
            (tmp_path / "policy.yaml").write_bytes(case_policy)
            try:
                code, _, err = _run(path, "apply", "--dry-run")
            except Exception as exc:                          # noqa: BLE001 - the finding itself
                pytest.fail(f"case {done}: {type(exc).__name__}: {exc} (net {case_net[:400]!r}, "
                            f"policy {case_policy[:400] if mutate_policy else 'as shipped'!r})")
            assert code in (EXIT_OK, EXIT_INPUT, EXIT_SWITCH, EXIT_PARTIAL), (code, err, case_net[:300])
            if code != EXIT_OK:
                assert err.startswith("dlcpctl: ") and "Traceback" not in err, (err, case_net[:300])
            if code == EXIT_INPUT:
                assert err.count("\n") == 1, (err, case_net[:300])
            codes[code] = codes.get(code, 0) + 1
            done += 1
            if done % RSS_EVERY == 0:
                rss.append(_rss_kib())
        elapsed = time.monotonic() - t0
        gc.collect()
        left = len(gc.get_objects()) - objects0
        tenth = max(1, len(rss) // 10)
        first, last = sum(rss[:tenth]) / tenth, sum(rss[-tenth:]) / tenth
        print(f"fuzz: {done} files in {elapsed:.1f}s, exit codes {dict(sorted(codes.items()))}, "
              f"{left} objects left behind, RSS {first:.0f} -> {last:.0f} KiB (first/last 10 %)")
        assert codes.get(EXIT_INPUT, 0) > done // 4 and codes.get(EXIT_OK, 0) > 0   # both paths exercised
        assert left < 5000
        assert last <= first * 1.10, f"RSS grew {first:.0f} -> {last:.0f} KiB over {done} files"
    finally:
        sw.stop()
