"""Every new-user model through every other way in: correctness only (no timing).

``bench_new_user_models.py`` imports its models one way (``torch.jit.trace`` ->
``relay.frontend.from_pytorch``). A user may instead take any of these paths, and this sweep
runs each model of its tables through each of them and compares with PyTorch eager:

    onnx-relay   torch.onnx.export -> relay.frontend.from_onnx -> relay.build (opt_level 3)
    onnx-dyn     torch.onnx.export with a dynamic batch -> relax.frontend.onnx.from_onnx ->
                 relax.build, run at batch 1 and 3 (one build)
    ep-relax     torch.export.export -> relax.frontend.torch.from_exported_program -> relax.build
    ep-relay     torch.export.export -> relay.frontend.pytorch.from_exported_program ->
                 relay.build
    dynamo-relay torch.onnx.export(dynamo=True), torch's default exporter (needs onnxscript)
                 -> relay.frontend.from_onnx -> relay.build
    dynamo-relax the same file -> relax.frontend.onnx.from_onnx -> relax.build
    onnx-dyn-relay the onnx-dyn file -> relay.frontend.from_onnx (its batch dim_param becomes
                 relay.Any(), no shape=) -> relay.vm.compile (opt_level 3), run at batch 1
                 and 3 (one compile); the cell adds how many of the executable's kernels
                 with dynamic shapes are one symbolic kernel for every batch ("sym") and how
                 many compile per input shape ("spec"), and the run totals them
    ep-relax-dyn torch.export.export with axis 0 of every input a ``Dim`` -> relax.frontend.
                 torch.from_exported_program (the batch a symbolic tir var) -> relax.build,
                 run at batch 1 and 3 (one build)

    python benchmarks/sweep_import_paths.py [--group all] [--models a,b] [--paths onnx-relay,...]

The default paths are the first four; ``--paths all`` adds the dynamo ones and the two
dynamic-batch ones after them (or name one alone: ``--paths onnx-dyn-relay``).

Builds are strict-native: a Relay kernel that would fall back to numpy, or a Relax program that
calls a packed function computing in numpy (``Executable.numpy_calls``: ``nonzero`` of an
unknown shape, numpy's ``unique``), is a failure. A cell is
``ok`` with the largest error relative to eager's output, ``WRONG`` (error above ``--tol``),
``FAILED`` with the first line of the error, or ``skip: reason`` when the model cannot take
the path for a reason outside minitvm (PyTorch cannot export it; the exported ONNX file itself
disagrees with eager under ONNX Runtime, e.g. a batch size baked in by the tracer; axis 0 is not
a batch axis of every input) or only with an input bound as a constant (a shape that depends on
an input's values, which Relay's static graphs cannot express: the skip reports the bound run's
error). Exits 1 when any cell is WRONG or FAILED. Needs the ``torch`` and ``onnx`` extras.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import bench_new_user_models as nu  # noqa: E402
from new_user_models_eighteenth import eighteenth_models  # noqa: E402
from new_user_models_eighth import eighth_models  # noqa: E402
from new_user_models_eleventh import eleventh_models  # noqa: E402
from new_user_models_fifteenth import fifteenth_models  # noqa: E402
from new_user_models_fifth import fifth_models  # noqa: E402
from new_user_models_fourteenth import fourteenth_models  # noqa: E402
from new_user_models_nineteenth import nineteenth_models  # noqa: E402
from new_user_models_ninth import ninth_models  # noqa: E402
from new_user_models_seventeenth import seventeenth_models  # noqa: E402
from new_user_models_seventh import seventh_models  # noqa: E402
from new_user_models_sixteenth import sixteenth_models  # noqa: E402
from new_user_models_sixth import sixth_models  # noqa: E402
from new_user_models_tenth import tenth_models  # noqa: E402
from new_user_models_thirteenth import thirteenth_models  # noqa: E402
from new_user_models_thirtieth import thirtieth_models  # noqa: E402
from new_user_models_thirtyfirst import thirtyfirst_models  # noqa: E402
from new_user_models_thirtysecond import thirtysecond_models  # noqa: E402
from new_user_models_twelfth import twelfth_models  # noqa: E402
from new_user_models_twentieth import twentieth_models  # noqa: E402
from new_user_models_twentyeighth import twentyeighth_models  # noqa: E402
from new_user_models_twentyfifth import twentyfifth_models  # noqa: E402
from new_user_models_twentyfirst import twentyfirst_models  # noqa: E402
from new_user_models_twentyfourth import twentyfourth_models  # noqa: E402
from new_user_models_twentyninth import twentyninth_models  # noqa: E402
from new_user_models_twentysecond import twentysecond_models  # noqa: E402
from new_user_models_twentyseventh import twentyseventh_models  # noqa: E402
from new_user_models_twentysixth import twentysixth_models  # noqa: E402
from new_user_models_twentythird import twentythird_models  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relay.frontend.onnx import NeedsConstantInput  # noqa: E402

PATHS = ("onnx-relay", "onnx-dyn", "ep-relax", "ep-relay")
DYNAMO_PATHS = ("dynamo-relay", "dynamo-relax")
DYN_RELAY_PATHS = ("onnx-dyn-relay", "ep-relax-dyn")
DYN_BATCHES = (1, 3)


class Skip(Exception):
    """The model cannot take this path for a reason outside minitvm."""


def groups() -> dict:
    """group name -> {model name: (constructor, input spec)}, as bench_new_user_models has them."""
    tables = {"first": nu.models(), "second": nu.new_models(), "third": nu.third_models(),
              "fourth": nu.fourth_models(), "fifth": fifth_models(), "sixth": sixth_models(),
              "seventh": seventh_models(), "eighth": eighth_models(),
              "ninth": ninth_models(), "tenth": tenth_models(),
              "eleventh": eleventh_models(), "twelfth": twelfth_models(),
              "thirteenth": thirteenth_models(), "fourteenth": fourteenth_models(),
              "fifteenth": fifteenth_models(), "sixteenth": sixteenth_models(),
              "seventeenth": seventeenth_models(), "eighteenth": eighteenth_models(),
              "nineteenth": nineteenth_models(), "twentieth": twentieth_models(),
              "twentyfirst": twentyfirst_models(), "twentysecond": twentysecond_models(),
              "twentythird": twentythird_models(), "twentyfourth": twentyfourth_models(),
              "twentyfifth": twentyfifth_models(), "twentysixth": twentysixth_models(),
              "twentyseventh": twentyseventh_models(), "twentyeighth": twentyeighth_models(),
              "twentyninth": twentyninth_models(), "thirtieth": thirtieth_models(),
              "thirtyfirst": thirtyfirst_models(), "thirtysecond": thirtysecond_models()}
    tables["all"] = {k: v for t in list(tables.values()) for k, v in t.items()}
    return tables


def rel_err(out, ref) -> float:
    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape:
        raise ValueError(f"output shape {out.shape}, eager's {ref.shape}")
    if ref.dtype.kind in "biu":
        return float(np.count_nonzero(out != ref)) / max(ref.size, 1)
    out, ref = out.astype("float64"), ref.astype("float64")
    # a NaN or an infinity matches only the same in eager's output (protonet's empty classes
    # give 0 / 0 in eager too); any other non-finite value is a disagreement
    same = (np.isnan(out) & np.isnan(ref)) | (np.isinf(ref) & (out == ref))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, out - ref)
    if not np.isfinite(diff).all():
        return float("inf")
    if same.all():
        return 0.0
    return float(np.abs(diff).max() / max(np.abs(ref[~same]).max(), 1e-6))


def first_tensor(out):
    """The first tensor of a Relax VM result (a tensor or a nest of tuples)."""
    while not hasattr(out, "numpy"):
        out = out[0]
    return out.numpy()


def eager(model, args):
    import torch

    with torch.no_grad():
        out = model(*args)
    return (out[0] if isinstance(out, tuple | list) else out).numpy()


def relay_run(mod, params, feed: dict):
    """Build at opt_level 3, strict-native, run once with ``feed``; the first output."""
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in feed.items():
        gm.set_input(k, v)
    gm.run()
    return gm.get_output(0).numpy()


def ort_run(blob: bytes, feed: dict):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {k: feed[k] for k in names})[0]


def onnx_feed(om, inputs: dict) -> dict:
    """The inputs the exported graph kept (the exporter drops unused ones), in its order."""
    feed = {k: v.numpy() for k, v in inputs.items()}
    return {i.name: feed[i.name] for i in om.graph.input if i.name in feed}


def check_ort(blob, feed, ref, tol, what):
    """Skip when ONNX Runtime itself disagrees with eager on the exported file."""
    try:
        err = rel_err(ort_run(blob, feed), ref)
    except Exception as e:  # noqa: BLE001 - ORT's own failure: the export is at fault
        raise Skip(f"ORT fails on the {what} export: {first_line(e)}") from e
    if not err <= tol:  # (NaN from ORT where eager is finite: a disagreement too)
        raise Skip(f"the {what} export differs from eager under ORT too ({err:.1e})")


def path_onnx_relay(name, model, inputs, ref, tol):
    import onnx

    args = tuple(inputs.values())
    try:
        blob = nu.onnx_bytes(name, model, args, inputs)
    except Exception as e:  # noqa: BLE001
        raise Skip(f"torch.onnx.export: {first_line(e)}") from e
    om = onnx.load_from_string(blob)
    feed = onnx_feed(om, inputs)
    check_ort(blob, feed, ref, tol, "ONNX")
    return onnx_relay_err(om, feed, ref, tol)


def onnx_relay_err(om, feed: dict, ref, tol) -> float:
    """Import ``om`` into Relay, build, run on ``feed``: the error against ``ref``. The inputs
    a data-dependent shape needs are bound as constants, as the ONNX backend does, and the
    result reported as a skip (Relay's graphs are static)."""
    bound: dict = {}
    while True:
        try:
            mod, params = relay.frontend.from_onnx(
                om, {k: v.shape for k, v in feed.items() if k not in bound}, const_inputs=bound)
            break
        except NeedsConstantInput as e:
            if e.input_name in bound:
                raise
            bound[e.input_name] = feed[e.input_name]
    err = rel_err(relay_run(mod, params, {k: v for k, v in feed.items() if k not in bound}), ref)
    if bound and err <= tol:
        raise Skip(f"data-dependent shape (Relay is static): with {sorted(bound)} bound as "
                   f"constants, ok {err:.1e}")
    return err


def batched(inputs: dict, batch: int) -> dict:
    """The inputs at another batch size: the rows of axis 0, cycled."""
    rows = {k: v.shape[0] for k, v in inputs.items() if v.dim() > 0}
    return {k: v[[i % rows[k] for i in range(batch)]] if k in rows else v
            for k, v in inputs.items()}


def relax_vm(mod):
    """A VM of ``mod`` built for the host, strict-native as Relay's builds are: a program that
    calls a packed function computing in numpy (``Executable.numpy_calls``) is a failure."""
    from minitvm.backend.fallback import NativeFallbackError

    ex = relax.build(mod, "llvm")
    calls = ex.numpy_calls()
    if calls:
        raise NativeFallbackError("runs in numpy: " + "; ".join(
            f"{name} ({why})" for name, why in calls.items()))
    return relax.VirtualMachine(ex, tvm.cpu())


_DYN_FILES: dict = {}  # model name -> (blob, model proto, eager refs per batch) or the Skip


def dyn_onnx(name, model, inputs, tol):
    """(blob, model proto, {batch: eager output}): the model exported once with axis 0 of
    every input symbolic, checked under ORT at each batch size; onnx-dyn and onnx-dyn-relay
    share it."""
    return _exported_once(_DYN_FILES, name, dyn_onnx_export, name, model, inputs, tol)


def _exported_once(files: dict, name, export, *args):
    """``export(*args)`` for model ``name``, made once and kept in ``files`` (its Skip too,
    raised again at each later ask): the paths that read one file share it."""
    if name not in files:
        try:
            files[name] = export(*args)
        except Skip as e:
            files[name] = e
    got = files[name]
    if isinstance(got, Skip):
        raise got
    return got


def dyn_onnx_export(name, model, inputs, tol):
    import onnx
    import torch

    example = batched(inputs, 2)
    try:
        refs = {b: eager(model, tuple(batched(inputs, b).values())) for b in DYN_BATCHES}
    except Exception as e:  # noqa: BLE001
        raise Skip(f"axis 0 is not the batch of every input (eager fails on them cycled to "
                   f"another size): {first_line(e)}") from e
    buf = io.BytesIO()
    out = "y"
    while out in inputs:  # an input named y (a class label) would share the output's name
        out += "_out"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, tuple(example.values()), buf, dynamo=False,
                              opset_version=nu.ONNX_OPSET.get(name, 17),
                              input_names=list(inputs), output_names=[out],
                              dynamic_axes={**{k: {0: "batch"} for k, v in inputs.items()
                                               if v.dim() > 0}, out: {0: "batch"}})
    except Exception as e:  # noqa: BLE001
        raise Skip(f"torch.onnx.export (dynamic batch): {first_line(e)}") from e
    blob = buf.getvalue()
    om = onnx.load_from_string(blob)
    for b in DYN_BATCHES:
        check_ort(blob, onnx_feed(om, batched(inputs, b)), refs[b], tol,
                  f"dynamic-batch ONNX (batch {b})")
    return blob, om, refs


