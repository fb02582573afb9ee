"""The spec model: loading AMD's MR-ISA XML (sources, releases, the XML reader, the parsed-spec cache), the
immutable `Spec` with its instruction table, encoding conditions and fields, the forms the assembler and
disassembler share, MFMA names, and the target profiles."""


def __getattr__(name: str):
    """Submodules load on first attribute access (`isa.spec.targets`), as `jitgemm.isa`'s names do."""
    from jitgemm.isa import submodule

    return submodule(__name__, name)
