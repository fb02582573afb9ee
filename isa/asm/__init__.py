"""The assembler: `.s` text -> statements (parser, fast path, macros, expressions) -> machine code (encoder),
and whole files -> objects (file)."""
