"""`jitgemm gfa`: hipBLASLt's Gemm-From-Anywhere contract, both ways.

    jitgemm gfa show KERNEL.s|.co [--custom-yaml T.yaml]   the jitgemm contract read from its custom.config
    jitgemm gfa export KERNEL.co [-o DIR]                    a GFA .s + manifest.yaml of a kernel with a contract
    jitgemm gfa export --m 256 --n 256 --k 256 --dtype bf16 --arch gfx942 [-o DIR]   compile, then export
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jitgemm.cli import CliError, problem_args, problems_from_args, use_spec_option


def register(subparsers) -> None:
    p = subparsers.add_parser("gfa", help="hipBLASLt GFA kernels: read one (show), write one (export)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="gfa_command", metavar="ACTION")
    s = sub.add_parser("show", help="the jitgemm contract of a GFA kernel, and hipBLASLt's metadata rules")
    s.add_argument("file", help="a GFA kernel: .s or code object with custom.config in its metadata")
    s.add_argument("--custom-yaml", metavar="YAML", help="a Tensile test YAML with its CustomKernel/ProblemType")
    s.add_argument("--arch", help="target (default: .amdgcn_target, the manifest's Target.ISA or the YAML's)")
    s.set_defaults(func=_show)
    e = sub.add_parser("export", help="write a kernel jitgemm holds as a GFA .s with custom.config + manifest.yaml")
    e.add_argument("file", nargs="?", help="a code object (.co/.hsaco) or .s whose kernel has a jitgemm contract; "
                   "without it, the problem options compile one")
    e.add_argument("--kernel", help="which kernel of the file (default: its first)")
    e.add_argument("-o", "--output", default=".", metavar="DIR", help="folder for <kernel>.s and manifest.yaml "
                   "(default: the current folder)")
    e.add_argument("--generator", default="asm", help="generator for a compiled problem (asm, llvm; default asm)")
    problem_args(e)
    for action in e._actions:      # the problem is optional here: a file may be given instead
        if action.dest in ("m", "n", "k"):
            action.required = False
    e.set_defaults(func=_export)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _show(args: argparse.Namespace) -> int:
    import yaml

    from jitgemm.gfa import read_kernel, to_contract
    from jitgemm.gfa.validate import validate

    kernel = read_kernel(args.file, custom_yaml=args.custom_yaml, arch=args.arch)
    contract = to_contract(kernel)
    print(yaml.safe_dump(dict(contract.data), sort_keys=False), end="")
    problems = validate(kernel.config)
    print(f"# hipBLASLt metadata rules: {'pass' if not problems else '; '.join(problems)}")
    for note in kernel.notes:
        print(f"# note: {note}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from jitgemm.gfa.validate import validate
    from jitgemm.gfa.writer import export

    if args.file:
        path = Path(args.file)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
        if path.suffix == ".s":
            from jitgemm.codegen.codeobj.relocatable import assemble_source

            raw = assemble_source(raw.decode(), file=str(path))[0]
        result = export(raw, args.kernel)
    else:
        if args.m is None or args.n is None or args.k is None:
            raise CliError("give a code object FILE, or a problem with --m, --n and --k")
        import jitgemm

        (problem,) = problems_from_args(args)   # the problem options every command shares (MX ones included)
        use_spec_option(args)
        kernel = jitgemm.compile(problem, arch=args.arch, generator=args.generator)
        result = export(kernel.code_object, kernel.name)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{result.name}.s").write_text(result.source)
    (out / "manifest.yaml").write_text(result.manifest_file())
    problems = validate(result.config)
    print(f"wrote {out / (result.name + '.s')} and {out / 'manifest.yaml'} (target {result.target}, "
          f"{result.manifest['ContentHash']})")
    print(f"hipBLASLt metadata rules: {'pass' if not problems else '; '.join(problems)}")
    for clause in result.unenforced:
        print(f"not enforced by hipBLASLt: {clause}")
    if result.words:
        print(f"{result.words} instruction(s) written as .long words (their disassembly does not assemble back)")
    return 1 if problems else 0
