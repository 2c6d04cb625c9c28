#!/usr/bin/python3
"""torch_mask_head.py — the Mask R-CNN mask branch in PyTorch (eager, CPU) on bench/mask_head.sh's
inputs: torchvision's roi_align (14 x 14, spatial_scale 1/4, sampling_ratio 2, aligned False),
MaskRCNNHeads and MaskRCNNPredictor, under torch.no_grad().

usage: /usr/bin/python3 torch_mask_head.py DIR THREADS REPEATS FORMAT [DEVICE [MODE]]
FORMAT: contiguous, or channels_last (features and module weights converted once, untimed).
DEVICE: cpu (default) or cuda (inputs and modules moved there untimed; each evaluation ends with
torch.cuda.synchronize(); cuDNN's TF32 off unless MASK_TF32=1, as tdl's cuDNN path by default);
MODE: eager (default) or compile (torch.compile of the branch, compiled during the warm-up).
Sets torch.set_num_threads(THREADS), runs 2 warm-up evaluations, times REPEATS with
time.perf_counter() and prints "seconds BEST"; saves the logits to DIR/torch_FORMAT.npy
(DIR/torch_FORMAT_DEVICE_MODE.npy off the CPU)."""
import os
import sys
import time

import numpy as np
import torch
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.ops import roi_align

d, threads, repeats, fmt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dev = sys.argv[5] if len(sys.argv) > 5 else "cpu"
mode = sys.argv[6] if len(sys.argv) > 6 else "eager"
torch.set_num_threads(threads)
if dev == "cuda":
    torch.backends.cudnn.allow_tf32 = os.environ.get("MASK_TF32", "0") == "1"
w = np.load(os.path.join(d, "weights.npz"))
head = MaskRCNNHeads(256, (256,) * 4, 1).eval()
pred = MaskRCNNPredictor(256, 256, 91).eval()
head.load_state_dict({k[len("roi_heads.mask_head."):]: torch.from_numpy(w[k]) for k in w.files if "mask_head" in k})
pred.load_state_dict({k[len("roi_heads.mask_predictor."):]: torch.from_numpy(w[k]) for k in w.files
                      if "mask_predictor" in k})
feat = torch.from_numpy(np.load(os.path.join(d, "features.npy")))
boxes = torch.from_numpy(np.load(os.path.join(d, "boxes.npy")))
if fmt == "channels_last":
    feat = feat.contiguous(memory_format=torch.channels_last)
    head = head.to(memory_format=torch.channels_last)
    pred = pred.to(memory_format=torch.channels_last)
feat, boxes, head, pred = feat.to(dev), boxes.to(dev), head.to(dev), pred.to(dev)


def branch(f, b):
    return pred(head(roi_align(f, b, (14, 14), 0.25, 2, False)))


fn = torch.compile(branch) if mode == "compile" else branch


def run():
    with torch.no_grad():
        y = fn(feat, boxes)
    if dev == "cuda":
        torch.cuda.synchronize()
    return y


best = None
y = None
for r in range(repeats + 2):
    y = None
    t0 = time.perf_counter()
    y = run()
    t = time.perf_counter() - t0
    if r >= 2 and (best is None or t < best):
        best = t
name = "torch_%s.npy" % fmt if dev == "cpu" else "torch_%s_%s_%s.npy" % (fmt, dev, mode)
np.save(os.path.join(d, name), y.contiguous().cpu().numpy())
print("seconds", best)