def path_onnx_dyn(name, model, inputs, ref, tol):
    """Export once with axis 0 of every input symbolic, build once, run at each batch size."""
    _, om, refs = dyn_onnx(name, model, inputs, tol)
    vm = relax_vm(relax.frontend.onnx.from_onnx(om))
    errs = []
    for b in DYN_BATCHES:
        feed = onnx_feed(om, batched(inputs, b))
        try:
            errs.append(rel_err(first_tensor(vm["main"](*map(tvm.nd.array, feed.values()))),
                                refs[b]))
        except Exception as e:
            raise type(e)(f"at batch {b}: {first_line(e)}") from e
    return max(errs)


KERNEL_COUNTS: dict = {}  # model name -> the onnx-dyn-relay executable's dynamic kernel counts


def path_onnx_dyn_relay(name, model, inputs, ref, tol):
    """The onnx-dyn file into Relay with its batch as relay.Any(), ``relay.vm.compile``d once
    (strict-native: a kernel that would fall back to numpy raises), run at each batch size.
    Returns (error, note): the note counts the symbolic and per-shape kernels."""
    from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
    from minitvm.runtime import vm as runtime_vm

    _, om, refs = dyn_onnx(name, model, inputs, tol)
    try:
        with warnings.catch_warnings():  # (the notice that the batch imports as relay.Any())
            warnings.simplefilter("ignore", UserWarning)
            mod, params = relay.frontend.from_onnx(om)
    except NeedsConstantInput as e:
        raise Skip(f"data-dependent shape (needs {e.input_name} as a constant; Relay's "
                   f"dynamic batch cannot bind it)") from e
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        exe = relay.vm.compile(mod, target="llvm", params=params)
    KERNEL_COUNTS[name] = counts = dynamic_kernel_counts(exe.kernels)
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    user = [p.name_hint for p in mod["main"].params]
    errs = []
    for b in DYN_BATCHES:
        feed = onnx_feed(om, batched(inputs, b))
        try:
            out = vm.invoke("main", *[tvm.nd.array(feed[k]) for k in user])
            errs.append(rel_err(first_tensor(out), refs[b]))
        except Exception as e:
            raise type(e)(f"at batch {b}: {first_line(e)}") from e
    return max(errs), f"sym {counts['symbolic']} spec {counts['specialized']}"


