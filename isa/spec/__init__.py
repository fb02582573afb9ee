"""The spec model: loading AMD's MR-ISA XML (sources, releases, the XML reader, the parsed-spec cache), the
immutable `Spec` with its instruction table, encoding conditions and fields, the forms the assembler and
disassembler share, MFMA names, and the target profiles."""
