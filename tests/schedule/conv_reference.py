"""What the conv schedule tests share: the float64 NCHW conv2d they compare generated kernels
with, running a built graph, and finding its conv kernel."""

import numpy as np

import minitvm as tvm
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool


def conv_ref(x, w, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1)):
    """NCHW conv2d (a correlation, as CNNs compute it) in float64, with (top, left, bottom,
    right) padding."""
    o, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dil
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], o, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dh, kx * dw
            patch = xp[:, :, y0:y0 + sh * (oh - 1) + 1:sh, x0:x0 + sw * (ow - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx].astype("float64"))
    return out


def run_graph(lib, feeds: dict, threads: int = 1):
    """Output 0 of ``lib``'s graph on ``feeds``, run on ``threads`` threads."""
    before = threadpool.get_num_threads()
    try:
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**feeds)
        return m.get_output(0).numpy()
    finally:
        threadpool.set_num_threads(before)


def conv_prim(lib):
    """The scheduled PrimFunc of ``lib``'s one conv2d kernel."""
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return prim
