"""MX quantization by the OCP rules, fp4 packing, and the shuffled scale/weight layouts (jitgemm.mx)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from jitgemm import mx

RNG = np.random.default_rng(7)
FMTS = list(mx.FORMATS)
# largest normal and its exponent, from ml_dtypes' own tables (not from jitgemm.mx)
MAXES = {"fp4": (6.0, 2), "fp6_e2m3": (7.5, 2), "fp6_e3m2": (28.0, 4), "fp8_e4m3": (448.0, 8),
         "fp8_e5m2": (57344.0, 15)}


@pytest.mark.parametrize("fmt", FMTS)
def test_format_constants_match_ml_dtypes(fmt):
    f = mx.element_format(fmt)
    assert (f.max_normal, f.emax) == MAXES[fmt]
    assert float(ml_dtypes.finfo(f.dtype).max) == MAXES[fmt][0]


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("shape,axis", [((5, 96), -1), ((70, 3), 0), ((4, 45), 1)])
def test_quantize_follows_ocp_rules(fmt, shape, axis):
    x = RNG.standard_normal(shape) * np.exp2(RNG.integers(-20, 20, size=shape))
    t = mx.quantize_mx(x, fmt, axis=axis)
    assert t.shape == shape and t.fmt == fmt and t.block == 32
    assert t.data.dtype == np.uint8 and t.scales.dtype == np.uint8
    n = shape[axis]
    nb = -(-n // 32)
    assert t.scales.shape[axis] == nb
    assert t.data.shape[axis] == (-(-n // 2) if fmt == "fp4" else n)
    # OCP MX v1.0 section 6.3: shared exponent = floor(log2(amax of the block)) - emax of the element format
    xv = np.moveaxis(x, axis, -1)
    sc = np.moveaxis(t.scales, axis, -1)
    emax = MAXES[fmt][1]
    for b in range(nb):
        amax = np.abs(xv[..., b * 32:(b + 1) * 32]).max(axis=-1)
        expect = np.clip(np.floor(np.log2(amax)) - emax, -127, 127) + 127
        assert np.array_equal(sc[..., b], expect.astype(np.uint8))
    # each element is v / scale rounded to nearest by ml_dtypes' cast, saturated to the largest normal
    scale = np.repeat(mx.e8m0_to_float(sc), 32, axis=-1)[..., :n]
    ref = np.clip(xv / scale, -MAXES[fmt][0], MAXES[fmt][0]).astype(np.float32).astype(mx.FORMATS[fmt].dtype)
    got = np.moveaxis(t.codes(), axis, -1).view(mx.FORMATS[fmt].dtype)
    assert np.array_equal(got.astype(np.float64), ref.astype(np.float64))
    deq = t.dequantize()
    assert deq.shape == shape
    # error bound per element: one ulp of the block's top binade, or the saturation gap above the largest normal
    # (e4m3 saturates values in (448, 512) * scale to 448 * scale)
    mant = {"fp4": 1, "fp6_e2m3": 3, "fp6_e3m2": 2, "fp8_e4m3": 3, "fp8_e5m2": 2}[fmt]
    err = np.abs(np.moveaxis(deq, axis, -1) - xv)
    bound = max(2.0 ** (emax - mant), 2.0 ** (emax + 1) - MAXES[fmt][0])
    assert np.all(err <= scale * bound)


def test_fp4_packing_low_nibble_first():
    x = np.array([[0.5, -6.0, 1.5, 3.0]])        # codes 1, 15, 3, 5 (OCP E2M1 table)
    t = mx.quantize_mx(x, "fp4")
    assert t.scales[0, 0] == 127                 # amax 6 = 1.5 * 2**2: shared exponent 2 - 2 = 0
    assert t.data.tolist() == [[0x1 | (0xF << 4), 0x3 | (0x5 << 4)]]
    assert np.array_equal(t.dequantize(), x)


def test_special_blocks():
    x = np.zeros((3, 64))
    x[0, 5] = np.nan
    x[1, 40] = np.inf
    x[2, :32] = 2.0 ** 140                       # exponent clamps to E8M0's 2**127
    t = mx.quantize_mx(x, "fp8_e4m3")
    assert t.scales.tolist() == [[255, 0], [0, 255], [254, 0]]
    d = t.dequantize()
    assert np.isnan(d[0, :32]).all() and (d[0, 32:] == 0).all()
    assert np.isnan(d[1, 32:]).all() and (d[1, :32] == 0).all()
    assert (d[2, :32] == 448.0 * 2.0 ** 127).all()
    assert mx.e8m0_to_float(np.array([0, 127, 254, 255])).tolist()[:3] == [2.0 ** -127, 1.0, 2.0 ** 127]


def test_scale_shuffle_is_aiters_permutation():
    rows, cols = 300, 13
    s = RNG.integers(0, 256, size=(rows, cols), dtype=np.uint8)
    sh = mx.shuffle_scales(s)
    assert sh.shape == (512, 16)
    # element-wise statement of aiter's e8m0_shuffle view (i0, i1, i2, j0, j1, j2) -> (i0, j0, j2, i2, j1, i1)
    for _ in range(200):
        r, c = int(RNG.integers(rows)), int(RNG.integers(cols))
        i0, i1, i2 = r // 32, (r // 16) % 2, r % 16
        j0, j1, j2 = c // 8, (c // 4) % 2, c % 4
        flat = ((((i0 * 2 + j0) * 4 + j2) * 16 + i2) * 2 + j1) * 2 + i1
        assert sh.reshape(-1)[flat] == s[r, c]
    assert np.array_equal(mx.unshuffle_scales(sh, rows, cols), s)


def test_weight_shuffle_is_aiters_permutation():
    w = RNG.integers(0, 256, size=(48, 96), dtype=np.uint8)
    sh = mx.shuffle_weight(w)
    for _ in range(200):
        n, k = int(RNG.integers(48)), int(RNG.integers(96))
        a, b, c, d, e = n // 16, n % 16, k // 32, (k // 16) % 2, k % 16
        flat = (((a * 3 + c) * 2 + d) * 16 + b) * 16 + e
        assert sh.reshape(-1)[flat] == w[n, k]
    assert np.array_equal(mx.unshuffle_weight(sh), w)


def test_bad_arguments_are_named():
    with pytest.raises(mx.MXError, match="fmt: unknown MX element format 'fp5'.*fp4"):
        mx.quantize_mx(np.ones(4), "fp5")
    with pytest.raises(mx.MXError, match="axis"):
        mx.quantize_mx(np.ones((2, 4)), "fp4", axis=2)
    with pytest.raises(mx.MXError, match="block"):
        mx.quantize_mx(np.ones(4), "fp4", block=0)
    with pytest.raises(mx.MXError, match="weight: shape"):
        mx.shuffle_weight(np.zeros((10, 32), np.uint8))
    with pytest.raises(mx.MXError, match="codes"):
        mx.codes_to_float(np.array([0x10]), "fp4")


def test_fp6_bit_stream_packing_round_trips_and_puts_element_i_at_bits_6i():
    from jitgemm.mx import pack_fp6, unpack_fp6

    rng = np.random.default_rng(6)
    codes = rng.integers(0, 64, size=(5, 37), dtype=np.uint8)
    packed = pack_fp6(codes)
    assert packed.shape == (5, 30)
    assert np.array_equal(unpack_fp6(packed, 37), codes)
    stream = int.from_bytes(packed[2].tobytes(), "little")
    assert all((stream >> (6 * i)) & 0x3F == codes[2, i] for i in range(37))
