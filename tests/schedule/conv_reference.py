"""What the conv schedule tests share: the float64 NCHW conv2d they compare generated kernels
with, building a conv with its epilogue, running a built graph, and finding its conv kernel."""

import numpy as np

import minitvm as tvm
from minitvm import relay
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


def np_max_pool(a, k, s, pad, ceil_mode=False):
    """numpy max pool of NCHW ``a``: ``k x k`` at stride ``s``, ``pad`` on each side (never
    winning), the plane's size as Relay's (``ceil_mode`` windows may overhang)."""
    n, c, h, w = a.shape

    def size(x):
        span = x + 2 * pad - k
        return (-(-span // s) if ceil_mode else span // s) + 1

    ph, pw = size(h), size(w)
    big = np.full((n, c, h + 2 * pad + k + s, w + 2 * pad + k + s), -np.inf, a.dtype)
    big[:, :, pad:pad + h, pad:pad + w] = a
    out = np.full((n, c, ph, pw), -np.inf, a.dtype)
    for dy in range(k):
        for dx in range(k):
            out = np.maximum(out, big[:, :, dy:dy + s * ph:s, dx:dx + s * pw:s])
    return out


def grouped_conv_ref(x, w, groups, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1)):
    """``conv_ref`` of a grouped conv: each group's input channels with its filters."""
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    return np.concatenate([conv_ref(x[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og], strides,
                                    pads, dil) for g in range(groups)], axis=1)


def with_epilogue(y, want, epi, bias, args, inputs, rng):
    """Conv ``y`` (expected ``want``) through epilogue ``epi`` ("none", "bias_relu",
    "residual_relu"), a residual input appended to ``args`` / ``inputs``: (expr, expected)."""
    if epi != "none":
        y = relay.nn.bias_add(y, relay.const(bias))
        want = want + bias[:, None, None]
    if epi == "residual_relu":
        rv = rng.standard_normal(want.shape).astype("float32")
        r = relay.var("r", shape=want.shape)
        y = y + r
        args.append(r)
        inputs["r"] = rv
        want = want + rv
    if epi != "none":
        y = relay.nn.relu(y)
        want = np.maximum(want, 0)
    return y, want


def build_conv(shape, o, k, strides=(1, 1), pads=(1, 1, 1, 1), dil=(1, 1), epi="bias_relu",
               rng=None, groups=1):
    """A Relay conv2d of ``o`` ``k x k`` (an int or a pair) filters with a constant weight, then
    ``with_epilogue``'s ``epi``, built at opt_level 3: (lib, inputs, expected output). ``pads``
    as Relay takes them: (vertical, horizontal) or (top, left, bottom, right)."""
    rng = np.random.default_rng(0) if rng is None else rng
    k = (k, k) if isinstance(k, int) else tuple(k)
    wv = rng.standard_normal((o, shape[1] // groups, *k)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    pads4 = tuple(pads) * 2 if len(pads) == 2 else tuple(pads)
    want = grouped_conv_ref(xv, wv, groups, strides, pads4, dil)
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=strides, padding=pads, dilation=dil,
                        groups=groups, kernel_size=k, channels=o)
    args, inputs = [x], {"x": xv}
    y, want = with_epilogue(y, want, epi, bias, args, inputs, rng)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, y)), target="llvm")
    return lib, inputs, want


def rotated_knobs(cases, widths, orders):
    """``pytest.param(case, width, order)``: every case at every width, the orders taking turns
    over the widths and, shifted by one, over the cases. Each case still runs in every width
    and (given two widths or more) in both orders, and each width in both orders over several
    cases, at a fraction of the full product's kernels (each one a compile of its own)."""
    import pytest

    return [pytest.param(case, width, orders[(i + j) % len(orders)],
                         id=f"{orders[(i + j) % len(orders)]}-{width}-case{i}")
            for i, case in enumerate(cases) for j, width in enumerate(widths)]


def rotated_distinct_widths(cases, widths, orders, out_channels_a_group):
    """``rotated_knobs`` less the params that build a kernel an earlier param of the same case
    already builds: a width that does not divide the case's output channels a group
    (``out_channels_a_group(case)``) falls back to 16 (``conv_lanes.with_knobs``, AVX-512's
    rule), so it is dropped where the case already runs 16 in that order. On AVX2 (16 only)
    every case still runs in both orders: neighbouring widths take opposite orders."""
    seen, out = set(), []
    for p in rotated_knobs(cases, widths, orders):
        case, width, order = p.values
        og = out_channels_a_group(case)
        key = (cases.index(case), width if og % width == 0 else 16, order)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def knob_table(mod, params=None, **values):
    """A knob table giving every tunable workload of ``mod`` these knob values. The workloads
    are ``tune.extract_tasks``' (it lowers ``mod``'s functions without compiling them; a
    tracing build compiled each conv once more, under the default knobs)."""
    from minitvm import tune
    from minitvm.schedule import knobs

    tasks = tune.extract_tasks(mod, params)
    return knobs.KnobTable({knobs.key_text(t.workload): dict(values) for t in tasks})


def taking_turns(cases, variants, per_case: int = 1, every=()):
    """``pytest.param(case, variant)``: case ``i`` in ``per_case`` of the variants, from the
    ``i * per_case``-th on (so the variants take turns over the cases), the cases whose indices
    are in ``every`` in all of them."""
    import pytest

    n = len(variants)
    out = []
    for i, case in enumerate(cases):
        picks = range(n) if i in every else sorted({(i * per_case + m) % n
                                                    for m in range(per_case)})
        out += [pytest.param(case, variants[j], id=f"{variants[j]}-case{i}") for j in picks]
    return out


def requantize_uint8(y):
    """``y`` (float32) requantized as the quantized importers end an int32 product: scaled by
    1/4096, rounded, a zero point of 100 added, saturated to uint8."""
    return relay.cast(relay.clip(relay.add(relay.round(relay.multiply(
        y, relay.const(np.float32(1 / 4096)))), relay.const(np.float32(100))), 0, 255), "uint8")


def conv_kernel(lib):
    """``lib``'s one conv2d kernel record."""
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return k


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
    return conv_kernel(lib).prim_func
