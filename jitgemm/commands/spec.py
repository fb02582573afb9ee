"""`jitgemm spec info|show|fetch|import`: which spec is in use, what it says about an instruction, and
how to get AMD's official files onto this machine."""

from __future__ import annotations

import argparse
import sys

from jitgemm.cli import CliError


def _add_source_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--arch", default="gfx942", help="target id whose spec to use (default gfx942)")
    src.add_argument("--spec", metavar="PATH", help="a spec XML file (or a folder holding one)")


def _location(args: argparse.Namespace):
    from jitgemm import isa
    return isa.locate_spec(args.spec if args.spec else args.arch)


def _info(args: argparse.Namespace) -> int:
    from jitgemm import isa
    loc = _location(args)
    spec = isa.spec.sources.load_spec_file(loc.path)
    doc = spec.document
    counts = spec.counts()
    rows = [
        ("source", f"{loc.path} ({loc.origin})"),
        ("sha256", spec.sha256),
        ("architecture", f"{spec.architecture.name} (id {spec.architecture.id})"),
        ("release date", doc.release_date or "-"),
        ("schema version", doc.schema_version or "-"),
        ("copyright", doc.copyright or "-"),
        ("license", doc.license or "-"),
        ("instructions", str(counts["instructions"])),
        ("encodings", str(counts["encodings"])),
        ("operand types", str(counts["operand_types"])),
        ("data formats", str(counts["data_formats"])),
    ]
    if loc.target:
        rows.insert(0, ("target", loc.target))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    for warning in spec.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace) -> int:
    from jitgemm import isa
    from jitgemm.isa.spec import conditions as expr

    loc = _location(args)
    spec = isa.spec.sources.load_spec_file(loc.path)
    inst = spec.find_instruction(args.name)
    if inst is None:
        close = spec.closest_instruction_names(args.name)
        hint = f"; closest: {', '.join(close)}" if close else ""
        message = f"{args.name!r} is not an instruction of {spec.architecture.name} ({loc.path}){hint}"
        if args.json:
            from jitgemm.commands.json_output import emit

            emit({"command": "spec show", "ok": False, "diagnostics": [
                {"severity": "error", "message": message, "accepted": list(close)}]})
            return 2
        raise CliError(message)
    if args.json:
        from jitgemm.commands.json_output import emit

        emit({"command": "spec show", "ok": True, "spec": str(loc.path), "architecture": spec.architecture.name,
              **instruction_facts(spec, inst)})
        return 0
    print(inst.name + (f"  (aliases: {', '.join(inst.aliases)})" if inst.aliases else ""))
    flags = [k for k, v in inst.flags.items() if v]
    if inst.functional_group:
        subs = f" / {', '.join(inst.functional_subgroups)}" if inst.functional_subgroups else ""
        print(f"  group: {inst.functional_group}{subs}")
    print(f"  flags: {', '.join(flags) if flags else '(none)'}")
    if inst.description:
        print(f"  {inst.description}")
    for ie in inst.encodings:
        enc = spec.encodings[ie.encoding_name]
        cond = enc.condition(ie.condition_name)
        cond_text = expr.to_text(cond.expression) if cond else "(not defined by the encoding)"
        opcode = format(ie.opcode, "b") if ie.opcode_radix == 2 else str(ie.opcode)
        print(f"\n  {ie.encoding_name} ({enc.bit_count} bits)  opcode {opcode} (0x{ie.opcode:x})  "
              f"condition {ie.condition_name}: {cond_text}")
        print(f"    {'#':>2}  {'field':<10} {'bits':<14} {'operand type':<34} {'format':<18} {'size':>4}  dir")
        for op in ie.operands:
            bits = enc.fields[op.field_name].layout_text if op.field_name in enc.fields else "-"
            direction = ("in" if op.input else "") + ("/" if op.input and op.output else "") + \
                        ("out" if op.output else "")
            extra = " implicit" if op.implicit else ""
            print(f"    {op.order:>2}  {op.field_name or '-':<10} {bits:<14} {op.operand_type or '-':<34} "
                  f"{op.data_format or '-':<18} {op.size:>4}  {direction or '-'}{extra}")
    return 0


