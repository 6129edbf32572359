"""Runnable examples of docs/*.md: find them, run them, compare what they print with the doc.

Why: docs rot silently (a documented ``p4sim compile`` lacked its ``-I``, commands were not on
PATH as the docs assumed; issue 16). A fenced block preceded by the marker

    <!-- runnable -->
    <!-- runnable: switch=1,127.0.0.1:50051,127.0.0.1:9091 requires=simple_switch -->
    <!-- runnable: file=net.yaml -->

is run by ``tests/docs/test_doc_examples.py`` (the marker syntax is documented in docs/README.md).
A block is either a transcript (lines ``$ COMMAND``, then the output the doc shows, optionally
``[exit N]``) or, without any ``$`` line, a list of commands (one per line, ``\\`` continues a
line, ``#`` starts a comment) that must each exit 0. ``file=NAME`` writes the block to NAME
instead of running it. Each doc is one session: its runnable blocks run in order, in one temporary
directory that holds symlinks to the repository's top-level entries (so ``p4src/...`` resolves and
outputs such as ``build/`` stay in the temporary directory), with the venv's ``bin`` first on PATH
(what ``. .venv/bin/activate`` does).

Output comparison: every non-blank output line the doc shows must appear, in the doc's order, among
the lines the command printed (stdout and stderr), with runs of whitespace compared as one space
(column widths may change) and ``...`` standing for any text. Extra printed lines are allowed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^\s*<!--\s*runnable(?::\s*(?P<opts>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<info>[\w+-]*)\s*$")
EXIT = re.compile(r"^\[exit (?P<code>\d+)\]$")
OPTION_KEYS = {"switch", "switch-args", "file", "requires", "root", "timeout"}


def shown(path: Path) -> str:
    """``path`` as messages name it: relative to the repository when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class DocError(Exception):
    """A marker or block that cannot be understood: ``file:line: message``."""


@dataclass
class Command:
    line: int                       # line of the doc where the command is
    text: str                       # the shell command as written
    raw: list[str] = field(default_factory=list)        # its lines in the doc (continuations)
    expected: list[str] = field(default_factory=list)   # output lines the doc shows
    exit_code: int = 0
    exit_shown: bool = False        # the doc has an ``[exit N]`` line for it


@dataclass
class SwitchSpec:
    device_id: int
    grpc: str                       # the addresses as the doc spells them
    ctl: str


@dataclass
class Block:
    doc: Path
    line: int                       # line of the marker
    options: dict[str, list[str]]
    body: list[str]
    commands: list[Command]
    body_start: int = 0             # line of the first body line

    @property
    def where(self) -> str:
        return f"{shown(self.doc)}:{self.line}"

    @property
    def file(self) -> str | None:
        return self.options.get("file", [None])[0]

    @property
    def switches(self) -> list[SwitchSpec]:
        out = []
        for spec in self.options.get("switch", []):
            parts = spec.split(",")
            if len(parts) != 3 or not parts[0].isdigit():
                raise DocError(f"{self.where}: switch={spec!r}: expected DEVICE_ID,GRPC_ADDR,CTL_ADDR")
            out.append(SwitchSpec(int(parts[0]), parts[1], parts[2]))
        return out

    @property
    def switch_args(self) -> list[str]:
        return [a for v in self.options.get("switch-args", []) for a in shlex.split(v)]

    @property
    def requires(self) -> list[str]:
        return [p for v in self.options.get("requires", []) for p in v.split(",") if p]

    @property
    def timeout(self) -> float:
        return float(self.options.get("timeout", ["120"])[0])


def parse_options(text: str, where: str) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    for word in shlex.split(text or ""):
        key, _, value = word.partition("=")
        if key not in OPTION_KEYS:
            raise DocError(f"{where}: unknown runnable option {key!r} (known: {', '.join(sorted(OPTION_KEYS))})")
        options.setdefault(key, []).append(value)
    return options


def join_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str, list[str]]]:
    """``(line, text, raw lines)`` with lines ending in a backslash joined to the next."""
    out: list[tuple[int, str, list[str]]] = []
    pending: tuple[int, str, list[str]] | None = None
    for no, text in lines:
        if pending is not None:
            pending = (pending[0], pending[1][:-1] + " " + text.strip(), pending[2] + [text])
        else:
            pending = (no, text, [text])
        if not pending[1].rstrip().endswith("\\"):
            out.append(pending)
            pending = None
        else:
            pending = (pending[0], pending[1].rstrip(), pending[2])
    if pending is not None:
        out.append(pending)
    return out


