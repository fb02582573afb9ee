"""Write a synthetic MR-ISA spec with the shape and size of AMD's official CDNA 3 file (about 8 MB: 1,150
instructions, 32 encodings, 35 operand types, 83 data formats), for load-time benchmarks. The content is
made up; only the schema and the proportions follow the real file."""

from __future__ import annotations

import random
from pathlib import Path

N_ENCODINGS = 32
N_INSTRUCTIONS = 1150
N_OPERAND_TYPES = 35
N_DATA_FORMATS = 83


def _range(offset: int, count: int, order: int = 0) -> str:
    return (f'<Range Order="{order}"><BitCount>{count}</BitCount><BitOffset>{offset}</BitOffset></Range>')


def _field(name: str, offset: int, count: int, extra: str = "") -> str:
    return (f'<Field IsConditional="false"><FieldName>{name}</FieldName><Description>Synthetic field {name} '
            f'used for load benchmarks.</Description><BitLayout RangeCount="1">{_range(offset, count)}</BitLayout>'
            f'{extra}</Field>\n')


def _encoding(i: int, rng: random.Random) -> str:
    ids = "".join(f'<EncodingIdentifier Radix="2">{(0b101 << 29 | i << 24 | op << 16):032b}</EncodingIdentifier>\n'
                  for op in range(rng.randint(20, 120)))
    cond = ('<EncodingConditions><EncodingCondition><ConditionName>default</ConditionName><CondtionExpression>'
            '<op type="!="><op type=".fieldderef"><op type=".fieldderef"><id val="INST"/><id val="X"/></op>'
            '<id val="SRC0"/><ty><t base="I" size="32"/></ty></op><lit val="255"/><ty><t base="U" size="1"/></ty>'
            '</op></CondtionExpression></EncodingCondition></EncodingConditions>')
    fields = _field("ENCODING", 29, 3) + _field("OP", 16, 8) + _field("SRC0", 0, 9) + _field("VDST", 9, 7)
    fields += "".join(_field(f"F{k}", 32 + 2 * k, 2) for k in range(10))
    return (f'<Encoding Order="{i}"><EncodingName>ENC_SYN{i}</EncodingName><BitCount>64</BitCount>'
            f'<EncodingIdentifierMask Radix="2">{(0xFFFF << 16):032b}</EncodingIdentifierMask>'
            f'<EncodingIdentifiers>{ids}</EncodingIdentifiers>{cond}<Description>Synthetic encoding.</Description>'
            f'<MicrocodeFormat><BitMap>{fields}</BitMap></MicrocodeFormat></Encoding>\n')


def _instruction(i: int, rng: random.Random) -> str:
    encs = []
    for k in range(rng.randint(2, 5)):
        ops = "".join(
            f'<Operand Input="{"true" if o else "false"}" Output="{"false" if o else "true"}" IsImplicit="false" '
            f'IsBinaryMicrocodeRequired="true" Order="{o + 1}"><FieldName>{"VDST" if o == 0 else "SRC0"}</FieldName>'
            f'<DataFormatName>FMT_SYN{rng.randrange(N_DATA_FORMATS)}</DataFormatName>'
            f'<OperandType>OPR_SYN{rng.randrange(N_OPERAND_TYPES)}</OperandType><OperandSize>32</OperandSize>'
            f'</Operand>\n' for o in range(rng.randint(2, 5)))
        encs.append(f'<InstructionEncoding><EncodingName>ENC_SYN{(i + k) % N_ENCODINGS}</EncodingName>'
                    f'<EncodingCondition>default</EncodingCondition><Opcode Radix="10">{i % 256}</Opcode>'
                    f'<Operands>{ops}</Operands></InstructionEncoding>\n')
    text = "Synthetic instruction text that stands in for AMD's long descriptions. " * rng.randint(4, 28)
    flags = "".join(f"<{f}>FALSE</{f}>" for f in ("IsBranch", "IsConditionalBranch", "IsIndirectBranch",
                                                  "IsProgramTerminator", "IsImmediatelyExecuted"))
    return (f'<Instruction><InstructionFlags>{flags}</InstructionFlags><InstructionName>SYN_OP_{i}</InstructionName>'
            f'<Description>{text}</Description><InstructionEncodings>{"".join(encs)}</InstructionEncodings>'
            f'<FunctionalGroup><Name>VALU</Name><FunctionalSubgroups><Subgroup>SYN</Subgroup></FunctionalSubgroups>'
            f'</FunctionalGroup></Instruction>\n')


def _data_format(i: int) -> str:
    maps = "".join(f'<BitMap Order="{c}"><Field Signedness="Unsigned"><FieldName>Bits</FieldName>'
                   f'<BitLayout RangeCount="1">{_range(32 * c, 32)}</BitLayout></Field></BitMap>\n' for c in range(12))
    return (f'<DataFormat><DataFormatName>FMT_SYN{i}</DataFormatName><Description>Synthetic.</Description>'
            f'<DataType>bits</DataType><BitCount>32</BitCount><ComponentCount>1</ComponentCount>'
            f'<DataAttributes>{maps}</DataAttributes></DataFormat>\n')


def _operand_type(i: int) -> str:
    values = "".join(f'<PredefinedValue><Name>r{v}</Name><Description>&lt;p&gt;See above.&lt;/p&gt;</Description>'
                     f'<Value>{v}</Value></PredefinedValue>\n' for v in range(600))
    return (f'<OperandType IsPartitioned="false"><OperandTypeName>OPR_SYN{i}</OperandTypeName><Description>N/A'
            f'</Description><OperandPredefinedValues>{values}</OperandPredefinedValues></OperandType>\n')


def write_synthetic_spec(path: Path, seed: int = 0) -> Path:
    rng = random.Random(seed)
    parts = ["<Spec><Document><Copyright>synthetic spec for jitgemm benchmarks</Copyright><License>MIT</License>"
             "<ReleaseDate>2026-01-01</ReleaseDate><SchemaVersion>1.1.1</SchemaVersion></Document><ISA>"
             "<Architecture><ArchitectureName>SYNTHETIC</ArchitectureName><ArchitectureId>0</ArchitectureId>"
             "</Architecture><Encodings>\n"]
    parts += [_encoding(i, rng) for i in range(N_ENCODINGS)]
    parts.append("</Encodings><Instructions>\n")
    parts += [_instruction(i, rng) for i in range(N_INSTRUCTIONS)]
    parts.append("</Instructions><DataFormats>\n")
    parts += [_data_format(i) for i in range(N_DATA_FORMATS)]
    parts.append("</DataFormats><OperandTypes>\n")
    parts += [_operand_type(i) for i in range(N_OPERAND_TYPES)]
    parts.append("</OperandTypes></ISA></Spec>\n")
    path.write_text("".join(parts))
    return path
