#!/usr/bin/python3
"""torch_mask_head.py — the Mask R-CNN mask branch in PyTorch (eager, CPU) on bench/mask_head.sh's
inputs: torchvision's roi_align (14 x 14, spatial_scale 1/4, sampling_ratio 2, aligned False),
MaskRCNNHeads and MaskRCNNPredictor, under torch.no_grad().

usage: /usr/bin/python3 torch_mask_head.py DIR THREADS REPEATS FORMAT
FORMAT: contiguous, or channels_last (features and module weights converted once, untimed).
Sets torch.set_num_threads(THREADS), runs 2 warm-up evaluations, times REPEATS with
time.perf_counter() and prints "seconds BEST"; saves the logits to DIR/torch_FORMAT.npy."""
import os
import sys
import time

import numpy as np
import torch
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.ops import roi_align

d, threads, repeats, fmt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.set_num_threads(threads)
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


def run():
    with torch.no_grad():
        return pred(head(roi_align(feat, boxes, (14, 14), 0.25, 2, False)))


best = None
y = None
for r in range(repeats + 2):
    y = None
    t0 = time.perf_counter()
    y = run()
    t = time.perf_counter() - t0
    if r >= 2 and (best is None or t < best):
        best = t
np.save(os.path.join(d, "torch_%s.npy" % fmt), y.contiguous().numpy())
print("seconds", best)
