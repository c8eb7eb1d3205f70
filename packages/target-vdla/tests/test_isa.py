"""The ISA: every format round-trips through its 128-bit word; fields that do not fit fail."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge_vdla.config import TAGS, VDLAConfig
from tensorforge_vdla.errors import VDLAConfigError, VDLAEncodingError
from tensorforge_vdla.isa import (
    Alu,
    AluOp,
    Finish,
    Gemm,
    Load,
    MemId,
    Stage,
    Store,
    check_config,
    decode,
    decode_program,
    decode_uops,
    disassemble,
    encode,
    encode_program,
    encode_uops,
    layout,
    stage_of,
)

CONFIGS = [VDLAConfig(), VDLAConfig(log_block_in=5, log_block_out=5)]


def _bits(cls, cfg, name):
    return next(w for n, _, w in layout(cls, cfg) if n == name)


@st.composite
def instructions(draw, cfg):
    cls = draw(st.sampled_from([Load, Store, Gemm, Alu, Finish]))
    kwargs = {}
    for name, _, width in layout(cls, cfg):
        if name == "opcode":
            continue
        if name == "mem":
            mems = [MemId.INP, MemId.WGT, MemId.UOP, MemId.ACC] if cls is Load else \
                [MemId.ACC, MemId.OUT]
            kwargs[name] = draw(st.sampled_from(mems))
        elif name == "op":
            kwargs[name] = draw(st.sampled_from(list(AluOp)))
        elif name == "imm":
            kwargs[name] = draw(st.integers(-(1 << (width - 1)), (1 << (width - 1)) - 1))
        elif width == 1:
            kwargs[name] = draw(st.booleans())
        else:
            kwargs[name] = draw(st.integers(0, (1 << width) - 1))
    insn = cls(**kwargs)
    stage = stage_of(insn)  # flags toward a missing neighbour are not encodable
    if stage == Stage.LOAD:
        insn = dataclasses.replace(insn, pop_prev=False, push_prev=False)
    if stage == Stage.STORE:
        insn = dataclasses.replace(insn, pop_next=False, push_next=False)
    return insn


@pytest.mark.parametrize("cfg", CONFIGS, ids=["1x16x16", "1x32x32"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_encode_decode_round_trip(cfg, data):
    insn = data.draw(instructions(cfg))
    word = encode(insn, cfg)
    assert 0 <= word < 1 << 128
    assert decode(word, cfg) == insn


def test_every_format_fits_128_bits_for_every_tag():
    from tensorforge.target import Target
    from tensorforge_vdla.plugin import VDLA

    for config, _ in TAGS.values():
        cfg = VDLAConfig.from_target(Target(VDLA, _options(config)))
        check_config(cfg)
    assert CONFIGS[0].peak_gops == pytest.approx(102.4)  # the paper's PYNQ-Z1 design


def _options(text):
    out = {}
    for word in text.split()[1:]:
        k, v = word.lstrip("-").split("=")
        out[k] = int(v)
    return out


def test_field_overflow_and_bad_flags_are_errors():
    cfg = CONFIGS[0]
    with pytest.raises(VDLAEncodingError, match="pad"):
        encode(Load(mem=MemId.INP, y_pad0=16), cfg)
    with pytest.raises(VDLAEncodingError, match="acc_f0=2048 does not fit 11 bits"):
        encode(Gemm(acc_f0=2048), cfg)
    with pytest.raises(VDLAEncodingError, match="imm=40000"):
        encode(Alu(imm=40000), cfg)
    with pytest.raises(VDLAEncodingError, match="no such neighbour"):
        encode(Load(mem=MemId.INP, pop_prev=True), cfg)
    with pytest.raises(VDLAEncodingError, match="unknown opcode"):
        decode(7, cfg)
    with pytest.raises(VDLAConfigError, match="needs 129 bits|more than 128"):
        layout(Gemm, dataclasses.replace(cfg, log_uop_buff_bytes=20))


def test_program_stream_and_disassembly():
    cfg = CONFIGS[0]
    prog = [Load(mem=MemId.INP, sram_base=3, dram_base=70, y_size=2, x_size=5, x_stride=9,
                 y_pad0=1, push_next=True),
            Gemm(uop_bgn=0, uop_end=4, lp0=2, lp1=3, pop_prev=True, push_next=True),
            Store(mem=MemId.OUT, y_size=1, x_size=4, x_stride=4, pop_prev=True), Finish()]
    data = encode_program(prog, cfg)
    assert len(data) == 16 * len(prog)
    assert decode_program(data, cfg) == prog
    text = disassemble(prog)
    assert "LOAD inp[3] <- dram[70] 2x5 stride 9 pad y(1,0) x(0,0)  [push_next]" in text
    assert "store" in text.splitlines()[2] and "FINISH" in text


@pytest.mark.parametrize("cfg", CONFIGS, ids=["1x16x16", "1x32x32"])
def test_uop_words_round_trip(cfg):
    rng = np.random.default_rng(0)
    cols = [rng.integers(0, cfg.depth(m), 50) for m in ("acc", "inp", "wgt")]
    back = decode_uops(encode_uops(*cols, cfg), cfg)
    for a, b in zip(cols, back):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(VDLAEncodingError, match="wgt index"):
        encode_uops([0], [0], [cfg.depth("wgt")], cfg)