def path_ep_relax_dyn(name, model, inputs, ref, tol):
    """torch.export with axis 0 of every input one ``Dim`` (exported at batch 2; bounded by the
    maximum torch suggests when the model limits the batch), one Relax build, run at each batch
    size."""
    import torch

    from minitvm.relax.frontend.torch import from_exported_program

    try:
        refs = {b: eager(model, tuple(batched(inputs, b).values())) for b in DYN_BATCHES}
    except Exception as e:  # noqa: BLE001
        raise Skip(f"axis 0 is not the batch of every input (eager fails on them cycled to "
                   f"another size): {first_line(e)}") from e
    example = batched(inputs, 2)

    def export_dyn(batch):
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.export.export(model, tuple(example.values()), dynamic_shapes=tuple(
                {0: batch} if v.dim() > 0 else None for v in example.values()))

    try:
        try:
            ep = export_dyn(torch.export.Dim("batch"))
        except Exception as e:  # noqa: BLE001
            # the model bounds the batch (a guard such as batch <= 25): export within the
            # range torch suggests ("Suggested fixes: batch = Dim('batch', max=25)") when it
            # holds the batches run, as a user following that advice would
            bound = re.search(r"Dim\('batch', max=(\d+)\)", str(e))
            if bound is None or int(bound.group(1)) < max(DYN_BATCHES):
                raise
            ep = export_dyn(torch.export.Dim("batch", max=int(bound.group(1))))
    except Exception as e:  # noqa: BLE001
        raise Skip(f"torch.export (dynamic batch): {first_line(e)}") from e
    vm = relax_vm(from_exported_program(ep))
    errs = []
    for b in DYN_BATCHES:
        args = [tvm.nd.array(a.numpy()) for a in batched(inputs, b).values()]
        try:
            errs.append(rel_err(first_tensor(vm["main"](*args)), refs[b]))
        except Exception as e:
            raise type(e)(f"at batch {b}: {first_line(e)}") from e
    return max(errs)


