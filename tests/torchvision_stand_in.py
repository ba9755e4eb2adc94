"""``torch.ops.torchvision.roi_align`` / ``roi_pool`` for the importer tests: torchvision's own
when it imports, else stand-ins with torchvision's schemas (so a traced or exported program holds
the same single node) computing in numpy what torchvision's CPU kernels compute (ONNX
RoiAlign's average; Caffe's ROIPool with C's rounding)."""

from __future__ import annotations

import numpy as np
import torch

from minitvm.topi.roi_align import RoiAlignSpec, roi_align_onnx_np

_LIB = None


def _roi_pool_np(x, rois, scale, ph, pw):
    n, c, h, w = x.shape
    out = np.zeros((len(rois), c, ph, pw), x.dtype)

    def rnd(v):  # C's round: halves away from zero
        return int(np.sign(v) * np.floor(abs(v) + 0.5))

    for r, (b, *box) in enumerate(rois.astype("float32")):
        x1, y1, x2, y2 = (rnd(np.float32(v) * np.float32(scale)) for v in box)
        bh = np.float32(max(y2 - y1 + 1, 1)) / np.float32(ph)
        bw = np.float32(max(x2 - x1 + 1, 1)) / np.float32(pw)
        for i in range(ph):
            hs = min(max(int(np.floor(np.float32(i) * bh)) + y1, 0), h)
            he = min(max(int(np.ceil(np.float32(i + 1) * bh)) + y1, 0), h)
            for j in range(pw):
                ws = min(max(int(np.floor(np.float32(j) * bw)) + x1, 0), w)
                we = min(max(int(np.ceil(np.float32(j + 1) * bw)) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = x[int(b), :, hs:he, ws:we].max(axis=(1, 2))
    return out


def ensure_ops() -> str:
    """Make ``torch.ops.torchvision.roi_align`` / ``roi_pool`` exist; "torchvision" when they
    are torchvision's, "stand-in" otherwise."""
    global _LIB
    try:
        import torchvision  # noqa: F401

        torch.ops.torchvision.roi_align  # noqa: B018 - raises when the kernels did not load
        return "torchvision"
    except Exception:  # noqa: BLE001 - absent, or built for another torch
        pass
    if _LIB is not None:
        return "stand-in"
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
               "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor")
    lib.define("roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
               "SymInt pooled_width) -> (Tensor, Tensor)")

    def roi_align(x, rois, scale, ph, pw, ratio, aligned):
        spec = RoiAlignSpec(ph, pw, max(ratio, 0), scale, aligned, "avg")
        r = rois.numpy()
        return torch.from_numpy(roi_align_onnx_np(x.numpy(), r[:, 1:], r[:, 0], spec))

    def roi_pool(x, rois, scale, ph, pw):
        out = torch.from_numpy(_roi_pool_np(x.numpy(), rois.numpy(), scale, ph, pw))
        return out, torch.zeros(out.shape, dtype=torch.int32)

    lib.impl("roi_align", roi_align, "CPU")
    lib.impl("roi_pool", roi_pool, "CPU")

    def align_fake(x, rois, scale, ph, pw, ratio, aligned):
        return x.new_empty((rois.shape[0], x.shape[1], ph, pw))

    def pool_fake(x, rois, scale, ph, pw):
        out = x.new_empty((rois.shape[0], x.shape[1], ph, pw))
        return out, out.new_empty(out.shape, dtype=torch.int32)

    torch.library.register_fake("torchvision::roi_align", align_fake, lib=lib)
    torch.library.register_fake("torchvision::roi_pool", pool_fake, lib=lib)
    _LIB = lib
    return "stand-in"
