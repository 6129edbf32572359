"""The README's set-up: two commands, and the note that puts the project's commands on PATH.

Why: after ``make`` the commands the docs call by name (``p4sim``, ``dlcpctl``, ``dlcp-agent``,
``dlcp-exp``) were only in ``.venv/bin`` and nothing said so (issue 16). The README keeps exactly
two set-up commands (``make demo``, ``make test``) and documents ``. .venv/bin/activate`` as a usage
note; after sourcing that script in a shell whose PATH lacks the venv, every command resolves.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACTIVATE = ROOT / ".venv" / "bin" / "activate"


def setup_section() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"^## Set up.*?$(.*?)^## ", text, re.S | re.M)
    assert m, "README.md has no '## Set up' section"
    return m[1]


def test_readme_setup_has_exactly_two_commands() -> None:
    commands = [line.strip() for line in setup_section().splitlines() if line.startswith("    ") and line.strip()]
    assert commands == ["make demo", "make test"]


def test_readme_setup_documents_activation() -> None:
    assert "`. .venv/bin/activate`" in setup_section()


def test_commands_resolve_after_activation() -> None:
    if not ACTIVATE.exists():
        pytest.skip(f"{ACTIVATE} does not exist (the suite runs from another environment)")
    scripts = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
    assert {"p4sim", "dlcpctl", "dlcp-agent", "dlcp-exp"} <= set(scripts)
    done = subprocess.run(["bash", "-c", f". .venv/bin/activate && command -v {' '.join(scripts)}"],
                          cwd=ROOT, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(ROOT / ".venv" / "bin" / s) for s in scripts]