def export(model, args):
    import torch

    try:
        with torch.no_grad():
            return torch.export.export(model, args)
    except Exception as e:  # noqa: BLE001
        raise Skip(f"torch.export: {first_line(e)}") from e


def path_ep_relax(name, model, inputs, ref, tol):
    from minitvm.relax.frontend.torch import from_exported_program

    args = tuple(inputs.values())
    vm = relax_vm(from_exported_program(export(model, args)))
    return rel_err(first_tensor(vm["main"](*[tvm.nd.array(a.numpy()) for a in args])), ref)


def path_ep_relay(name, model, inputs, ref, tol):
    from minitvm.relay.frontend.pytorch import from_exported_program

    args = tuple(inputs.values())
    mod, params = from_exported_program(export(model, args))
    user = [p.name_hint for p in mod["main"].params]
    return rel_err(relay_run(mod, params, {p: a.numpy() for p, a in zip(user, args,
                                                                         strict=True)}), ref)


_DYNAMO_FILES: dict = {}  # model name -> (model proto, feed) or the Skip: both paths share it


def dynamo_onnx(name, model, inputs, ref, tol):
    """(model proto, feed): the file ``torch.onnx.export``'s default (dynamo) exporter writes,
    as a user who calls it without options gets it; ORT checks it against eager. Exported
    once per model (``nu.prepare`` seeds its weights and inputs): the two dynamo paths share
    the file."""
    return _exported_once(_DYNAMO_FILES, name, dynamo_export, model, inputs, ref, tol)


