"""A numpy reference for the Relax VM's native-plan tests: an NCHW stride-1 conv."""

import numpy as np


def conv(x, w, pad=0):
    """NCHW stride-1 conv of ``x`` with OIHW ``w``, ``pad`` zeros on every side."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    h, wd = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], h, wd), "float32")
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out