def instruction_facts(spec, inst) -> dict:
    """An instruction as the spec describes it, JSON-ready: names, flags, and per encoding its opcode,
    condition and operands (field, bit ranges, operand type, data format, size, direction)."""
    from jitgemm.isa.spec import conditions as expr

    encodings = []
    for ie in inst.encodings:
        enc = spec.encodings[ie.encoding_name]
        cond = enc.condition(ie.condition_name)
        encodings.append({
            "encoding": ie.encoding_name, "bits": enc.bit_count, "opcode": ie.opcode,
            "condition": ie.condition_name, "condition_text": expr.to_text(cond.expression) if cond else None,
            "operands": [{"order": op.order, "field": op.field_name or None,
                          "bit_layout": enc.fields[op.field_name].layout_text if op.field_name in enc.fields else None,
                          "operand_type": op.operand_type or None, "data_format": op.data_format or None,
                          "size": op.size, "input": bool(op.input), "output": bool(op.output),
                          "implicit": bool(op.implicit)} for op in ie.operands]})
    return {"name": inst.name, "aliases": list(inst.aliases), "functional_group": inst.functional_group,
            "functional_subgroups": list(inst.functional_subgroups or ()),
            "flags": [k for k, v in inst.flags.items() if v], "description": inst.description,
            "encodings": encodings}


def _card(args: argparse.Namespace) -> int:
    """`spec card NAME... | --all`: compact instruction cards (jitgemm/spec_cards.py) as Markdown or JSON."""
    import json

    from jitgemm import spec_cards

    if bool(args.all) == bool(args.names):
        raise CliError("spec card: name one or more instructions, or give --all")
    try:
        cards = spec_cards.cards(args.arch, None if args.all else args.names)
    except KeyError as exc:
        raise CliError(str(exc.args[0])) from None
    if args.format == "json":
        print(json.dumps(cards, indent=1))
    else:
        print("\n".join(spec_cards.card_markdown(c) for c in cards), end="")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from jitgemm.isa.spec import release as spec_release

    for path in spec_release.fetch(args.release):
        print(f"verified and extracted {path}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from jitgemm.isa.spec import release as spec_release

    for path in spec_release.import_archive(args.file, args.release):
        print(f"verified and extracted {path}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("spec", help="the ISA spec: info, show an instruction, fetch/import official files")
    ssub = p.add_subparsers(dest="spec_command", metavar="SPEC_COMMAND", required=True)

    info = ssub.add_parser("info", help="which spec file is used, its header and counts")
    _add_source_args(info)
    info.set_defaults(func=_info)

    show = ssub.add_parser("show", help="an instruction's encodings, opcodes, operands, flags, description")
    show.add_argument("name", help="instruction name or alias, any case (e.g. v_mfma_f32_32x32x8_bf16)")
    show.add_argument("--json", action="store_true", help="print the instruction's facts as JSON")
    _add_source_args(show)
    show.set_defaults(func=_show)

    card = ssub.add_parser("card", help="compact instruction cards for a model's context: prose, operands, timing "
                           "class, hazards")
    card.add_argument("names", nargs="*", metavar="NAME", help="instruction names or aliases, any case")
    card.add_argument("--all", action="store_true", help="every instruction of the target's spec")
    card.add_argument("--format", choices=["md", "json"], default="md", help="Markdown (default) or JSON")
    card.add_argument("--arch", default="gfx942", help="target id whose spec and profile to use (default gfx942)")
    card.set_defaults(func=_card)

    fetch = ssub.add_parser("fetch", help="download AMD's official MR-ISA zip, verify it, extract to the cache")
    fetch.add_argument("--release", help="pinned release name (default: the newest pinned, 2026_08_06)")
    fetch.set_defaults(func=_fetch)

    imp = ssub.add_parser("import", help="verify and extract an official MR-ISA zip obtained elsewhere")
    imp.add_argument("file", help="the AMD_GPU_MR_ISA_XML_<release>.zip file")
    imp.add_argument("--release", help="pinned release it must match (default: the newest pinned)")
    imp.set_defaults(func=_import)
