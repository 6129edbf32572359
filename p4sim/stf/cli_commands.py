"""BMv2 CLI commands inside STF files: PRE, registers, counters, meters, action profiles...

p4c's harness passes these through to simple_switch_CLI unchanged; ``CliCommands`` applies
them to the runtime objects of the pipeline with the same syntax and the same handle numbering
(0, 1, 2... per table, node list, profile member list and group list). ``check_counter`` is the
STF form of a counter check (p4c's STF grammar). Mixed into ``runner.StfRun``.
"""

from __future__ import annotations

from p4sim.runtime import hashes
from p4sim.runtime.tables import ActionCall, Table, TableEntry
from p4sim.stf.matching import resolve_name
from p4sim.stf.parser import CheckCounterCommand, CliCommand, key_value, parse_int

BMV2_CLI_PRIORITY_BASE = 0x7FFFFFFF  # CLI priority p becomes BASE - p (larger wins)

_PROFILE_COMMANDS = frozenset({
    "table_add", "act_prof_create_member", "act_prof_create_group", "act_prof_add_member_to_group",
    "act_prof_remove_member_from_group", "table_indirect_add", "table_indirect_add_with_group",
    "table_indirect_set_default",
})


def _split_concat(value: int, widths: list[int]) -> tuple[tuple[int, int], ...]:
    """A value-set member given as one number: the fields concatenated, first field highest."""
    out = []
    for width in reversed(widths):
        out.append((value & ((1 << width) - 1), (1 << width) - 1))
        value >>= width
    return tuple(reversed(out))



