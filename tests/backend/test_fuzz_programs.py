"""Issue 11: mutated P4 programs through p4sim's front end and back end, at volume.

Mutations of the project's own programs (the STF corpus, the front-end test programs, the DLCP
program) -- span deletions and duplications, line swaps, identifier and number substitutions
(extreme widths and values), and hostile insertions (quotes, non-ASCII, macro bombs,
non-advancing parser loops). Every mutant must either compile (then it is loaded and three
packets go through it) or be refused with one ``UserError`` line; a traceback, an ``internal
error`` message or a mutant taking longer than ``PER_PROGRAM_SECONDS`` (a hang) fails the test
and names the seed that reproduces it; the process's RSS over the last 10 % of the run must stay
within 10 % of the first 10 %.

Budget: at least ``MINIMUM`` mutants, about 60-90 s on a shared 2-core machine in ``make test``;
``DLCP_FUZZ_SECONDS`` (``make fuzz``) keeps going for that many seconds.
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from pathlib import Path

import pytest

from p4sim.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
MINIMUM = 1000
PER_PROGRAM_SECONDS = 20
ONE_LINE = re.compile(r"^[^\n]*\S[^\n]*$")

HOSTILE = ["'", '"', "\\", "\u00e9", "\u2028", "\x00", "bit<4097>", "bit<(1 << 40)>", "9" * 700,
           "0x" + "f" * 1200, "1w0", "2048w1", "-1", "(", ")", "{", "}", ";", "<", ">", "?", ":",
           "@name(\"'+__import__('os').system('id')+'\")", '@name("a\\nb")', "#define X X X\n",
           "#include \"/etc/passwd\"\n", "#include <v1model.p4>\n", "#if 1\n", "#endif\n",
           "transition start;", "state start { transition start; }", "exit;", "return;",
           "apply", "table", "action", "control", "parser", "extern", "header", "struct",
           "true ? 1 : 0", "[1 << 30]", "[0:0]", "[4095:0]", "<<", ">>", "&&&", "..", "++",
           "_", "default", "this", "error.NoMatch", "{ }", "(bit<8>)", "(int<8>)", "<bit<8>>"]
NUMBERS = ["0", "1", "2048", "2049", "4096", "65537", "4294967296", "18446744073709551616",
           "(1 << 30)", "-1", "8w255", "1s1"]


def sources() -> list[tuple[Path, str]]:
    files = sorted((ROOT / "tests/stf/corpus").glob("*.p4")) + \
        sorted((ROOT / "tests/frontend/programs").glob("*.p4"))
    files.append(ROOT / "p4src/bmv2/dlcp.p4")
    return [(f, f.read_text()) for f in files]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        n = len(text)
        p = rng.randrange(n) if n else 0
        if kind < 0.2:                                   # delete a span
            text = text[:p] + text[p + rng.randint(1, 40):]
        elif kind < 0.3:                                 # duplicate a span
            q = min(n, p + rng.randint(1, 200))
            text = text[:q] + text[p:q] + text[q:]
        elif kind < 0.4:                                 # swap two lines
            lines = text.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind < 0.55:                                # one identifier for another
            names = re.findall(r"\b[A-Za-z_]\w*\b", text)
            if names:
                a, b = rng.choice(names), rng.choice(names)
                text = re.sub(rf"\b{re.escape(a)}\b", lambda _m, b=b: b if rng.random() < 0.5 else _m.group(0), text)
        elif kind < 0.75:                                # a number for an extreme one
            nums = list(re.finditer(r"\b\d+\b", text))
            if nums:
                m = rng.choice(nums)
                text = text[:m.start()] + rng.choice(NUMBERS) + text[m.end():]
        elif kind < 0.95:                                # hostile insertion
            text = text[:p] + " " + rng.choice(HOSTILE) + " " + text[p:]
        else:                                            # truncation
            text = text[:p]
    return text


RSS_EVERY = 25      # mutants between two RSS samples (memory flat within 10 % over the run)


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def run_one(path: Path, include: Path, rng: random.Random) -> str:
    """'ok' or 'refused'; raises on a traceback-worthy failure."""
    from p4sim.backend.program import compile_file
    from p4sim.v1model.pipeline import V1ModelPath

    try:
        program = compile_file(str(path), [str(include), str(ROOT / "p4src/include")])
    except UserError as err:
        message = str(err)
        assert ONE_LINE.match(message), repr(message[:300])
        assert "internal error" not in message, message[:300]
        return "refused"
    v1 = V1ModelPath(program.instantiate())
    for _ in range(3):
        v1.process(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80))), rng.randrange(8))
    return "ok"


@pytest.mark.fuzz
def test_fuzz_mutated_programs_through_front_and_back_end(tmp_path):
    seconds = float(os.environ.get("DLCP_FUZZ_SECONDS", "0"))
    seed = int(os.environ.get("DLCP_FUZZ_SEED", "20261201"))
    rng = random.Random(seed)
    base = sources()
    small = [s for s in base if len(s[1]) < 6000]
    counts = {"ok": 0, "refused": 0}
    rss: list[int] = []                   # current RSS every RSS_EVERY mutants
    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        i = 0
        while i < MINIMUM or time.monotonic() - start < seconds:
            origin, text = rng.choice(base if rng.random() < 0.02 else small)
            mutant_seed = rng.randrange(1 << 32)
            mutant = mutate(text, random.Random(mutant_seed))
            path = tmp_path / f"m{i % 4}.p4"
            path.write_text(mutant, encoding="utf-8", errors="surrogatepass")
            signal.alarm(PER_PROGRAM_SECONDS)
            try:
                counts[run_one(path, origin.parent, random.Random(mutant_seed))] += 1
            except Hang:
                pytest.fail(f"mutant {i} of {origin.name} (mutation seed {mutant_seed}) ran over "
                            f"{PER_PROGRAM_SECONDS} s")
            except AssertionError as err:
                pytest.fail(f"mutant {i} of {origin.name} (mutation seed {mutant_seed}): {err}")
            except Exception as err:  # noqa: BLE001 - any other exception is the bug this finds
                pytest.fail(f"mutant {i} of {origin.name} (mutation seed {mutant_seed}) raised "
                            f"{type(err).__name__}: {err}")
            finally:
                signal.alarm(0)
            i += 1
            if i % RSS_EVERY == 0:
                rss.append(_rss_kib())
    finally:
        signal.signal(signal.SIGALRM, old)
    elapsed = time.monotonic() - start
    tenth = max(1, len(rss) // 10)
    first, last = sum(rss[:tenth]) / tenth, sum(rss[-tenth:]) / tenth
    print(f"fuzz: {i} mutants in {elapsed:.0f} s: {counts['ok']} compiled and ran packets, "
          f"{counts['refused']} refused with one line; RSS {first:.0f} -> {last:.0f} KiB (first/last 10 %)")
    assert i >= MINIMUM
    assert last <= first * 1.10, f"RSS grew {first:.0f} -> {last:.0f} KiB over {i} mutants"
    assert counts["ok"] >= i // 20      # mutations still leave many programs valid
    assert counts["refused"] >= i // 2


# --- findings of the long runs (``make fuzz``), kept fixed ------------------------------------

SUB_PARSER = ROOT / "tests/stf/corpus/sub_parser.p4"


@pytest.mark.parametrize("blocks, message", [
    # mutant 2530 of sub_parser.p4, seed 104851484 (2026-12-01): M is bit<1> in P, I and E but
    # meta_t in VC and CC; the code generator failed with "AttributeError: 'BitT' object has no
    # attribute 'name'" (p4c: "Type of argument 'E' ... does not match")
    (("P", "I", "E"), "type of argument 'VC' does not match V1Switch: its M is meta_t, but bit<1> in 'P'"),
    # the same M in every block but not a struct (p4c-bm2-ss: "expected the user metadata type to
    # be a struct")
    (("P", "VC", "I", "E", "CC"), "bit<1>: expected the user metadata type of V1Switch to be a struct"),
])
def test_v1switch_type_arguments_must_agree_and_be_structs(tmp_path, blocks, message):
    text = SUB_PARSER.read_text()
    for name in blocks:
        text = re.sub(rf"((?:parser|control) {name}\(.*?)inout meta_t meta", r"\1inout bit meta", text)
    assert text.count("inout bit meta") == len(blocks)
    path = tmp_path / "m.p4"
    path.write_text(text)
    from p4sim.backend.program import compile_file
    with pytest.raises(UserError) as err:
        compile_file(str(path), [str(SUB_PARSER.parent)])
    assert ONE_LINE.match(str(err.value)) and message in str(err.value), str(err.value)
