"""P4Info (``p4.config.v1.P4Info``) for a compiled program, the way p4c produces it.

Names are fully qualified (``MyIngress.ipv4_lpm``), aliases are shortest unique suffixes, ids
carry the ``P4Ids`` prefix and p4c's name hash (``ids.py``), match fields and action params are
numbered from 1, and annotations other than ``@name``/``@id``/``@brief``/``@description`` are kept
as their source text. A controller written against p4c's P4Info works unchanged.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2, p4types_pb2

from p4sim.backend import ids
from p4sim.backend.exprgen import width_of
from p4sim.backend.resources import Manifest
from p4sim.frontend import ast

_SKIP_ANNOTATIONS = {"name", "id", "brief", "description", "hidden"}
_MATCH = {"exact": p4info_pb2.MatchField.EXACT, "lpm": p4info_pb2.MatchField.LPM,
          "ternary": p4info_pb2.MatchField.TERNARY, "range": p4info_pb2.MatchField.RANGE,
          "optional": p4info_pb2.MatchField.OPTIONAL}
_COUNTER_UNIT = {"packets": p4info_pb2.CounterSpec.PACKETS, "bytes": p4info_pb2.CounterSpec.BYTES,
                 "packets_and_bytes": p4info_pb2.CounterSpec.BOTH}
_METER_UNIT = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}
_SCOPE = {"": p4info_pb2.ActionRef.TABLE_AND_DEFAULT, "tableonly": p4info_pb2.ActionRef.TABLE_ONLY,
          "defaultonly": p4info_pb2.ActionRef.DEFAULT_ONLY}


def annotation_text(a: ast.Annotation) -> str:
    if a.kv:
        return f"@{a.name}[{a.body}]"
    return f"@{a.name}({a.body})" if a.body or a.args else f"@{a.name}"


def _explicit_id(annotations: list[Any]) -> int | None:
    for a in annotations or ():
        if a.name == "id" and a.args and isinstance(a.args[0], ast.IntLiteral):
            return a.args[0].value
    return None


def _fill_preamble(pre: p4info_pb2.Preamble, pid: int, name: str, alias: str, annotations: list[Any]) -> None:
    pre.id = pid
    pre.name = name
    pre.alias = alias
    for a in annotations or ():
        if a.name == "brief" and a.args and isinstance(a.args[0], ast.StringLiteral):
            pre.doc.brief = a.args[0].value
        elif a.name == "description" and a.args and isinstance(a.args[0], ast.StringLiteral):
            pre.doc.description = a.args[0].value
        elif a.name not in _SKIP_ANNOTATIONS:
            pre.annotations.append(annotation_text(a))


def _annotations(target: Any, annotations: list[Any]) -> None:
    for a in annotations or ():
        if a.name not in _SKIP_ANNOTATIONS:
            target.annotations.append(annotation_text(a))


def _controller_header_name(d: ast.HeaderDecl) -> str:
    a = d.annotation("controller_header")
    if a is not None and a.args and isinstance(a.args[0], ast.StringLiteral):
        return a.args[0].value
    return d.name


def _hidden(annotations: list[Any]) -> bool:
    return any(a.name == "hidden" for a in annotations or ())


def _register_cell_type(decl: Any) -> Any:
    t = getattr(decl, "type", None)
    args = getattr(t, "type_args", None)
    return args[0] if args else None


def _table_property_true(decl: Any, name: str) -> bool:
    prop = decl.prop(name) if decl is not None else None
    return prop is not None and isinstance(prop.value, ast.BoolLiteral) and prop.value.value


def _ser_enum(t: Any) -> ast.SerEnumT | None:
    return t if isinstance(t, ast.SerEnumT) else None


def _add_ser_enum(info: p4info_pb2.P4Info, t: Any) -> None:
    """List serializable enum ``t`` in ``type_info`` (p4c does so for the enums that appear in
    a match key, a table action's parameter, a controller header or a digest)."""
    e = _ser_enum(t)
    if e is None or e.name in info.type_info.serializable_enums:
        return
    m = info.type_info.serializable_enums[e.name]
    m.underlying_type.bitwidth = e.underlying.width
    nbytes = (e.underlying.width + 7) // 8
    for member, value in e.members:
        mem = m.members.add()
        mem.name = member
        mem.value = (value & ((1 << e.underlying.width) - 1)).to_bytes(nbytes, "big")


def _type_spec(info: p4info_pb2.P4Info, spec: Any, t: Any) -> bool:
    """Fill ``spec`` (a P4DataTypeSpec) for ``t`` as p4c's TypeSpecConverter does, adding the
    named types it refers to to ``type_info``; False for a type p4sim does not describe."""
    if isinstance(t, ast.BitT):
        (spec.bitstring.int if t.signed else spec.bitstring.bit).bitwidth = t.width
    elif isinstance(t, ast.BoolT):
        spec.bool.SetInParent()
    elif isinstance(t, ast.VarbitT):
        spec.bitstring.varbit.max_bitwidth = t.max_width
    elif isinstance(t, ast.SerEnumT):
        spec.serializable_enum.name = t.name
        _add_ser_enum(info, t)
    elif isinstance(t, (ast.StructT, ast.HeaderT, ast.HeaderUnionT)):
        kind = {ast.StructT: "struct", ast.HeaderT: "header", ast.HeaderUnionT: "header_union"}[type(t)]
        getattr(spec, kind).name = t.name
        table = {"struct": info.type_info.structs, "header": info.type_info.headers,
                 "header_union": info.type_info.header_unions}[kind]
        if t.name in table:
            return True
        entry = table[t.name]
        for fname, ftype in t.fields:
            mem = entry.members.add()
            mem.name = fname
            if kind == "header":        # a header's members are bit<W>/int<W>/varbit only
                if isinstance(ftype, ast.BitT):
                    (mem.type_spec.int if ftype.signed else mem.type_spec.bit).bitwidth = ftype.width
                elif isinstance(ftype, ast.VarbitT):
                    mem.type_spec.varbit.max_bitwidth = ftype.max_width
                else:
                    mem.type_spec.bit.bitwidth = width_of(ftype)
            elif kind == "header_union":
                mem.header.name = ftype.name
                _type_spec(info, p4types_pb2.P4DataTypeSpec(), ftype)
            elif not _type_spec(info, mem.type_spec, ftype):
                mem.type_spec.bitstring.bit.bitwidth = width_of(ftype)
    elif isinstance(t, ast.HeaderStackT) and isinstance(t.element, ast.HeaderT):
        spec.header_stack.header.name = t.element.name
        spec.header_stack.size = t.size
        _type_spec(info, p4types_pb2.P4DataTypeSpec(), t.element)
    elif isinstance(t, ast.TupleT):
        for et in t.elements:
            if not _type_spec(info, spec.tuple.members.add(), et):
                return False
    else:
        return False
    return True


def build_p4info(program: ast.Program, man: Manifest) -> p4info_pb2.P4Info:
    """P4Info for ``program`` from the generator's ``Manifest``. As p4c, it leaves out
    ``@hidden`` tables (the control plane cannot see them) and tables nothing applies (p4c's
    front end removes them, and the actions only they list)."""
    man = Manifest(tables=[t for t in man.tables if t.applied and not _hidden(t.annotations)], externs=man.externs,
                   value_sets=man.value_sets, actions=man.actions, action_order=man.action_order,
                   digests=man.digests, controller_headers=man.controller_headers,
                   called_actions=man.called_actions, extern_function_calls=man.extern_function_calls)
    alloc = ids.IdAllocator()
    referenced: set[str] = set()
    for t in man.tables:
        referenced.update(t.dispatch or [a.name for a in t.actions])
    referenced.update(a for a in man.called_actions if a in man.actions)   # p4c lists them too
    used_actions = [a for a in man.action_order if a in referenced]
    used_actions += sorted(referenced - set(used_actions))
    kinds = {"counter": ids.COUNTER, "direct_counter": ids.DIRECT_COUNTER, "meter": ids.METER,
             "direct_meter": ids.DIRECT_METER, "register": ids.REGISTER, "action_profile": ids.ACTION_PROFILE,
             "action_selector": ids.ACTION_PROFILE}
    for t in man.tables:
        alloc.add(ids.TABLE, t.name, _explicit_id(t.annotations))
    for name in used_actions:
        decl = man.actions[name].decl
        alloc.add(ids.ACTION, name, _explicit_id(decl.annotations if decl is not None else []))
    for x in man.externs:
        alloc.add(kinds[x.kind], x.name, _explicit_id(x.annotations))
    for vs in man.value_sets:
        alloc.add(ids.VALUE_SET, vs.name, _explicit_id(vs.annotations))
    for d in man.digests.values():
        alloc.add(ids.DIGEST, d.name)
    for h in man.controller_headers:    # p4c hashes the header type's name, shows @controller_header's
        alloc.add(ids.CONTROLLER_HEADER, h.name, _explicit_id(h.annotations))
    alloc.finish()
    all_names = ([t.name for t in man.tables] + used_actions + [x.name for x in man.externs]
                 + [v.name for v in man.value_sets] + list(man.digests)
                 + [_controller_header_name(h) for h in man.controller_headers])
    alias = ids.shortest_unique_suffixes(all_names)

    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    ext_by_name = {x.name: x for x in man.externs}
    for t in man.tables:
        pt = info.tables.add()
        _fill_preamble(pt.preamble, alloc.get(ids.TABLE, t.name), t.name, alias[t.name], t.annotations)
        for i, k in enumerate(t.keys, 1):
            mf = pt.match_fields.add()
            mf.id = i
            mf.name = k.name
            mf.bitwidth = k.bitwidth
            mf.match_type = _MATCH[k.match_kind]
            _annotations(mf, k.annotations)
            _add_ser_enum(info, k.type)
        refs = t.actions
        for ref in refs:
            ar = pt.action_refs.add()
            ar.id = alloc.get(ids.ACTION, ref.name)
            ar.scope = _SCOPE[ref.scope]
            _annotations(ar, ref.annotations)
        if t.default_action is not None and t.default_action[0] not in {r.name for r in refs}:
            ar = pt.action_refs.add()
            ar.id = alloc.get(ids.ACTION, t.default_action[0])
            ar.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
            ar.annotations.append("@defaultonly")
        if t.default_action is not None:
            if t.default_is_const:
                pt.const_default_action_id = alloc.get(ids.ACTION, t.default_action[0])
            pt.initial_default_action.action_id = alloc.get(ids.ACTION, t.default_action[0])
            widths = [w for _, w, _ in man.actions[t.default_action[0]].params] \
                if t.default_action[0] in man.actions else []
            for i, value in enumerate(t.default_action[1], 1):
                arg = pt.initial_default_action.arguments.add()
                arg.param_id = i
                # p4c writes every byte of the parameter's width
                nbytes = (widths[i - 1] + 7) // 8 if i <= len(widths) else (value.bit_length() + 7) // 8
                arg.value = value.to_bytes(max(1, nbytes, (value.bit_length() + 7) // 8), "big")
        if t.implementation:
            x = ext_by_name[t.implementation]
            pt.implementation_id = alloc.get(kinds[x.kind], x.name)
        for res_name in (t.direct_counter, t.direct_meter):
            if res_name:
                x = ext_by_name[res_name]
                pt.direct_resource_ids.append(alloc.get(kinds[x.kind], x.name))
        pt.size = t.size
        if t.entries:
            pt.is_const_table = bool(t.entries_const)
            pt.has_initial_entries = True      # p4c sets it for const entries too
        if _table_property_true(t.decl, "support_timeout"):
            pt.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
    in_tables = {a for t in man.tables for a in (t.dispatch or [r.name for r in t.actions])}
    for name in used_actions:
        desc = man.actions[name]
        pa = info.actions.add()
        _fill_preamble(pa.preamble, alloc.get(ids.ACTION, name), name, alias[name],
                       desc.decl.annotations if desc.decl is not None else [])
        # an action no table lists is only called directly: p4c binds its arguments at the
        # call site, so the control plane sees no parameters
        params = desc.params if name in in_tables else []
        for i, (pname, width, annos) in enumerate(params, 1):
            pp = pa.params.add()
            pp.id = _explicit_id(annos) or i
            pp.name = pname
            pp.bitwidth = width
            _annotations(pp, annos)
            if desc.decl is not None and i <= len(desc.decl.params):
                _add_ser_enum(info, desc.decl.params[i - 1].type)
    for x in man.externs:
        pid = alloc.get(kinds[x.kind], x.name)
        owner = next((t.name for t in man.tables if x.name in (t.direct_counter, t.direct_meter)), None)
        if x.kind == "counter":
            m = info.counters.add()
            _fill_preamble(m.preamble, pid, x.name, alias[x.name], x.annotations)
            m.spec.unit = _COUNTER_UNIT[x.params["kind"]]
            m.size = x.params["size"]
        elif x.kind == "direct_counter":
            m = info.direct_counters.add()
            _fill_preamble(m.preamble, pid, x.name, alias[x.name], x.annotations)
            m.spec.unit = _COUNTER_UNIT[x.params["kind"]]
            if owner:
                m.direct_table_id = alloc.get(ids.TABLE, owner)
        elif x.kind == "meter":
            m = info.meters.add()
            _fill_preamble(m.preamble, pid, x.name, alias[x.name], x.annotations)
            m.spec.unit = _METER_UNIT[x.params["kind"]]
            m.size = x.params["size"]
        elif x.kind == "direct_meter":
            m = info.direct_meters.add()
            _fill_preamble(m.preamble, pid, x.name, alias[x.name], x.annotations)
            m.spec.unit = _METER_UNIT[x.params["kind"]]
            if owner:
                m.direct_table_id = alloc.get(ids.TABLE, owner)
        elif x.kind == "register":
            m = info.registers.add()
            _fill_preamble(m.preamble, pid, x.name, alias[x.name], x.annotations)
            cell = _register_cell_type(x.decl)
            if cell is None or not _type_spec(info, m.type_spec, cell):
                m.type_spec.Clear()
                m.type_spec.bitstring.bit.bitwidth = x.params["bitwidth"]
            m.size = x.params["size"]
        else:
            m = info.action_profiles.add()
            _fill_preamble(m.preamble, pid, x.name, alias[x.name], x.annotations)
            for t in man.tables:
                if t.implementation == x.name:
                    m.table_ids.append(alloc.get(ids.TABLE, t.name))
            m.with_selector = x.kind == "action_selector"
            m.size = x.params["size"]
    for vs in man.value_sets:
        m = info.value_sets.add()
        _fill_preamble(m.preamble, alloc.get(ids.VALUE_SET, vs.name), vs.name, alias[vs.name], vs.annotations)
        t = vs.decl.type if vs.decl is not None else None
        names = [f for f, _ in t.fields] if isinstance(t, ast.StructT) else [""]
        for i, (fname, width) in enumerate(zip(names, vs.bitwidths, strict=False), 1):
            mf = m.match.add()
            mf.id = i
            mf.name = fname
            mf.bitwidth = width
            mf.match_type = p4info_pb2.MatchField.EXACT
        m.size = vs.size
    for d in man.digests.values():
        m = info.digests.add()
        _fill_preamble(m.preamble, alloc.get(ids.DIGEST, d.name), d.name, alias[d.name], [])
        m.type_spec.struct.name = d.name
        st = info.type_info.structs[d.name]
        for i, (fname, width) in enumerate(d.fields):
            mem = st.members.add()
            mem.name = fname
            ftype = d.field_types[i] if i < len(d.field_types) else None
            if ftype is None or not _type_spec(info, mem.type_spec, ftype):
                mem.type_spec.bitstring.bit.bitwidth = width
    for h in man.controller_headers:
        name = _controller_header_name(h)
        m = info.controller_packet_metadata.add()
        _fill_preamble(m.preamble, alloc.get(ids.CONTROLLER_HEADER, h.name), name, alias[name], h.annotations)
        for i, f in enumerate(h.fields, 1):
            md = m.metadata.add()
            md.id = _explicit_id(f.annotations) or i
            md.name = f.name
            md.bitwidth = width_of(f.type)
            _annotations(md, f.annotations)
            _add_ser_enum(info, f.type)
    # p4c writes type_info (empty when unused) once it has converted a type: for any table,
    # extern instance, digest, controller header or call of a v1model extern function; not for
    # actions, value sets and core's verify() alone
    if (info.tables or info.counters or info.direct_counters or info.meters or info.direct_meters
            or info.registers or info.action_profiles or info.digests or info.controller_packet_metadata
            or man.extern_function_calls):
        info.type_info.SetInParent()
    return info


def to_text(info: p4info_pb2.P4Info) -> str:
    """The text format p4c writes with ``--p4runtime-files x.p4info.txtpb`` (its two header
    comment lines included)."""
    return ("# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"
            + text_format.MessageToString(info))