def dynamo_export(model, inputs, ref, tol):
    import logging

    import torch

    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # (torchvision-op notices)
    try:
        import onnxscript  # noqa: F401  (the dynamo exporter's dependency)
    except ImportError as e:
        raise Skip("the dynamo exporter needs onnxscript (in the onnx extra)") from e
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            prog = torch.onnx.export(model, tuple(inputs.values()), dynamo=True,
                                     input_names=list(inputs), verbose=False)
        om = prog.model_proto
    except Exception as e:  # noqa: BLE001 - torch's exporter, not minitvm
        raise Skip(f"torch.onnx.export(dynamo=True): {first_line(e)}") from e
    feed = onnx_feed(om, inputs)
    check_ort(om.SerializeToString(), feed, ref, tol, "dynamo ONNX")
    return om, feed


def path_dynamo_relay(name, model, inputs, ref, tol):
    om, feed = dynamo_onnx(name, model, inputs, ref, tol)
    return onnx_relay_err(om, feed, ref, tol)


def path_dynamo_relax(name, model, inputs, ref, tol):
    om, feed = dynamo_onnx(name, model, inputs, ref, tol)
    vm = relax_vm(relax.frontend.onnx.from_onnx(om))
    return rel_err(first_tensor(vm["main"](*map(tvm.nd.array, feed.values()))), ref)


