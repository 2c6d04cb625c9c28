# torch_conv.py DIR THREADS REPEATS FORMAT [NAME...] — conv.tdl's workloads in PyTorch (CPU,
# oneDNN where it takes them): "NAME seconds BEST" (best of REPEATS after 2 warm-ups) and the
# result saved as DIR/NAME_torch_FORMAT.npy.
import sys
import time
import numpy as np
import torch
import torch.nn.functional as F

WORKLOADS = {
    "g2": ("conv", 2, 1, 1, 0),
    "g4": ("conv", 4, 1, 1, 0),
    "g8": ("conv", 8, 1, 1, 0),
    "g32": ("conv", 32, 1, 1, 0),
    "dwm2": ("conv", 64, 1, 1, 0),
    "convt": ("convt", 1, 2, 1, 1),
}

d, threads, repeats, fmt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
names = sys.argv[5:] or list(WORKLOADS)
torch.set_num_threads(threads)
mf = torch.channels_last if fmt == "channels_last" else torch.contiguous_format
with torch.no_grad():
    for name in names:
        kind, groups, stride, padding, opad = WORKLOADS[name]
        x = torch.from_numpy(np.load(d + "/" + name + "_x.npy")).contiguous(memory_format=mf)
        w = torch.from_numpy(np.load(d + "/" + name + "_w.npy")).contiguous(memory_format=mf)
        b = torch.from_numpy(np.load(d + "/" + name + "_b.npy"))
        best = None
        for r in range(repeats + 2):
            t0 = time.perf_counter()
            if kind == "conv":
                y = F.relu(F.conv2d(x, w, b, stride=stride, padding=padding, groups=groups))
            else:
                y = F.relu(F.conv_transpose2d(x, w, b, stride=stride, padding=padding, output_padding=opad, groups=groups))
            t = time.perf_counter() - t0
            if r >= 2 and (best is None or t < best):
                best = t
        np.save(d + "/" + name + "_torch_" + fmt + ".npy", y.contiguous().numpy())
        print(name, "seconds", best)
