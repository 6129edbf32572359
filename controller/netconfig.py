"""The network YAML: switches, hosts, links, routes, queues and the DLCP policy, validated.

``load(path)`` parses with line numbers (``yaml_lines``), validates against
``data/netconfig.schema.json`` and then checks meaning (links name known switches, hosts attach
to free ports, routes leave through connected ports). Every problem is one ``ConfigError``:
``net.yaml:12: switches.s1.grpc: 'x' does not match ...``. Paths inside the YAML (pipeline files,
a policy file) are relative to the YAML's directory. The DLCP policy defaults to the shipped
``data/default_policy.yaml`` (or a built-in equivalent); an inline ``policy`` overrides it key by key.

Hostile or careless files get the same one-line errors: text that is not UTF-8 (or UTF-16/32 with
a byte order mark), integers the schema calls integers but YAML spelled as floats (``1e23``),
identifiers wider than P4Runtime's (device id 64 bits, election id 128), values the switch would
refuse (a queue depth of 0), and a policy path naming some other file (its content is never echoed).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import jsonschema

from controller import gc_pause
from controller.errors import ConfigError
from controller.targets import PipelineFiles
from controller.yaml_lines import line_of, load_with_lines

DEFAULT_POLICY_FILE = Path(__file__).parent / "data" / "default_policy.yaml"
MAX_DEVICE_ID = (1 << 64) - 1        # P4Runtime device_id is a uint64
MAX_ELECTION_ID = (1 << 128) - 1     # P4Runtime election_id is a Uint128
MAX_QUEUE_DEPTH = (1 << 31) - 1      # packets; simple_switch_CLI parses an int32, p4sim wants >= 1
MAX_TIMEOUT = 3600.0                 # s; a longer gRPC deadline is a mistake, not a wish
MAX_CONFIG_BYTES = 64 << 20          # a network YAML or policy file larger than this is refused
_MESSAGE_VALUE_CHARS = 60            # longest value quoted back in an error message

# Used only when data/default_policy.yaml is missing: same format, minimal content.
BUILTIN_POLICY: dict[str, object] = {
    "version": 1, "queues": 8, "queue_depth": 64, "dlcp_udp_ports": [9290], "spray": True,
    "priority_map": [
        {"name": "control", "match": {"is_dlcp": 1, "msg_type": {"value": 1, "mask": 0xF}}, "queue": 7},
        {"name": "data", "match": {"is_dlcp": 1}, "queue": 1},
    ],
    "thresholds": [],
}


FULL_PACKET_BITS = 1500 * 8          # "packets" in drain rates and depth thresholds are full-size


@dataclass(frozen=True)
class PortConf:
    depth: int | None = None
    rate_pps: int | None = None          # a queue rate limit the switch applies (dlcpctl queues)
    rate_mbps: float | None = None       # the link's speed (how fast the port drains)

    def drain_pps(self) -> int | None:
        """Full-size packets per second this port transmits: the tighter of the link's speed and
        the rate limit; None when neither is known."""
        rates = [r for r in (self.rate_pps, None if self.rate_mbps is None else
                             max(1, round(self.rate_mbps * 1e6 / FULL_PACKET_BITS))) if r is not None]
        return min(rates) if rates else None

    def merged(self, default: PortConf) -> PortConf:
        """This port's settings, unset ones taken from ``default`` (the network's ``queues``)."""
        return PortConf(self.depth if self.depth is not None else default.depth,
                        self.rate_pps if self.rate_pps is not None else default.rate_pps,
                        self.rate_mbps if self.rate_mbps is not None else default.rate_mbps)


@dataclass
class SwitchConf:
    name: str
    grpc: str
    device_id: int
    target: str
    pipeline: PipelineFiles
    mac: int
    ports: dict[int, PortConf] = field(default_factory=dict)
    thrift_port: int | None = None
    runtime_command: str | None = None
    runtime_addr: str | None = None
    tls: TlsFiles | None = None     # P4Runtime over TLS (p4rt_client reads the files)


@dataclass(frozen=True)
class TlsFiles:
    """A switch's ``tls`` section: PEM paths (resolved against the YAML's directory) and an
    optional server name override."""

    ca_cert: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    server_name: str | None = None


@dataclass(frozen=True)
class HostConf:
    name: str
    ip: str
    mac: int
    switch: str
    port: int


@dataclass(frozen=True)
class RouteConf:
    switch: str
    prefix: str
    ports: tuple[int, ...]
    spray: bool | None = None


@dataclass(frozen=True)
class PriorityRule:
    """One priority_map rule: ``match`` maps key -> (value, mask); earlier rules get higher priority."""

    name: str
    match: dict[str, tuple[int, int]]
    queue: int
    priority: int


@dataclass
class Policy:
    """The DLCP policy, in the format of ``data/default_policy.yaml`` (plus ``spray``)."""

    udp_ports: list[int]
    spray: bool
    priority_map: list[PriorityRule]
    thresholds: dict[tuple[int, int], tuple[int, int]]   # (queue, mag) -> (drop, ecn) in threshold_unit
    queues: int = 8
    queue_depth: int = 64
    source: str = ""
    depth_max_age_us: int | None = None   # None: leave DlcpIngress.depth_settings' default as compiled
    threshold_unit: str = "packets"       # "packets" (drop_depth/ecn_depth) or "us" (drop_delay_us/ecn_delay_us)
    thresholds_shipped: bool = False      # thresholds from data/default_policy.yaml, not the user's

    def rule(self, name: str) -> PriorityRule:
        for r in self.priority_map:
            if r.name == name:
                return r
        from controller.errors import NameNotFound
        raise NameNotFound("priority rule", name, [r.name for r in self.priority_map], self.source)


@dataclass
class NetConfig:
    path: Path
    switches: dict[str, SwitchConf]
    hosts: dict[str, HostConf]
    links: list[tuple[str, int, str, int]]
    routes: list[RouteConf]
    derive_routes: bool
    queues: PortConf
    policy: Policy
    election_id: int = 1
    role: str | None = None
    batch_size: int = 250
    timeout: float = 10.0
    lines: dict = field(default_factory=dict, repr=False)

    def line(self, *path: object) -> int | None:
        return line_of(self.lines, path)

    def switch(self, name: str) -> SwitchConf:
        if name not in self.switches:
            from controller.errors import NameNotFound
            raise NameNotFound("switch", name, list(self.switches), str(self.path))
        return self.switches[name]

    def switch_ports(self, switch: str) -> list[int]:
        """The ports of ``switch`` the YAML knows: attached hosts, links and ``ports`` settings."""
        ports = {h.port for h in self.hosts.values() if h.switch == switch}
        for a, ap, b, bp in self.links:
            if a == switch:
                ports.add(ap)
            if b == switch:
                ports.add(bp)
        ports.update(self.switches[switch].ports)
        return sorted(ports)

    def peer(self, switch: str, port: int) -> tuple[str, str, int | None] | None:
        """What is at the other end of (switch, port): ``("host", name, None)`` or ``("switch", s, p)``."""
        for host in self.hosts.values():
            if host.switch == switch and host.port == port:
                return ("host", host.name, None)
        for a, ap, b, bp in self.links:
            if (a, ap) == (switch, port):
                return ("switch", b, bp)
            if (b, bp) == (switch, port):
                return ("switch", a, ap)
        return None


def _is_integer(_checker: object, value: object) -> bool:
    """JSON Schema "integer", minus what YAML makes of ``1e23`` or ``2.0`` (floats) and booleans."""
    return isinstance(value, int) and not isinstance(value, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


def _short(value: object) -> str:
    """``repr(value)``, cut so an error message never carries a whole file or a huge number."""
    text = repr(value)
    return text if len(text) <= _MESSAGE_VALUE_CHARS else text[:_MESSAGE_VALUE_CHARS - 3] + "..."


_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}


def _kind(value: object) -> str:
    """What a value is, for "expected X, got Y": containers by kind, scalars with a short repr."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    name = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(type(value),
                                                                                         type(value).__name__)
    return f"{name} ({_short(value)})"


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_text(data: bytes, file: str) -> str:
    """File bytes as text: UTF-8 (BOM optional), or UTF-16/UTF-32 with a BOM; ConfigError otherwise."""
    codec = next((c for bom, c in _BOMS if data.startswith(bom)), "utf-8")
    try:
        return data.decode(codec)
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1 if codec == "utf-8" else None
        name = codec.upper().replace("-SIG", "")
        raise ConfigError(file, line, "", f"not {name} text (byte {data[err.start]:#04x} at offset {err.start}); "
                          "save the file as UTF-8") from None


