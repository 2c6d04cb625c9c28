# make_data.py DIR — bench/conv.sh's inputs: for each workload of conv.tdl, NAME_x.npy (8 x 64 x
# 28 x 28 float32), NAME_w.npy and NAME_b.npy (seeded normal values).
import sys
import numpy as np

WORKLOADS = {
    # name: (weight shape, bias size)
    "g2": ((64, 32, 3, 3), 64),
    "g4": ((64, 16, 3, 3), 64),
    "g8": ((64, 8, 3, 3), 64),
    "g32": ((64, 2, 3, 3), 64),
    "dwm2": ((128, 1, 3, 3), 128),   # depthwise, channel multiplier 2
    "convt": ((64, 32, 3, 3), 32),   # conv_transpose2d 64 -> 32, 3x3 stride 2
}

d = sys.argv[1]
rng = np.random.default_rng(28)
for name, (wshape, nb) in WORKLOADS.items():
    np.save(d + "/" + name + "_x.npy", rng.standard_normal((8, 64, 28, 28), dtype=np.float32))
    fan = wshape[1] * wshape[2] * wshape[3]
    np.save(d + "/" + name + "_w.npy", (rng.standard_normal(wshape, dtype=np.float32) / np.sqrt(fan)).astype(np.float32))
    np.save(d + "/" + name + "_b.npy", rng.standard_normal(nb, dtype=np.float32))
