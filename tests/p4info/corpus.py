"""Which programs the P4Info comparison covers, and what p4c wrote for each (issue 14).

Every v1model program under ``p4src/`` and ``tests/`` is compared with p4c's P4Info. Running
p4c on all of them takes minutes, so ``p4c_p4info.json`` (beside this file) keeps, per
program, the SHA-256 of its source (``source``) and of the canonical text p4c 1.2.5 wrote for
it (``p4c``, comment lines dropped; ``null`` where p4c refuses the program). An entry whose
source changed since is stale: the test then asks p4c itself when it is on PATH. Regenerate
the table with p4c on PATH:

    . ../shared/p4ref/env.sh && .venv/bin/python -m tests.p4info.corpus

which also prints where p4sim's P4Info differs from p4c's.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIGESTS = Path(__file__).with_name("p4c_p4info.json")
_V1SWITCH = re.compile(r"\bV1Switch\s*\(")


def canonical(text: str) -> str:
    """P4Info text without p4c's comment header and blank lines."""
    return "\n".join(line for line in text.splitlines() if line and not line.startswith("#")) + "\n"


def digest(text: str) -> str:
    return hashlib.sha256(canonical(text).encode()).hexdigest()


def programs() -> list[str]:
    """Top-level v1model programs under p4src/ and tests/, relative to the checkout."""
    found = []
    for top in ("p4src", "tests"):
        for path in sorted((ROOT / top).rglob("*.p4")):
            if _V1SWITCH.search(path.read_text(errors="replace")):
                found.append(path.relative_to(ROOT).as_posix())
    return found


def source_digest(rel: str) -> str:
    """SHA-256 of what the program is compiled from (for p4src/, every .p4 file there)."""
    files = sorted((ROOT / "p4src").rglob("*.p4")) if rel.startswith("p4src/") else [ROOT / rel]
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def include_dirs(rel: str) -> list[str]:
    return [str(ROOT / "p4src" / "include")] if rel.startswith("p4src/") else []


def p4c_p4info(rel: str, timeout: float = 300) -> str | None:
    """The P4Info text p4c writes for ``rel``, or None when p4c refuses the program.

    Asked once per program source in a process: the tutorials are both kept files and corpus
    programs, so the suite used to run p4c twice on each (0.5 s of CPU a time)."""
    return _p4c_p4info(rel, source_digest(rel), timeout)


@functools.cache
def _p4c_p4info(rel: str, source: str, timeout: float) -> str | None:
    with tempfile.TemporaryDirectory() as out:
        target = Path(out) / "p4c.p4info.txtpb"
        cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", "-o", out, "--p4runtime-files", str(target)]
        for d in include_dirs(rel):
            cmd += ["-I", d]
        done = subprocess.run([*cmd, str(ROOT / rel)], capture_output=True, timeout=timeout)
        return target.read_text() if done.returncode == 0 else None


def p4sim_p4info(rel: str) -> str:
    from p4sim.backend.p4info import to_text
    from p4sim.backend.program import compile_file

    return to_text(compile_file(str(ROOT / rel), include_dirs(rel)).p4info)


def load_digests() -> dict[str, dict[str, str | None]]:
    return json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}


def main(argv: list[str] | None = None) -> int:
    """Rewrite ``p4c_p4info.json`` from the p4c on PATH (``--resume``: keep entries whose
    source is unchanged); print where p4sim's P4Info differs from p4c's."""
    resume = "--resume" in (argv if argv is not None else sys.argv[1:])
    old = load_digests() if resume and DIGESTS.exists() else {}
    table: dict[str, dict[str, str | None]] = {}
    differing = 0
    for rel in programs():
        source = source_digest(rel)
        if rel in old and old[rel]["source"] == source:
            table[rel] = old[rel]
            continue
        want = p4c_p4info(rel)
        table[rel] = {"source": source, "p4c": None if want is None else digest(want)}
        if want is None:
            print(f"p4c refuses  {rel}", flush=True)
        else:
            try:
                got = p4sim_p4info(rel)
            except Exception as err:      # noqa: BLE001 -- reported, the survey goes on
                got = None
                print(f"p4sim fails  {rel}: {str(err).splitlines()[0]}", flush=True)
            if got is not None and canonical(got) != canonical(want):
                print(f"differs      {rel}", flush=True)
                diff = difflib.unified_diff(canonical(want).splitlines(), canonical(got).splitlines(),
                                            "p4c", "p4sim", lineterm="", n=1)
                print("\n".join("    " + line for line in list(diff)[:40]), flush=True)
            elif got is not None:
                print(f"same         {rel}", flush=True)
            differing += got is None or canonical(got) != canonical(want)
        DIGESTS.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")   # resumable
    DIGESTS.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{len(table)} programs, p4c accepts {sum(v['p4c'] is not None for v in table.values())}, "
          f"p4sim differs on {differing} of those (re)compared; wrote {DIGESTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