class CliCommands:
    """The CLI-command half of ``StfRun`` (it provides pipeline, tables, handles and errors)."""

    pipeline: object
    stf: object
    errors: list[str]
    handles: dict[str, tuple[Table, TableEntry]]
    table_entries: dict[str, list[TableEntry]]
    cli_handles: dict[tuple[str, str], int]
    action_params: dict[str, list[tuple[str, int]]]

    def _table(self, name: str) -> Table:
        return self.pipeline.tables[resolve_name(name, self.pipeline.tables, "table")]

    def _extern(self, kind: str, name: str) -> object:
        objs = getattr(self.pipeline, kind, None) or {}
        return objs[resolve_name(name, objs, kind.rstrip("s").replace("_", " "))]

    def _entry_by_index(self, table_name: str | None, index: str) -> TableEntry:
        if index.startswith("$") or index[0].isalpha():
            h = index.lstrip("$")
            if h not in self.handles:
                raise ValueError(f"no entry handle {index!r}")
            return self.handles[h][1]
        entries = self.table_entries.get(table_name or "", [])
        i = parse_int(index)
        if not 0 <= i < len(entries):
            raise ValueError(f"no entry handle {i} in table {table_name}")
        return entries[i]

    def _insert(self, table: Table, entry: TableEntry) -> None:
        table.insert(entry)
        self.table_entries.setdefault(table.name, []).append(entry)

    def _check_counter(self, cmd: CheckCounterCommand) -> None:
        counters = getattr(self.pipeline, "counters", {}) or {}
        direct = getattr(self.pipeline, "direct_counters", {}) or {}
        if isinstance(cmd.index, int) and counters:
            try:
                c = counters[resolve_name(cmd.name, counters, "counter")]
            except ValueError:
                c = None
            if c is not None:
                packets, nbytes = c.read_cell(cmd.index)
                self._compare_count(cmd, packets, nbytes)
                return
        dname = resolve_name(cmd.name, direct, "counter")
        entry = self._entry_by_index(getattr(direct[dname], "table", None), str(cmd.index))
        self._compare_count(cmd, entry.packets, entry.bytes)

    def _compare_count(self, cmd: CheckCounterCommand, packets: int, nbytes: int) -> None:
        actual = packets if cmd.count_type == "packets" else nbytes
        ok = {"==": actual == cmd.value, "!=": actual != cmd.value, "<=": actual <= cmd.value,
              ">=": actual >= cmd.value, "<": actual < cmd.value, ">": actual > cmd.value}[cmd.op]
        if not ok:
            self.errors.append(f"{self.stf.path}:{cmd.line}: check_counter {cmd.name}({cmd.index}): "
                               f"{cmd.count_type} is {actual}, expected {cmd.op} {cmd.value}")

    def _cli(self, cmd: CliCommand) -> None:
        w = cmd.words
        pre = self.pipeline.pre
        k = cmd.kind

        def need(n: int) -> None:
            if len(w) < n:
                raise ValueError(f"{k} needs {n} argument(s), got {len(w)}")

        if k == "mirroring_add":
            need(2)
            pre.mirroring_add(parse_int(w[0]), parse_int(w[1]))
        elif k == "mirroring_add_mc":
            need(2)
            pre.mirroring_add_mc(parse_int(w[0]), parse_int(w[1]))
        elif k == "mirroring_delete":
            need(1)
            pre.mirroring_delete(parse_int(w[0]))
        elif k == "mc_mgrp_create":
            need(1)
            pre.mc_mgrp_create(parse_int(w[0]))
        elif k == "mc_mgrp_destroy":
            need(1)
            pre.mc_mgrp_destroy(parse_int(w[0]))
        elif k == "mc_node_create":
            need(1)
            ports = [parse_int(p) for p in w[1:] if p != "|"]
            pre.mc_node_create(parse_int(w[0]), ports)
        elif k == "mc_node_update":
            need(1)
            pre.mc_node_update(parse_int(w[0]), [parse_int(p) for p in w[1:] if p != "|"])
        elif k == "mc_node_associate":
            need(2)
            pre.mc_node_associate(parse_int(w[0]), parse_int(w[1]))
        elif k == "mc_node_dissociate":
            need(2)
            pre.mc_node_dissociate(parse_int(w[0]), parse_int(w[1]))
        elif k == "mc_node_destroy":
            need(1)
            pre.mc_node_destroy(parse_int(w[0]))
        elif k == "register_write":
            need(3)
            self._extern("registers", w[0]).set_cell(parse_int(w[1]), parse_int(w[2]))
        elif k == "register_reset":
            need(1)
            self._extern("registers", w[0]).reset()
        elif k == "counter_write":
            need(4)
            self._extern("counters", w[0]).write_cell(parse_int(w[1]), parse_int(w[2]), parse_int(w[3]))
        elif k == "counter_reset":
            need(1)
            self._extern("counters", w[0]).reset()
        elif k in ("meter_set_rates", "meter_array_set_rates"):
            self._meter_set_rates(w)
        elif k == "table_set_default":
            need(2)
            table = self._table(w[0])
            rest = [x for x in w[2:] if x != "=>"]
            full = resolve_name(w[1], table.actions or self.action_params, "action")
            params = self.action_params.get(full, [])
            if len(rest) != len(params):
                raise ValueError(f"action {full} takes {len(params)} argument(s), got {len(rest)}")
            table.set_default(ActionCall(full, tuple(parse_int(x) & ((1 << wd) - 1)
                                                     for x, (_, wd) in zip(rest, params, strict=True))))
        elif k in _PROFILE_COMMANDS:
            self._profile_cli(k, w)
        elif k in ("pvs_add", "pvs_clear"):
            need(1)
            vs = self._extern("value_sets", w[0])
            if k == "pvs_clear":
                vs.clear()
            else:
                need(2)
                vs.add(_split_concat(parse_int(w[1]), vs.bitwidths))
        elif k in ("set_crc16_parameters", "set_crc32_parameters"):
            need(6)
            algo = "crc16_custom" if k == "set_crc16_parameters" else "crc32_custom"
            hashes.set_crc_parameters(algo, parse_int(w[1]), parse_int(w[2]), parse_int(w[3]),
                                      w[4].lower() in ("true", "1"), w[5].lower() in ("true", "1"))
        # register_read / counter_read print in BMv2's CLI and change nothing

    # -- BMv2 CLI: table_add and action profiles (a p4sim extension to p4c's STF) ----------------

    def _cli_match(self, table: Table, words: list[str]) -> tuple:
        if len(words) != len(table.keys):
            raise ValueError(f"table {table.name} has {len(table.keys)} key field(s), got {len(words)}")
        return tuple(key_value(v, k.match_kind, k.bitwidth) for v, k in zip(words, table.keys, strict=True))

    def _cli_entry(self, table: Table, words: list[str]) -> tuple[tuple, list[str], int]:
        """Split ``MATCH... => DATA... [PRIORITY]`` into (match, data words, priority)."""
        if "=>" not in words:
            raise ValueError("expected '=>' between the match fields and the action data")
        i = words.index("=>")
        match = self._cli_match(table, words[:i])
        data = words[i + 1:]
        priority = 0
        if table.needs_priority:
            if not data:
                raise ValueError(f"table {table.name} needs a priority")
            # BMv2's CLI: the SMALLEST priority value wins; the runtime's convention is larger wins.
            priority = BMV2_CLI_PRIORITY_BASE - parse_int(data[-1])
            data = data[:-1]
        return match, data, priority

    def _profile_cli(self, k: str, w: list[str]) -> None:
        if len(w) < 1:
            raise ValueError(f"{k} needs arguments")
        if k == "table_add":
            table = self._table(w[0])
            if len(w) < 2:
                raise ValueError("table_add needs TABLE ACTION MATCH... => DATA...")
            match, data, prio = self._cli_entry(table, w[2:])
            full = resolve_name(w[1], table.actions or self.action_params, "action")
            params = self.action_params.get(full, [])
            if len(data) != len(params):
                raise ValueError(f"action {full} takes {len(params)} argument(s), got {len(data)}")
            args = tuple(parse_int(x) & ((1 << wd) - 1) for x, (_, wd) in zip(data, params, strict=True))
            self._insert(table, TableEntry(match, ActionCall(full, args), priority=prio))
            return
        if k in ("table_indirect_add", "table_indirect_add_with_group"):
            table = self._table(w[0])
            match, data, prio = self._cli_entry(table, w[1:])
            if len(data) != 1:
                raise ValueError(f"{k}: expected one {'group' if k.endswith('group') else 'member'} handle")
            handle = parse_int(data[0])
            if k.endswith("group"):
                entry = TableEntry(match, None, priority=prio, group_id=handle)
            else:
                entry = TableEntry(match, None, priority=prio, member_id=handle)
            self._insert(table, entry)
            return
        if k == "table_indirect_set_default":
            raise ValueError("table_indirect_set_default is not supported by p4sim's STF runner")
        prof = self._extern("action_profiles", w[0])
        if k == "act_prof_create_member":
            if len(w) < 2:
                raise ValueError("act_prof_create_member needs PROFILE ACTION [PARAMS...]")
            full = resolve_name(w[1], prof.actions or self.action_params, "action")
            params = self.action_params.get(full, [])
            data = w[2:]
            if len(data) != len(params):
                raise ValueError(f"action {full} takes {len(params)} argument(s), got {len(data)}")
            handle = self._next_handle(("member", prof.name))
            prof.add_member(handle, ActionCall(full, tuple(parse_int(x) & ((1 << wd) - 1)
                                                         for x, (_, wd) in zip(data, params, strict=True))))
        elif k == "act_prof_create_group":
            prof.add_group(self._next_handle(("group", prof.name)))
        elif k == "act_prof_add_member_to_group":
            if len(w) < 3:
                raise ValueError(f"{k} needs PROFILE MEMBER_HANDLE GROUP_HANDLE")
            prof.add_member_to_group(parse_int(w[2]), parse_int(w[1]))
        elif k == "act_prof_remove_member_from_group":
            if len(w) < 3:
                raise ValueError(f"{k} needs PROFILE MEMBER_HANDLE GROUP_HANDLE")
            prof.remove_member_from_group(parse_int(w[2]), parse_int(w[1]))

    def _next_handle(self, key: tuple[str, str]) -> int:
        n = self.cli_handles.get(key, 0)
        self.cli_handles[key] = n + 1
        return n

    def _meter_set_rates(self, w: list[str]) -> None:
        if len(w) < 4:
            raise ValueError("meter_set_rates needs NAME INDEX RATE:BURST RATE:BURST")
        rates = []
        for spec in w[2:4]:
            if ":" not in spec:
                raise ValueError(f"meter rate {spec!r} is not RATE:BURST")
            r, b = spec.split(":", 1)
            rates.append((float(r), parse_int(b)))
        (cir, cbs), (pir, pbs) = rates
        meters = getattr(self.pipeline, "meters", {}) or {}
        direct = getattr(self.pipeline, "direct_meters", {}) or {}
        try:
            meter = meters[resolve_name(w[0], meters, "meter")]
        except ValueError:
            if not direct:
                raise
            dname = resolve_name(w[0], direct, "meter")
            dm = direct[dname]
            dm.set_config(self._entry_by_index(getattr(dm, "table", None), w[1]), cir, cbs, pir, pbs)
            return
        meter.set_config(parse_int(w[1]), cir, cbs, pir, pbs)

