#!/usr/bin/python3
"""make_data.py — bench/mask_head.sh's inputs, written into DIR.

usage: python3 make_data.py DIR
  weights.npz   torchvision's MaskRCNNHeads(256, (256, 256, 256, 256), 1) and
                MaskRCNNPredictor(256, 256, 91) with torchvision's initialisation (seed 0), under
                MaskRCNN's state_dict names (roi_heads.mask_head.*, roi_heads.mask_predictor.*);
                needs torch and torchvision (random weights of numpy's otherwise, same shapes)
  features.npy  1 x 256 x 64 x 96 float32, standard normal (FPN level P2 of a 256 x 384 image)
  boxes.npy     64 x 5 float32 (batch index, x1, y1, x2, y2) in image coordinates, sides 16..160 px
Prints the multiply-adds of the branch ("madds N"): the four 3x3 convolutions, the transposed
convolution and the 1x1 convolution, per box times 64 (roi_align's are negligible)."""
import os
import sys

import numpy as np

d = sys.argv[1]
C, CLASSES, K = 256, 91, 64
rng = np.random.default_rng(0)
try:
    import torch
    from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
    torch.manual_seed(0)
    params = {"roi_heads.mask_head." + k: v.numpy() for k, v in MaskRCNNHeads(C, (C,) * 4, 1).state_dict().items()}
    params.update({"roi_heads.mask_predictor." + k: v.numpy()
                   for k, v in MaskRCNNPredictor(C, C, CLASSES).state_dict().items()})
except ImportError:
    params = {}
    for i in range(4):
        params["roi_heads.mask_head.%d.0.weight" % i] = rng.standard_normal((C, C, 3, 3)) * 0.03
        params["roi_heads.mask_head.%d.0.bias" % i] = np.zeros(C)
    params["roi_heads.mask_predictor.conv5_mask.weight"] = rng.standard_normal((C, C, 2, 2)) * 0.05
    params["roi_heads.mask_predictor.conv5_mask.bias"] = np.zeros(C)
    params["roi_heads.mask_predictor.mask_fcn_logits.weight"] = rng.standard_normal((CLASSES, C, 1, 1)) * 0.1
    params["roi_heads.mask_predictor.mask_fcn_logits.bias"] = np.zeros(CLASSES)
np.savez(os.path.join(d, "weights.npz"), **{k: v.astype(np.float32) for k, v in params.items()})
np.save(os.path.join(d, "features.npy"), rng.standard_normal((1, C, 64, 96)).astype(np.float32))
x1 = rng.uniform(0, 384 - 160, K)
y1 = rng.uniform(0, 256 - 160, K)
boxes = np.stack([np.zeros(K), x1, y1, x1 + rng.uniform(16, 160, K), y1 + rng.uniform(16, 160, K)], 1)
np.save(os.path.join(d, "boxes.npy"), boxes.astype(np.float32))
madds = K * (4 * C * C * 9 * 14 * 14 + C * C * 4 * 14 * 14 + CLASSES * C * 28 * 28)
print("madds", madds)