def read_config_text(path: Path, key: str, what: str) -> str:
    """Read and decode one YAML file; one-line ConfigError when it cannot be read or is not text."""
    file = str(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise ConfigError(file, None, key, f"cannot read {what}: {err.strerror or err}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(file, None, key, f"{what} is larger than {MAX_CONFIG_BYTES >> 20} MB")
    return decode_text(data, file)


@cache
def schema() -> dict:
    text = (Path(__file__).parent / "data" / "netconfig.schema.json").read_text()
    return json.loads(text)


def _check_depth(conf: dict, file: str, lines: dict, where: tuple) -> None:
    """A queue depth the switch would refuse (0, or beyond its CLI's int32) is refused here."""
    depth = conf.get("depth")
    if depth is not None and not 1 <= depth <= MAX_QUEUE_DEPTH:
        raise ConfigError(file, line_of(lines, (*where, "depth")), _dotted((*where, "depth")),
                          f"queue depth {_short(depth)} is not in 1..{MAX_QUEUE_DEPTH} packets")


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


_ROUTE_KEYS = frozenset(("switch", "prefix", "ports", "spray"))
_PREFIX_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}(/\d{1,2})?$")


def _prefix_text(text: str) -> str:
    """``ipaddress.IPv4Network(text, strict=True)`` as text, without its cost for the common
    ``a.b.c.d/len`` spelling (anything unusual, and every error, goes through ipaddress)."""
    addr, sep, plen = text.partition("/")
    if sep and plen.isdigit() and len(plen) <= 2 and _IPV4_ONLY_RE.match(addr):
        length = int(plen)
        octets = addr.split(".")
        if length <= 32 and all(int(o) <= 255 and (o[0] != "0" or len(o) == 1) for o in octets):
            number = (int(octets[0]) << 24) | (int(octets[1]) << 16) | (int(octets[2]) << 8) | int(octets[3])
            if not number & ((1 << (32 - length)) - 1) and plen == str(length):
                return text
    return str(ipaddress.IPv4Network(text, strict=True))


_IPV4_ONLY_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def _plainly_valid_route(item: object) -> bool:
    """A fast check that accepts only routes the schema accepts (anything else goes to jsonschema,
    which gives the error message), so large route lists validate in milliseconds."""
    if not isinstance(item, dict) or not _ROUTE_KEYS.issuperset(item) or len(item) < 3:
        return False
    ports = item.get("ports")
    return (isinstance(item.get("switch"), str) and isinstance(item.get("prefix"), str)
            and _PREFIX_RE.match(item["prefix"]) is not None
            and isinstance(ports, list) and 1 <= len(ports) <= 255
            and all(type(p) is int and 0 <= p <= 510 for p in ports)
            and ("spray" not in item or type(item["spray"]) is bool))


def _validate(data: object, lines: dict, file: str, sch: dict) -> None:
    if isinstance(data, dict) and isinstance(data.get("routes"), list) and "routes" in sch.get("properties", {}):
        routes = data["routes"]
        suspects = [i for i, r in enumerate(routes) if not _plainly_valid_route(r)]
        data = {**data, "routes": [routes[i] for i in suspects]}
        index_map = dict(enumerate(suspects))
    else:
        index_map = None
    validator = _Validator(sch)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if index_map is not None:
        for e in errors:   # map indexes in the filtered route list back to the file's
            path = list(e.absolute_path)
            if len(path) >= 2 and path[0] == "routes":
                e.path.clear()
                e.relative_path.extend(["routes", index_map[path[1]], *path[2:]])
    if not errors:
        return
    err = errors[0]
    best = jsonschema.exceptions.best_match(errors) or err
    path = tuple(best.absolute_path)
    message = best.message
    if best.validator == "additionalProperties":
        extras = [k for k in best.instance if k not in best.schema.get("properties", {})]
        if extras:
            path = (*path, extras[0])
        allowed = ", ".join(sorted(best.schema.get("properties", {})))
        message = f"unknown key (allowed: {allowed})"
    elif best.validator == "oneOf":
        message = f"{_short(best.instance)} is not valid here ({best.schema.get('description', 'see the schema')})"
    elif best.validator == "type":
        want = best.validator_value if isinstance(best.validator_value, list) else [best.validator_value]
        message = f"expected {' or '.join(_TYPE_NAMES.get(w, w) for w in want)}, got {_kind(best.instance)}"
    elif len(message) > 2 * _MESSAGE_VALUE_CHARS:
        message = f"{_short(best.instance)} is not valid here ({best.validator}: {_short(best.validator_value)})"
    raise ConfigError(file, line_of(lines, path), _dotted(path), message)


_WIDTHS = {"is_dlcp": 1, "msg_type": 4, "layer_class": 3, "mag_class": 4, "flags": 8}


def _policy(raw: dict, file: str, lines: dict, base: tuple) -> Policy:
    rules = []
    rule_list = raw.get("priority_map", [])
    names: set[str] = set()
    for i, item in enumerate(rule_list):
        where = (*base, "priority_map", i)
        match = {}
        for key, spec in item["match"].items():
            value, mask = (spec, (1 << _WIDTHS[key]) - 1) if isinstance(spec, int) else (spec["value"], spec["mask"])
            if value >> _WIDTHS[key] or mask >> _WIDTHS[key] or value & ~mask:
                raise ConfigError(file, line_of(lines, (*where, "match", key)), _dotted((*where, "match", key)),
                                  f"value {value:#x} mask {mask:#x} does not fit the {_WIDTHS[key]}-bit field")
            match[key] = (value, mask)
        name = item.get("name", f"rule-{i}")
        if name in names:
            raise ConfigError(file, line_of(lines, (*where, "name")), _dotted((*where, "name")),
                              f"duplicate rule name '{name}'")
        names.add(name)
        rules.append(PriorityRule(name, match, item["queue"], len(rule_list) - i))
    thresholds: dict[tuple[int, int], tuple[int, int]] = {}
    units: set[str] = set()
    for i, item in enumerate(raw.get("thresholds", [])):
        where = (*base, "thresholds", i)
        unit, drop, ecn = _threshold_values(item, file, lines, where)
        if units and unit not in units:
            raise ConfigError(file, line_of(lines, where), _dotted(where),
                              "every block must give thresholds the same way: all drop_depth/ecn_depth "
                              "(packets) or all drop_delay_us/ecn_delay_us (queueing delay)")
        units.add(unit)
        for q in item["queues"]:
            for m in item["mag_classes"]:
                if (q, m) in thresholds:
                    raise ConfigError(file, line_of(lines, where), _dotted(where),
                                      f"(queue {q}, mag_class {m}) already set by an earlier block")
                thresholds[(q, m)] = (drop, ecn)
    return Policy(udp_ports=list(raw["dlcp_udp_ports"]), spray=bool(raw.get("spray", True)),
                  priority_map=rules, thresholds=thresholds, queues=raw.get("queues", 8),
                  queue_depth=raw.get("queue_depth", 64), source=file,
                  depth_max_age_us=raw.get("depth_max_age_us"), threshold_unit=next(iter(units), "packets"))


_THRESHOLD_KEYS = {"packets": ("drop_depth", "ecn_depth"), "us": ("drop_delay_us", "ecn_delay_us")}


def _threshold_values(item: dict, file: str, lines: dict, where: tuple) -> tuple[str, int, int]:
    """One thresholds block's (unit, drop, ecn): depths in packets or queueing delays in µs."""
    given = [unit for unit, keys in _THRESHOLD_KEYS.items() if any(k in item for k in keys)]
    if len(given) != 1 or not all(k in item for k in _THRESHOLD_KEYS[given[0]]):
        raise ConfigError(file, line_of(lines, where), _dotted(where),
                          "give drop_depth and ecn_depth (packets), or drop_delay_us and ecn_delay_us "
                          "(queueing delay), not a mix")
    drop_key, ecn_key = _THRESHOLD_KEYS[given[0]]
    return given[0], item[drop_key], item[ecn_key]


def _load_policy_file(path: Path, ref: tuple[str, int | None] | None = None) -> tuple[dict, dict, str]:
    """Load a policy file; ``ref`` is the (file, line) of the ``policy:`` key that named it."""
    ref_file, ref_line = ref or (str(path), None)
    try:
        text = read_config_text(path, "policy", "policy file")
    except ConfigError as err:
        raise ConfigError(ref_file, ref_line, "policy", f"{path}: {err.message}") from None
    data, lines = load_with_lines(text, str(path))
    if data is not None and not isinstance(data, dict):
        # never quote it: the path may name any file on this host (policy: /etc/passwd)
        raise ConfigError(ref_file, ref_line, "policy", f"{path} is not a DLCP policy file (expected a "
                          f"mapping, got {'a list' if isinstance(data, list) else 'a scalar'})")
    if isinstance(data, dict) and "policy" in data and isinstance(data["policy"], dict):
        data = data["policy"]
        lines = {k[1:]: v for k, v in lines.items() if k[:1] == ("policy",)}
    known = schema()["$defs"]["policy"].get("properties", {})
    if isinstance(data, dict) and data and not set(data) & set(known):
        raise ConfigError(ref_file, ref_line, "policy", f"{path} is not a DLCP policy file (none of its keys "
                          f"is a policy key: {', '.join(sorted(known))})")
    _validate(data, lines, str(path), {"$defs": schema()["$defs"], "$ref": "#/$defs/policy"})
    return data or {}, lines, str(path)


def default_policy_raw() -> tuple[dict, dict, str]:
    if DEFAULT_POLICY_FILE.exists():
        data, lines, file = _load_policy_file(DEFAULT_POLICY_FILE)
        merged = {**BUILTIN_POLICY, **data}
        return merged, lines, file
    return dict(BUILTIN_POLICY), {}, "<built-in policy>"


def load_policy(path: str | Path | None = None) -> Policy:
    """The parsed and checked policy of ``path`` (default: the controller's default policy), exactly
    as dlcpctl installs it; raises ConfigError with file:line on bad input. Public for the parts that
    must decide what the switch decides (simulation/)."""
    if path is None:
        raw, lines, file = default_policy_raw()
    else:
        raw, lines, file = _load_policy_file(Path(path))
        raw = {**BUILTIN_POLICY, **raw}
    return _policy(raw, file, lines, ())


def _resolve(base: Path, value: str | None) -> Path | None:
    if value is None:
        return None
    p = Path(value)
    return p if p.is_absolute() else base / p


def _endpoint(text: str) -> tuple[str, int]:
    name, port = text.rsplit(":", 1)
    return name, int(port)


def load(path: str | Path) -> NetConfig:
    path = Path(path)
    return loads(read_config_text(path, "", "the network YAML"), str(path), path.parent)


def loads(text: str, file: str = "<net.yaml>", base_dir: Path | None = None) -> NetConfig:
    """Parse and validate one network YAML (see ``load``); collection paused (``gc_pause``)."""
    with gc_pause.paused():
        return _loads(text, file, base_dir)


def _loads(text: str, file: str, base_dir: Path | None) -> NetConfig:
    data, lines = load_with_lines(text, file)
    if not isinstance(data, dict):
        raise ConfigError(file, 1, "", "expected a mapping with at least 'switches'")
    _validate(data, lines, file, schema())
    base = base_dir or Path(".")

    defaults = data.get("defaults", {})
    # file names go to the OS: a NUL inside one is an error here, not a ValueError from open()
    named_files = [(("defaults", "pipeline", k), v) for k, v in defaults.get("pipeline", {}).items()]
    named_files += [(("switches", n, "pipeline", k), v) for n, raw in data["switches"].items()
                    for k, v in raw.get("pipeline", {}).items()]
    named_files += [(("policy",), data["policy"])] if isinstance(data.get("policy"), str) else []
    for where, value in named_files:
        if isinstance(value, str) and "\x00" in value:
            raise ConfigError(file, line_of(lines, where), _dotted(where), "a file name cannot contain a NUL character")
    switches: dict[str, SwitchConf] = {}
    for index, (name, raw) in enumerate(data["switches"].items()):
        target = raw.get("target", defaults.get("target", "p4sim"))
        pipe = {**defaults.get("pipeline", {}), **raw.get("pipeline", {})}
        key = _dotted(("switches", name, "pipeline"))
        line = line_of(lines, ("switches", name))
        if "p4info" not in pipe:
            raise ConfigError(file, line, key, "no p4info (set it here or in defaults.pipeline)")
        needed = ("program_name", "tofino_bin", "context_json") if target == "tofino" else ("config",)
        for need in needed:
            if need not in pipe:
                raise ConfigError(file, line, key, f"target {target} needs pipeline.{need}")
        files = PipelineFiles(target=target, p4info=_resolve(base, pipe["p4info"]),
                              config=_resolve(base, pipe.get("config")),
                              program_name=pipe.get("program_name"),
                              tofino_bin=_resolve(base, pipe.get("tofino_bin")),
                              context_json=_resolve(base, pipe.get("context_json")))
        mac_text = raw.get("mac")
        mac = int(mac_text.replace(":", ""), 16) if mac_text else (0x02_00_00_00_00_00 | (index + 1) << 8)
        runtime = raw.get("runtime", {})
        tls_raw = {**defaults.get("tls", {}), **raw.get("tls", {})}
        tls = TlsFiles(*(_resolve(base, tls_raw.get(k)) for k in ("ca_cert", "client_cert", "client_key")),
                       tls_raw.get("server_name")) if tls_raw else None
        switches[name] = SwitchConf(
            name=name, grpc=raw["grpc"], device_id=raw["device_id"], target=target, pipeline=files,
            mac=mac, ports={int(p): PortConf(**pc) for p, pc in raw.get("ports", {}).items()},
            thrift_port=runtime.get("thrift_port"), runtime_command=runtime.get("command"),
            runtime_addr=runtime.get("addr"), tls=tls)
        if raw["device_id"] > MAX_DEVICE_ID:
            raise ConfigError(file, line_of(lines, ("switches", name, "device_id")), f"switches.{name}.device_id",
                              f"{_short(raw['device_id'])} does not fit P4Runtime's 64-bit device_id")
        for port, pc in raw.get("ports", {}).items():
            _check_depth(pc, file, lines, ("switches", name, "ports", port))
    _check_depth(data.get("queues", {}), file, lines, ("queues",))
    ctl_raw = data.get("controller", {})
    if ctl_raw.get("election_id", 1) > MAX_ELECTION_ID:
        raise ConfigError(file, line_of(lines, ("controller", "election_id")), "controller.election_id",
                          f"{_short(ctl_raw['election_id'])} does not fit P4Runtime's 128-bit election_id")
    if float(ctl_raw.get("timeout", 10.0)) > MAX_TIMEOUT:
        raise ConfigError(file, line_of(lines, ("controller", "timeout")), "controller.timeout",
                          f"{_short(ctl_raw['timeout'])} s is longer than {MAX_TIMEOUT:.0f} s")
    seen_grpc: dict[tuple[str, int], str] = {}
    for s in switches.values():
        key = (s.grpc, s.device_id)
        if key in seen_grpc:
            raise ConfigError(file, line_of(lines, ("switches", s.name, "grpc")), f"switches.{s.name}.grpc",
                              f"{s.grpc} device {s.device_id} is already switch {seen_grpc[key]}")
        seen_grpc[key] = s.name

    used: dict[tuple[str, int], str] = {}

    def claim(sw: str, port: int, who: str, where: tuple) -> None:
        if sw not in switches:
            raise ConfigError(file, line_of(lines, where), _dotted(where),
                              f"unknown switch '{sw}' (switches: {', '.join(switches)})")
        if (sw, port) in used:
            raise ConfigError(file, line_of(lines, where), _dotted(where),
                              f"port {sw}:{port} already used by {used[(sw, port)]}")
        used[(sw, port)] = who

    hosts: dict[str, HostConf] = {}
    ips: dict[str, str] = {}
    for name, raw in data.get("hosts", {}).items():
        claim(raw["switch"], raw["port"], f"host {name}", ("hosts", name, "switch"))
        if raw["ip"] in ips:
            raise ConfigError(file, line_of(lines, ("hosts", name, "ip")), f"hosts.{name}.ip",
                              f"{raw['ip']} is already host {ips[raw['ip']]}")
        try:
            ipaddress.IPv4Address(raw["ip"])
        except ValueError:
            raise ConfigError(file, line_of(lines, ("hosts", name, "ip")), f"hosts.{name}.ip",
                              f"'{raw['ip']}' is not an IPv4 address") from None
        ips[raw["ip"]] = name
        hosts[name] = HostConf(name, raw["ip"], int(raw["mac"].replace(":", ""), 16), raw["switch"], raw["port"])

    links = []
    for i, (a, b) in enumerate(data.get("links", [])):
        (sa, pa), (sb, pb) = _endpoint(a), _endpoint(b)
        claim(sa, pa, f"link {a} - {b}", ("links", i, 0))
        claim(sb, pb, f"link {a} - {b}", ("links", i, 1))
        links.append((sa, pa, sb, pb))

    routes = []
    for i, raw in enumerate(data.get("routes", [])):
        where = ("routes", i)
        if raw["switch"] not in switches:
            raise ConfigError(file, line_of(lines, (*where, "switch")), _dotted((*where, "switch")),
                              f"unknown switch '{raw['switch']}'")
        try:
            net = _prefix_text(raw["prefix"])
        except ValueError as err:
            raise ConfigError(file, line_of(lines, (*where, "prefix")), _dotted((*where, "prefix")),
                              str(err)) from None
        for port in raw["ports"]:
            if (raw["switch"], port) not in used:
                raise ConfigError(file, line_of(lines, (*where, "ports")), _dotted((*where, "ports")),
                                  f"port {raw['switch']}:{port} is connected to nothing (no host or link)")
        routes.append(RouteConf(raw["switch"], str(net), tuple(raw["ports"]), raw.get("spray")))

    policy_raw, policy_lines, policy_file = default_policy_raw()
    base_path: tuple = ()
    user_policy = data.get("policy")
    if isinstance(user_policy, str):
        policy_raw, policy_lines, policy_file = _load_policy_file(_resolve(base, user_policy),
                                                                  (file, line_of(lines, ("policy",))))
        policy_raw = {**BUILTIN_POLICY, **policy_raw}
    elif isinstance(user_policy, dict):
        policy_raw = {**policy_raw, **user_policy}
        policy_lines, policy_file, base_path = lines, file, ("policy",)
    policy = _policy(policy_raw, policy_file, policy_lines, base_path)
    if user_policy is None or (isinstance(user_policy, dict) and "thresholds" not in user_policy):
        policy.thresholds_shipped = True

    ctl = data.get("controller", {})
    return NetConfig(path=Path(file), switches=switches, hosts=hosts, links=links, routes=routes,
                     derive_routes=data.get("derive_routes", True),
                     queues=PortConf(**data.get("queues", {})), policy=policy,
                     election_id=ctl.get("election_id", 1), role=ctl.get("role"),
                     batch_size=ctl.get("batch_size", 250), timeout=float(ctl.get("timeout", 10.0)),
                     lines=lines)