def parse_commands(body: list[tuple[int, str]], where: str) -> list[Command]:
    if any(text.startswith("$ ") for _, text in body):
        commands: list[Command] = []
        lines = iter(join_continuations(body))
        for no, text, raw in lines:
            if text.startswith("$ "):
                commands.append(Command(no, text[2:].strip(), raw))
            elif not commands:
                if text.strip():
                    raise DocError(f"{where}: line {no}: output before the first '$ ' command")
            elif m := EXIT.match(text.strip()):
                commands[-1].exit_code, commands[-1].exit_shown = int(m["code"]), True
            elif text.strip():
                commands[-1].expected.extend(raw)
        return commands
    return [Command(no, text.strip(), raw) for no, text, raw in join_continuations(body)
            if text.strip() and not text.lstrip().startswith("#")]


def find_blocks(doc: Path) -> list[Block]:
    """The runnable blocks of one Markdown file, in order."""
    lines = doc.read_text().splitlines()
    blocks = []
    i = 0
    open_fence: str | None = None           # markers shown inside a code block are examples, not markers
    while i < len(lines):
        fence_line = FENCE.match(lines[i]) or re.match(r"^(?P<fence>```+|~~~+)", lines[i])
        if open_fence is not None:
            if lines[i].startswith(open_fence) and not lines[i].strip(open_fence[0]).strip():
                open_fence = None
            i += 1
            continue
        if fence_line:
            open_fence = fence_line["fence"]
            i += 1
            continue
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        where = f"{shown(doc)}:{i + 1}"
        options = parse_options(m["opts"], where)
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        fence = FENCE.match(lines[j]) if j < len(lines) else None
        if fence is None:
            raise DocError(f"{where}: runnable marker not followed by a fenced code block")
        end = j + 1
        while end < len(lines) and not lines[end].startswith(fence["fence"]):
            end += 1
        if end == len(lines):
            raise DocError(f"{where}: code block opened on line {j + 1} is not closed")
        body = [(k + 1, lines[k]) for k in range(j + 1, end)]
        block = Block(doc, i + 1, options, [t for _, t in body], [], body_start=j + 2)
        if block.file is None:
            block.commands = parse_commands(body, where)
            if not block.commands:
                raise DocError(f"{where}: runnable block has no command")
        blocks.append(block)
        i = end + 1
    return blocks


def normalize(text: str) -> str:
    return " ".join(text.split())


def line_matches(expected: str, actual: str) -> bool:
    parts = [re.escape(p) for p in normalize(expected).split("...")]
    return re.fullmatch(".*".join(parts), normalize(actual)) is not None


def missing_lines(expected: list[str], output: str) -> list[str]:
    """Expected lines not found, in order, among ``output``'s lines (empty: all found)."""
    actual = output.splitlines()
    pos = 0
    for k, want in enumerate(expected):
        while pos < len(actual) and not line_matches(want, actual[pos]):
            pos += 1
        if pos == len(actual):
            return expected[k:]
        pos += 1
    return []