RUNNERS = {"onnx-relay": path_onnx_relay, "onnx-dyn": path_onnx_dyn, "ep-relax": path_ep_relax,
           "ep-relay": path_ep_relay, "dynamo-relay": path_dynamo_relay,
           "dynamo-relax": path_dynamo_relax, "onnx-dyn-relay": path_onnx_dyn_relay,
           "ep-relax-dyn": path_ep_relax_dyn}


def first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else "")[:160]


def cell(path, name, ctor, spec, tol) -> tuple[str, str]:
    """(status, text): status one of ok / WRONG / FAILED / skip."""
    model, inputs = nu.prepare(ctor, spec)
    ref = eager(model, tuple(inputs.values()))
    try:
        err = RUNNERS[path](name, model, inputs, ref, tol)
    except Skip as e:
        return "skip", f"skip: {e}"
    except Exception as e:  # noqa: BLE001 - report and go on
        return "FAILED", f"FAILED {type(e).__name__}: {first_line(e)}"
    err, note = err if isinstance(err, tuple) else (err, "")  # (a runner may add a note)
    note = f" ({note})" if note else ""
    return ("ok", f"ok {err:.1e}{note}") if err <= tol else ("WRONG", f"WRONG {err:.1e}{note}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", default="all",
                    choices=("first", "second", "third", "fourth", "fifth", "sixth", "seventh",
                             "eighth", "ninth", "tenth", "eleventh", "twelfth", "thirteenth",
                             "fourteenth", "fifteenth", "sixteenth", "seventeenth",
                             "eighteenth", "nineteenth", "twentieth", "twentyfirst",
                             "twentysecond", "twentythird", "twentyfourth", "twentyfifth",
                             "twentysixth", "twentyseventh", "twentyeighth", "twentyninth",
                             "thirtieth", "thirtyfirst", "thirtysecond", "all"))
    ap.add_argument("--models", default="", help="comma-separated names (default: the group's)")
    ap.add_argument("--paths", default=",".join(PATHS),
                    help=f"comma-separated of {PATHS + DYNAMO_PATHS + DYN_RELAY_PATHS}, or all")
    ap.add_argument("--tol", type=float, default=1e-3,
                    help="largest error relative to eager's output that passes")
    args = ap.parse_args()
    if not nu.one_thread_with_extras():
        return 0
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    tables = groups()
    table = tables["all"]
    names = args.models.split(",") if args.models else list(tables[args.group])
    paths = list(PATHS + DYNAMO_PATHS + DYN_RELAY_PATHS) if args.paths == "all" \
        else args.paths.split(",")
    bad = [n for n in names if n not in table] + [p for p in paths if p not in RUNNERS]
    if bad:
        print(f"unknown {bad}; models: {list(table)}; paths: {list(RUNNERS)}")
        return 2
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {len(names)} models x "
          f"{len(paths)} paths, tol {args.tol:g}", flush=True)
    results: dict = {}
    for name in names:
        for path in paths:
            t0 = time.perf_counter()
            results[name, path] = status, text = cell(path, name, *table[name], args.tol)
            print(f"{name:18s} {path:12s} {text}  ({time.perf_counter() - t0:.0f}s)",
                  flush=True)
    print("\nmatrix (max rel err vs eager torch)")
    print(f"{'model':18s} " + " ".join(f"{p:14s}" for p in paths))
    for name in names:
        print(f"{name:18s} " + " ".join(
            f"{results[name, p][1][:14]:14s}" for p in paths))
    print("\nper path: ok / WRONG / FAILED / skip")
    for p in paths:
        counts = {s: sum(results[n, p][0] == s for n in names)
                  for s in ("ok", "WRONG", "FAILED", "skip")}
        print(f"{p:12s} " + " / ".join(str(c) for c in counts.values()))
    if KERNEL_COUNTS:
        print("onnx-dyn-relay kernels with dynamic shapes over {} compiled models: {} symbolic, "
              "{} specialized per shape".format(
                  len(KERNEL_COUNTS), sum(c["symbolic"] for c in KERNEL_COUNTS.values()),
                  sum(c["specialized"] for c in KERNEL_COUNTS.values())))
    failures = [(n, p) for (n, p), (s, _) in results.items() if s in ("WRONG", "FAILED")]
    for n, p in failures:
        print(f"  {n} {p}: {results[n, p][1]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
