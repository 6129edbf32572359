"""Parse p4c's STF (simple test framework) files into commands, with p4c's BMv2 harness rules.

An STF file is one command a line, ``#`` starts a comment. Commands, as p4c's
``backends/bmv2/bmv2stf.py`` and ``tools/stf/stf_parser.py`` accept them:

* ``add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...) [= HANDLE]``
* ``setdefault TABLE ACTION(PARAM:VALUE, ...)``
* ``packet PORT HEX...`` and ``expect PORT [HEX...[$]]`` (``*`` = don't-care nibble,
  ``$`` = the packet must end here, ``expect PORT`` alone = any number of packets on PORT)
* ``wait``, ``remove all``, ``check_counter NAME(INDEX) [packets|bytes OP N]``
* ``priority_queues N`` (a p4sim extension, before the first ``packet``): the switch has ``N``
  strict-priority queues per egress port (1..32), as ``simple_switch --priority-queues N``.
  Without it both targets have ONE queue per port, BMv2's default, and drop every packet whose
  ``standard_metadata.priority`` is not 0 ("Priority out of range").
* BMv2 CLI pass-through: ``mirroring_add``, ``mirroring_add_mc``, ``mc_mgrp_create``,
  ``mc_node_create``, ``mc_node_associate``, ``register_write``, ``register_reset``,
  ``counter_write``, ``counter_reset``, ``meter_set_rates`` ..., and (a p4sim extension, in
  simple_switch_CLI syntax) ``table_add``, ``act_prof_create_member``, ``act_prof_create_group``,
  ``act_prof_add_member_to_group``, ``table_indirect_add[_with_group]``, ``pvs_add``.

Key values are kept as text here; ``key_value`` turns one into a runtime match item once the
field's match kind and width are known (``*`` digits make ternary masks and lpm prefix
lengths, ``v&&&m`` masks, ``v/len`` prefixes, ``lo..hi``/``lo->hi`` ranges). Errors are
``StfError``: ``file:line: error: message``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from p4sim.errors import StfError
from p4sim.runtime.tables import Exact, Lpm, Optional_, Range, Ternary

PASS_THROUGH = frozenset({
    "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mc_mgrp_create", "mc_mgrp_destroy",
    "mc_node_create", "mc_node_update", "mc_node_associate", "mc_node_dissociate",
    "mc_node_destroy", "register_write", "register_reset", "register_read", "counter_write",
    "counter_reset", "counter_read", "meter_set_rates", "meter_array_set_rates",
    "table_set_default", "set_crc16_parameters", "set_crc32_parameters",
    # BMv2 CLI commands p4c's harness does not pass through; p4sim accepts them so a test can
    # program action profiles, selectors and value sets (handles are 0, 1, 2... as BMv2 prints)
    "table_add", "act_prof_create_member", "act_prof_create_group", "act_prof_add_member_to_group",
    "act_prof_remove_member_from_group", "table_indirect_add", "table_indirect_add_with_group",
    "table_indirect_set_default", "pvs_add", "pvs_clear",
})


@dataclass
class Command:
    """One STF command; ``kind`` is the lower-cased command word."""

    line: int
    kind: str


@dataclass
class AddCommand(Command):
    table: str
    priority: int | None
    keys: list[tuple[str, str]]
    action: str
    args: list[tuple[str, str]]
    handle: str | None = None


@dataclass
class SetDefaultCommand(Command):
    table: str
    action: str
    args: list[tuple[str, str]]


@dataclass
class PacketCommand(Command):
    port: int
    data: bytes


@dataclass
class ExpectCommand(Command):
    port: int
    pattern: str | None     # upper-case hex digits and '*', optional trailing '$'; None = any


@dataclass
class CheckCounterCommand(Command):
    name: str
    index: int | str        # an int, or "$HANDLE" of an entry added with "= HANDLE"
    count_type: str = "packets"
    op: str = "=="
    value: int = 0


@dataclass
class CliCommand(Command):
    words: list[str] = field(default_factory=list)


@dataclass
class PriorityQueuesCommand(Command):
    queues: int


MAX_PRIORITY_QUEUES = 32        # simple_switch's limit (and p4sim's traffic manager's)


@dataclass
class StfFile:
    path: str
    commands: list[Command]

    @property
    def priority_queues(self) -> int:
        """Priority queues per egress port the test asks for (1, BMv2's default, when it does not say)."""
        asked = [c.queues for c in self.commands if isinstance(c, PriorityQueuesCommand)]
        return asked[-1] if asked else 1

    def ports(self) -> set[int]:
        """Every port named by a ``packet`` or ``expect`` (the harness's interfaces)."""
        return {c.port for c in self.commands if isinstance(c, PacketCommand | ExpectCommand)}


_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F_*]+|0[bB][01_*]+|0[oO][0-7_*]+|[0-9_]+)$")


