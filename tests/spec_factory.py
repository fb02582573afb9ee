"""Small, project-written specs in AMD's MR-ISA schema, for loader tests (bad input, cache, sources)."""

from __future__ import annotations

import pytest
from jitgemm.isa.spec import sources as spec_sources


@pytest.fixture(autouse=True)
def private_spec_cache(tmp_path, monkeypatch):
    """Each test its own cache folder and no JITGEMM_ISA_SPEC_DIR, with the in-process spec memos emptied before
    and after (the state a new process starts in). Autouse in the modules that import it."""
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JITGEMM_ISA_SPEC_DIR", raising=False)
    spec_sources._memo.clear()
    spec_sources._sha_memo.clear()
    yield
    spec_sources._memo.clear()
    spec_sources._sha_memo.clear()

TEMPLATE = """<Spec>
    <Document>
        <Copyright>test spec written by jitgemm's tests</Copyright>
        <License>MIT</License>
        <ReleaseDate>2026-01-01</ReleaseDate>
        <SchemaVersion>1.1.1</SchemaVersion>
    </Document>
    <ISA>
        <Architecture>
            <ArchitectureName>{arch}</ArchitectureName>
            <ArchitectureId>99</ArchitectureId>
        </Architecture>
        <Encodings>
            <Encoding Order="0">
                <EncodingName>ENC_TOY</EncodingName>
                <BitCount>32</BitCount>
                <EncodingIdentifierMask Radix="2">11111111000000000000000000000000</EncodingIdentifierMask>
                <EncodingIdentifiers>
                    <EncodingIdentifier Radix="2">10100001000000000000000000000000</EncodingIdentifier>
                </EncodingIdentifiers>
                <EncodingConditions>
                    <EncodingCondition>
                        <ConditionName>default</ConditionName>
                        <CondtionExpression><lit val="1"/></CondtionExpression>
                    </EncodingCondition>
                </EncodingConditions>
                <SomethingNew>unknown elements are ignored</SomethingNew>
                <MicrocodeFormat>
                    <BitMap>
                        <Field IsConditional="false">
                            <FieldName>OP</FieldName>
                            <BitLayout RangeCount="1">
                                <Range Order="0"><BitCount>4</BitCount><BitOffset>24</BitOffset></Range>
                            </BitLayout>
                        </Field>
                        <Field IsConditional="false">
                            <FieldName>DST</FieldName>
                            <BitLayout RangeCount="2">
                                <Range Order="0"><BitCount>4</BitCount><BitOffset>0</BitOffset></Range>
                                <Range Order="1"><BitCount>2</BitCount><BitOffset>20</BitOffset></Range>
                            </BitLayout>
                        </Field>
                    </BitMap>
                </MicrocodeFormat>
            </Encoding>
        </Encodings>
        <Instructions>
            <Instruction>
                <InstructionFlags>
                    <IsBranch>FALSE</IsBranch><IsProgramTerminator>TRUE</IsProgramTerminator>
                </InstructionFlags>
                <InstructionName>T_STOP</InstructionName>
                <AliasedInstructionNames><InstructionName>T_HALT</InstructionName></AliasedInstructionNames>
                <InstructionEncodings>
                    <InstructionEncoding>
                        <EncodingName>{encoding}</EncodingName>
                        <EncodingCondition>default</EncodingCondition>
                        <Opcode Radix="10">1</Opcode>
                        <Operands>
                            <Operand Input="false" Output="true" IsImplicit="false"
                                     IsBinaryMicrocodeRequired="true" Order="1">
                                <FieldName>{field}</FieldName>
                                <DataFormatName>{fmt}</DataFormatName>
                                <OperandType>{otype}</OperandType>
                                <OperandSize>32</OperandSize>
                            </Operand>
                        </Operands>
                    </InstructionEncoding>
                </InstructionEncodings>
            </Instruction>
        </Instructions>
        <DataFormats>
            <DataFormat>
                <DataFormatName>FMT_TOY</DataFormatName>
                <DataType>bits</DataType>
                <BitCount>32</BitCount>
                <ComponentCount>1</ComponentCount>
            </DataFormat>
        </DataFormats>
        <OperandTypes>
            <OperandType IsPartitioned="false">
                <OperandTypeName>OPR_TOY</OperandTypeName>
                <OperandPredefinedValues>
                    <PredefinedValue><Name>r0</Name><Value>0</Value></PredefinedValue>
                    <PredefinedValue><Name>r1</Name><Value>1</Value></PredefinedValue>
                </OperandPredefinedValues>
                <Subtypes>{subtypes}</Subtypes>
            </OperandType>
        </OperandTypes>
    </ISA>
</Spec>
"""


def toy_spec(*, arch: str = "TOY ARCH", encoding: str = "ENC_TOY", field: str = "DST", fmt: str = "FMT_TOY",
             otype: str = "OPR_TOY", subtypes: str = "") -> str:
    return TEMPLATE.format(arch=arch, encoding=encoding, field=field, fmt=fmt, otype=otype, subtypes=subtypes)