class DocSwitch:
    """One ``p4sim switch --no-p4`` process on free loopback ports, started for a doc example."""

    def __init__(self, spec: SwitchSpec, workdir: Path, extra: list[str]) -> None:
        self.spec = spec
        self.log = workdir / f"doc-switch-{spec.device_id}.log"
        argv = [str(Path(sys.executable).parent / "p4sim"), "switch", "--no-p4", "--device-id",
                str(spec.device_id), "--name", f"s{spec.device_id}", "--grpc-server-addr", "127.0.0.1:0",
                "--ctl-addr", "127.0.0.1:0", "--packet-in", f"ipc://{workdir}/s{spec.device_id}.ipc",
                "--log-file", str(self.log), *extra]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        grpc = re.search(r"grpc=(\S+)", line)
        ctl = re.search(r"ctl=(\S+)", line)
        if "ready" not in line or not grpc or not ctl:
            self.stop()
            raise RuntimeError(f"p4sim switch {spec.device_id} did not start: {line!r}")
        self.grpc, self.ctl = grpc[1], ctl[1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout:
            self.proc.stdout.close()


def session_dir(tmp: Path) -> Path:
    """A directory that looks like the repository root but writes into ``tmp``."""
    for entry in ROOT.iterdir():
        if entry.name in {"build", "results", ".git"} or entry.name.startswith(".pytest"):
            continue
        (tmp / entry.name).symlink_to(entry)
    return tmp


def activated_env(base: dict[str, str]) -> dict[str, str]:
    """The environment after ``. .venv/bin/activate``: the venv's bin first on PATH."""
    venv_bin = Path(sys.executable).parent
    env = dict(base)
    env["PATH"] = f"{venv_bin}:{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_bin.parent)
    env.pop("PYTHONHOME", None)
    return env


@dataclass
class Failure:
    where: str
    command: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: $ {self.command}\n{self.message}"


class Session:
    """The runnable blocks of one doc, run in order in one directory."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self.switches: dict[int, DocSwitch] = {}
        self.substitutions: dict[str, str] = {}
        self.results: dict[int, tuple[int, str]] = {}      # command line -> (exit status, output)

    def substitute(self, text: str) -> str:
        for doc_addr, real in self.substitutions.items():
            text = text.replace(doc_addr, real)
        return text

    def start_switches(self, block: Block) -> None:
        for spec in block.switches:
            if spec.device_id not in self.switches:
                sw = DocSwitch(spec, self.workdir, block.switch_args)
                self.switches[spec.device_id] = sw
                self.substitutions[spec.grpc] = sw.grpc
                self.substitutions[spec.ctl] = sw.ctl

    def run_block(self, block: Block) -> list[Failure]:
        self.start_switches(block)
        if block.file is not None:
            target = self.workdir / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.substitute("\n".join(block.body) + "\n"))
            return []
        failures = []
        for cmd in block.commands:
            where = f"{shown(block.doc)}:{cmd.line}"
            started = time.monotonic()
            try:
                done = subprocess.run(["bash", "-c", self.substitute(cmd.text)], cwd=self.workdir,
                                      env=self.env, capture_output=True, text=True, timeout=block.timeout,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                failures.append(Failure(where, cmd.text, f"did not finish in {block.timeout:.0f} s"))
                continue
            output = done.stdout + done.stderr
            took = time.monotonic() - started
            self.results[cmd.line] = (done.returncode, output)
            if done.returncode != cmd.exit_code:
                failures.append(Failure(where, cmd.text, f"exit status {done.returncode}, the doc says "
                                        f"{cmd.exit_code} ({took:.1f} s); output:\n{output[-2000:]}"))
                continue
            lost = missing_lines([self.substitute(x) for x in cmd.expected], output)
            if lost:
                failures.append(Failure(where, cmd.text, f"output no longer shows:\n  {lost[0]}\n"
                                        f"({len(lost)} of {len(cmd.expected)} doc lines not found in order); "
                                        f"output:\n{output[-3000:]}"))
        return failures

    def unsubstitute(self, text: str) -> str:
        for doc_addr, real in self.substitutions.items():
            text = text.replace(real, doc_addr)
        return text

    def close(self) -> None:
        for sw in self.switches.values():
            sw.stop()


def transcript_body(block: Block, session: Session) -> list[str]:
    """``block``'s transcript with each command's output as it is now (after ``run_block``)."""
    lines: list[str] = []
    separated = any(not line.strip() for line in block.body)
    for k, cmd in enumerate(block.commands):
        code, output = session.results.get(cmd.line, (cmd.exit_code, "\n".join(cmd.expected)))
        lines += cmd.raw
        lines += [session.unsubstitute(line).rstrip() for line in output.splitlines()]
        if cmd.exit_shown or code != 0:
            lines.append(f"[exit {code}]")
        if separated and k < len(block.commands) - 1:
            lines.append("")
    return lines


def update_doc(doc: Path, workdir: Path) -> list[Failure]:
    """Run ``doc``'s runnable blocks and write each transcript's real output back into the doc
    (for a deliberate change of behaviour; review the diff). Returns what failed to run."""
    blocks = find_blocks(doc)
    session = Session(session_dir(workdir), activated_env(dict(os.environ)))
    failures: list[Failure] = []
    try:
        for block in blocks:
            if missing_tools(block, session.env["PATH"]):
                continue
            failures += session.run_block(block)
    finally:
        session.close()
    lines = doc.read_text().splitlines()
    for block in reversed(blocks):
        if block.file is None and any(c.raw[0].startswith("$ ") for c in block.commands):
            start = block.body_start - 1
            lines[start:start + len(block.body)] = transcript_body(block, session)
    doc.write_text("\n".join(lines) + "\n")
    return failures


def main(argv: list[str]) -> int:
    """``python tests/docs/doc_examples.py --update docs/X.md``: refresh the doc's transcripts."""
    import tempfile
    if len(argv) != 2 or argv[0] != "--update":
        print("usage: python tests/docs/doc_examples.py --update docs/FILE.md", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="doc-update-") as tmp:
        failures = update_doc(Path(argv[1]).resolve(), Path(tmp))
    for failure in failures:
        print(f"note: {failure.where}: $ {failure.command}: {failure.message.splitlines()[0]}", file=sys.stderr)
    return 0


def missing_tools(block: Block, path: str) -> list[str]:
    """The programs ``requires=`` names that are not on ``path``."""
    return [tool for tool in block.requires if shutil.which(tool, path=path) is None]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
