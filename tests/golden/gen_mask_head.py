#!/usr/bin/python3
"""gen_mask_head.py: writes tests/golden/mask_head/, torchvision's Mask R-CNN mask branch on a small
input, which examples/mask_head.tdl must reproduce (tests/test_nn.c, test mask_head).

Run from the repository root with the Debian python3 (torch and torchvision):
    /usr/bin/python3 tests/golden/gen_mask_head.py

The branch: roi_align (14 x 14, spatial_scale 1/4, sampling_ratio 2, aligned False, as
MultiScaleRoIAlign calls it on one level) of a feature map, torchvision's MaskRCNNHeads (four conv
3x3 + ReLU) and MaskRCNNPredictor (conv_transpose 2x2 stride 2 + ReLU, conv 1x1 to the class
logits), with random weights (torchvision's initialisation, seeded). Files:
  weights.npz   the modules' parameters under MaskRCNN's state_dict names
                (roi_heads.mask_head.0.0.weight, ..., roi_heads.mask_predictor.mask_fcn_logits.bias)
  features.npy  1 x C x 20 x 24 float32 (standard normal)
  boxes.npy     K x 5 float32 rows (batch index, x1, y1, x2, y2) in image coordinates (80 x 96)
  logits.npy    K x classes x 28 x 28: torchvision's mask logits
The test's rule: |tdl - torch| <= 1e-5 (|torch| + amax|torch|) elementwise (float32 through six
layers of sums of up to 144 terms; tdl's error is below 1e-6 of amax|torch| here).
"""
import os

import numpy as np
import torch
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.ops import roi_align

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mask_head")
C, CLASSES, K = 16, 3, 6

torch.manual_seed(20261125)
rng = np.random.default_rng(20261125)
head = MaskRCNNHeads(C, (C, C, C, C), 1).eval()
pred = MaskRCNNPredictor(C, C, CLASSES).eval()
# torchvision zeroes the biases at initialisation: give them values, so that they are tested
with torch.no_grad():
    for m in list(head.parameters()) + list(pred.parameters()):
        if m.dim() == 1:
            m.copy_(torch.randn(m.shape) * 0.1)
feat = torch.from_numpy(rng.standard_normal((1, C, 20, 24)).astype(np.float32))
x1 = rng.uniform(-4, 70, K)
y1 = rng.uniform(-4, 60, K)
boxes = np.stack([np.zeros(K), x1, y1, x1 + rng.uniform(4, 40, K), y1 + rng.uniform(4, 40, K)], 1)
boxes = torch.from_numpy(boxes.astype(np.float32))


def branch(f, h, p):
    with torch.no_grad():
        r = roi_align(f, boxes, (14, 14), spatial_scale=0.25, sampling_ratio=2, aligned=False)
        return p(h(r))


logits = branch(feat, head, pred)
params = {}
for k, v in head.state_dict().items():
    params["roi_heads.mask_head." + k] = v.numpy()
for k, v in pred.state_dict().items():
    params["roi_heads.mask_predictor." + k] = v.numpy()
os.makedirs(OUT, exist_ok=True)
np.savez(os.path.join(OUT, "weights.npz"), **params)
np.save(os.path.join(OUT, "features.npy"), feat.numpy())
np.save(os.path.join(OUT, "boxes.npy"), boxes.numpy())
np.save(os.path.join(OUT, "logits.npy"), logits.numpy())
size = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
print("logits %s, %d bytes in %s" % (tuple(logits.shape), size, OUT))
