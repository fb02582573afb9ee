"""The disassembler: machine code -> instruction objects (decoder, its on-disk decode index) -> text (printer)."""