_MAC = re.compile(r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$")
_IPV4 = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,3}){3}$")


def parse_int(text: str) -> int:
    """An STF/CLI integer: ``0x..``, ``0b..``, ``0o..``, decimal (leading zeros allowed), or, as
    simple_switch_CLI accepts them, an IPv4 address, a MAC address or an IPv6 address."""
    t = text.strip().replace("_", "")
    if _IPV4.match(t):
        parts = [int(x) for x in t.split(".")]
        if any(x > 255 for x in parts):
            raise ValueError(f"bad IPv4 address {text!r}")
        return int.from_bytes(bytes(parts), "big")
    if _MAC.match(t):
        return int.from_bytes(bytes(int(x, 16) for x in t.split(":")), "big")
    if ":" in t:
        try:
            return int(ipaddress.IPv6Address(t))
        except ValueError:
            raise ValueError(f"bad number {text!r}") from None
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    low = t.lower()
    if low.startswith("0x"):
        v = int(t[2:], 16)
    elif low.startswith("0b"):
        v = int(t[2:], 2)
    elif low.startswith("0o"):
        v = int(t[2:], 8)
    else:
        v = int(t, 10)
    return -v if neg else v


def _split_action(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``name(p:v, q:w)`` -> (name, [(p, v), (q, w)])."""
    if "(" not in text:
        raise ValueError(f"expected ACTION(ARGS), got {text!r}")
    name, rest = text.split("(", 1)
    name = name.strip()
    if ")" not in rest:
        raise ValueError(f"missing ')' in {text!r}")
    inner, tail = rest.rsplit(")", 1)
    if tail.strip():
        raise ValueError(f"unexpected {tail.strip()!r} after action")
    if not name:
        raise ValueError("missing action name")
    args = []
    for part in inner.split(","):
        part = part.strip()
        if not part:
            continue
        if ":" not in part:
            raise ValueError(f"action argument {part!r} is not NAME:VALUE")
        k, v = part.split(":", 1)
        args.append((k.strip(), v.strip()))
    return name, args


def _parse_add(words: str) -> tuple[str, int | None, list[tuple[str, str]], str,
                                    list[tuple[str, str]], str | None]:
    text = words.strip()
    # an optional "= HANDLE" after the action
    handle = None
    m = re.search(r"\)\s*=\s*\$?([A-Za-z_][A-Za-z0-9_]*)\s*$", text)
    if m:
        handle = m.group(1)
        text = text[:m.start() + 1]
    parts = text.split(None, 1)
    if not parts:
        raise ValueError("add needs a table name")
    table = parts[0]
    rest = parts[1] if len(parts) > 1 else ""
    priority = None
    first = rest.split(None, 1)
    if first and re.fullmatch(r"[0-9]+", first[0]):
        priority = int(first[0])
        rest = first[1] if len(first) > 1 else ""
    keys: list[tuple[str, str]] = []
    tokens = rest.split()
    for i, tok in enumerate(tokens):
        call_key = re.fullmatch(r"([^():]+\.isValid\(\)):(.*)", tok)
        if call_key:       # `hdr.t.isValid():1`: a validity key written as the call (issue 14)
            keys.append((call_key.group(1), call_key.group(2)))
            continue
        paren, colon = tok.find("("), tok.find(":")
        if paren >= 0 and (colon < 0 or paren < colon) and not tok.startswith("("):
            action, args = _split_action(" ".join(tokens[i:]))
            return table, priority, keys, action, args, handle
        if colon <= 0:
            raise ValueError(f"key {tok!r} is not FIELD:VALUE")
        keys.append((tok[:colon], tok[colon + 1:]))
    raise ValueError("add needs an action: ACTION(ARGS)")


def _clean_hex(words: list[str], allow_wild: bool) -> str:
    data = "".join(words).upper()
    exact = data.endswith("$")
    if exact:
        data = data[:-1]
    allowed = "0123456789ABCDEF" + ("*" if allow_wild else "")
    bad = [c for c in data if c not in allowed]
    if bad:
        raise ValueError(f"invalid packet data character {bad[0]!r}")
    return data + ("$" if exact else "")


def parse_line(text: str, line: int = 0) -> Command | None:
    """Parse one STF line (comment already allowed); None for blank lines. ValueError on bad syntax."""
    text = text.split("#", 1)[0].strip()
    if not text:
        return None
    parts = text.split(None, 1)
    word = parts[0].lower()
    rest = parts[1] if len(parts) > 1 else ""
    if word == "add":
        table, prio, keys, action, args, handle = _parse_add(rest)
        return AddCommand(line, word, table, prio, keys, action, args, handle)
    if word == "setdefault":
        sp = rest.split(None, 1)
        if len(sp) < 2:
            raise ValueError("setdefault needs TABLE ACTION(ARGS)")
        action, args = _split_action(sp[1])
        return SetDefaultCommand(line, word, sp[0], action, args)
    if word in ("packet", "expect"):
        sp = rest.split()
        if not sp:
            raise ValueError(f"{word} needs a port")
        try:
            port = int(sp[0], 10)
        except ValueError:
            raise ValueError(f"{word}: port {sp[0]!r} is not a decimal number") from None
        if word == "packet":
            data = _clean_hex(sp[1:], allow_wild=False)
            if data.endswith("$"):
                raise ValueError("packet data cannot end with '$'")
            # p4c's harness reads hex two digits at a time: a trailing lone digit X is the byte 0x0X.
            payload = bytes.fromhex(data[: len(data) // 2 * 2])
            if len(data) % 2:
                payload += bytes([int(data[-1], 16)])
            return PacketCommand(line, word, port, payload)
        pattern = _clean_hex(sp[1:], allow_wild=True)
        return ExpectCommand(line, word, port, pattern or None)
    if word == "priority_queues":
        try:
            queues = int(rest.strip(), 10)
        except ValueError:
            raise ValueError(f"priority_queues needs a decimal number of queues, not {rest.strip()!r}") from None
        if not 1 <= queues <= MAX_PRIORITY_QUEUES:
            raise ValueError(f"priority_queues {queues}: not in 1..{MAX_PRIORITY_QUEUES}")
        return PriorityQueuesCommand(line, word, queues)
    if word == "no_packet":
        return Command(line, word)
    if word == "wait":
        return Command(line, word)
    if word == "remove":
        if rest.strip().lower() != "all":
            raise ValueError("only 'remove all' is supported")
        return Command(line, "remove_all")
    if word == "check_counter":
        m = re.fullmatch(r"([A-Za-z_][\w.\[\]$]*)\s*\(\s*([^)]+?)\s*\)\s*"
                         r"(?:(packets|bytes)\s*(==|!=|<=|>=|<|>)\s*(\S+))?", rest.strip())
        if not m:
            raise ValueError("check_counter needs NAME(INDEX) [packets|bytes OP VALUE]")
        idx = m.group(2)
        index: int | str = idx if idx.startswith("$") or idx[0].isalpha() else parse_int(idx)
        return CheckCounterCommand(line, word, m.group(1), index,
                                   m.group(3) or "packets", m.group(4) or "==",
                                   parse_int(m.group(5)) if m.group(5) else 0)
    if word in PASS_THROUGH:
        return CliCommand(line, word, rest.split())
    raise ValueError(f"unknown STF command {parts[0]!r}")


def parse_text(text: str, path: str = "<stf>") -> StfFile:
    commands = []
    text = text.removeprefix("\ufeff")
    for n, raw in enumerate(text.splitlines(), start=1):
        try:
            cmd = parse_line(raw, n)
        except ValueError as err:
            raise StfError(path, n, str(err)) from None
        if cmd is not None:
            if isinstance(cmd, PriorityQueuesCommand) and any(isinstance(c, PacketCommand) for c in commands):
                raise StfError(path, n, "priority_queues must come before the first packet "
                                        "(it is how the switch is started)")
            commands.append(cmd)
    return StfFile(path, commands)


def parse_file(path: str) -> StfFile:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise StfError(path, 0, f"cannot read STF file: {err.strerror}") from None
    return parse_text(text, path)


# -- key values ------------------------------------------------------------------------------

_RADIX = {"0x": (16, 4, "F"), "0b": (2, 1, "1"), "0o": (8, 3, "7")}


def _digits(text: str) -> tuple[int, int, str] | None:
    """(radix, bits per digit, digits) for a prefixed literal, else None (decimal)."""
    low = text[:2].lower()
    if low in _RADIX:
        radix, bits, _ = _RADIX[low]
        return radix, bits, text[2:].replace("_", "")
    return None


def _wild_value_mask(text: str, width: int) -> tuple[int, int]:
    """Value and mask of a literal whose ``*`` digits are don't-care (mask covers the digits written)."""
    d = _digits(text)
    full = (1 << width) - 1
    if d is None:
        if "*" in text:
            raise ValueError(f"'*' needs a 0x/0b/0o literal: {text!r}")
        return parse_int(text), full
    radix, bits, digits = d
    if not digits:
        raise ValueError(f"empty literal {text!r}")
    value = int(digits.replace("*", "0"), radix)
    mask_digits = "".join("0" if c == "*" else _RADIX[text[:2].lower()][2] for c in digits)
    mask = int(mask_digits, radix)
    return value, mask & full


def key_value(text: str, match_kind: str, width: int) -> object:
    """One STF key value as a runtime match item (``Exact``, ``Lpm``, ``Ternary``...).

    Raises ValueError with a message naming the problem.
    """
    text = text.strip()
    full = (1 << width) - 1
    if match_kind == "exact":
        v = parse_int(text)
        _check_fits(v, width, text)
        return Exact(v & full)
    if match_kind == "ternary":
        if "&&&" in text:
            v_txt, m_txt = text.split("&&&", 1)
            v, m = parse_int(v_txt), parse_int(m_txt)
        else:
            v, m = _wild_value_mask(text, width)
        _check_fits(v, width, text)
        m &= full
        return Ternary(v & m, m)
    if match_kind == "lpm":
        if "/" in text:
            v_txt, l_txt = text.split("/", 1)
            v, plen = parse_int(v_txt), parse_int(l_txt)
        else:
            d = _digits(text)
            if d is None:
                v, plen = parse_int(text), width
            else:
                v = int(d[2].replace("*", "0"), d[0])
                plen = (len(d[2]) - d[2].count("*")) * d[1]
        _check_fits(v, width, text)
        plen = max(0, min(plen, width))
        mask = ((1 << plen) - 1) << (width - plen)
        return Lpm(v & mask, plen)
    if match_kind == "range":
        for sep in ("..", "->"):
            if sep in text:
                lo_txt, hi_txt = text.split(sep, 1)
                lo, hi = parse_int(lo_txt), parse_int(hi_txt)
                break
        else:
            if "*" in text:
                v, m = _wild_value_mask(text, width)
                lo, hi = v, v | (full & ~m)
            else:
                lo = hi = parse_int(text)
        _check_fits(lo, width, text)
        _check_fits(hi, width, text)
        if lo > hi:
            raise ValueError(f"range {text!r}: low > high")
        return Range(lo, hi)
    if match_kind == "optional":
        if text == "*":
            return None
        if "&&&" in text:   # simple_switch_CLI writes optional keys as ternary ones
            v_txt, m_txt = text.split("&&&", 1)
            if parse_int(m_txt) == 0:
                return None
            text = v_txt
        v = parse_int(text)
        _check_fits(v, width, text)
        return Optional_(v)
    raise ValueError(f"unknown match kind {match_kind!r}")


def _check_fits(v: int, width: int, text: str) -> None:
    # BMv2's CLI accepts a value as long as it fits the field's bytes; bits above the width drop.
    if v < 0 or v >= 1 << (((width + 7) // 8) * 8):
        raise ValueError(f"value {text!r} does not fit in a {width}-bit field")
