#!/usr/bin/python3
"""gen_dtypes.py: writes tests/golden/dtypes/, PyTorch's CPU conversions between float32 and the
16-bit floats, which fcdim.h's fc_f16_to_f32 / fc_f32_to_f16 / fc_bf16_to_f32 / fc_f32_to_bf16
and the CPU executor's casts must give bit for bit (tests/test_cpu_math.c).

Run from the repository root with the Debian python3-torch:
    /usr/bin/python3 tests/golden/gen_dtypes.py

The files (.npy, C order; 16-bit patterns are stored as int16, NumPy having no bfloat16):
    f16_bits.npy      (65536,) int16: every float16 bit pattern, 0 to 0xFFFF
    f16_to_f32.npy    (65536,) float32: torch's .float() of each (NaN payloads kept)
    round_in.npy      (n,) float32: values at and around every rounding boundary of float16 and of
                      bfloat16 (each representable value, the midpoint to the next, one float32 ulp
                      either side of both), over a stride of the patterns plus all of the float16
                      subnormals and the range near overflow, and the infinities, zeros and NaNs
    round_f16.npy     (n,) int16: torch's .half() of round_in, as bits
    round_bf16.npy    (n,) int16: torch's .bfloat16() of round_in, as bits
"""
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dtypes")


def neighbours(bits32):
    """float32 bit patterns b-1, b, b+1 (as uint32), kept within the finite range."""
    b = np.asarray(bits32, dtype=np.int64)
    out = np.concatenate([b - 1, b, b + 1])
    out = out[(out >= 0) & (out < 0x7F800000)]
    return out.astype(np.uint32)


def main():
    os.makedirs(OUT, exist_ok=True)
    pat = torch.arange(65536, dtype=torch.int32).to(torch.int16)
    f16 = pat.view(torch.float16).float()
    np.save(os.path.join(OUT, "f16_bits.npy"), pat.numpy())
    np.save(os.path.join(OUT, "f16_to_f32.npy"), f16.numpy())

    # float16: the positive finite patterns (0 .. 0x7BFF), every one below 0x0800 (subnormals and
    # the first binade) and near the top, every 7th elsewhere; each value and the midpoint to the
    # next, as float32 bits, with their float32 neighbours.
    h = np.arange(0x7C00, dtype=np.int64)
    keep = (h < 0x0800) | (h >= 0x7B00) | (h % 7 == 0)
    h = h[keep]
    lo = torch.from_numpy(h.astype(np.int16)).view(torch.float16).float().numpy().astype(np.float64)
    hi = torch.from_numpy((h + 1).astype(np.int16)).view(torch.float16).float().numpy().astype(np.float64)
    hi[h == 0x7BFF] = 65536.0  # the midpoint to "the next" past the largest: the overflow threshold
    mid = ((lo + hi) / 2).astype(np.float32)
    vals16 = np.concatenate([lo.astype(np.float32), mid])
    # bfloat16: every 5th positive finite pattern and all of the first and last binades; the value
    # is bits << 16, the midpoint (bits << 16) | 0x8000.
    b = np.arange(0x7F80, dtype=np.int64)
    b = b[(b < 0x0080) | (b >= 0x7F00) | (b % 5 == 0)]
    bits = np.concatenate([neighbours(b << 16), neighbours((b << 16) | 0x8000),
                           neighbours(vals16.view(np.uint32))])
    vals = bits.view(np.float32)
    special = np.array([np.inf, 0.0, 65504.0, 65519.99, 65520.0, 1e-8, 2.9802322e-08, 5.9604645e-08,
                        3.4e38, 3.3961776e38], dtype=np.float32)
    vals = np.concatenate([vals, special])
    vals = np.concatenate([vals, -vals])
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0x7FC01234, 0xFFC00000, 0xFF800001, 0x7FFFFFFF],
                    dtype=np.uint32).view(np.float32)
    vals = np.concatenate([vals, nans])
    x = torch.from_numpy(vals.copy())
    np.save(os.path.join(OUT, "round_in.npy"), vals)
    np.save(os.path.join(OUT, "round_f16.npy"), x.half().view(torch.int16).numpy())
    np.save(os.path.join(OUT, "round_bf16.npy"), x.bfloat16().view(torch.int16).numpy())
    print("gen_dtypes: %d float16 patterns, %d rounding inputs" % (65536, len(vals)))


if __name__ == "__main__":
    main()
