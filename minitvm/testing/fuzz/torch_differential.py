"""Random PyTorch programs (``torch_generator``) through the PyTorch and ONNX importers
against eager.

Each program is imported five ways: traced by ``torch.jit.trace`` into
``relay.frontend.from_pytorch``; exported by ``torch.export`` into Relay's
``from_exported_program``; the same export into Relax's ``from_exported_program``; and written
by ``torch.onnx.export`` (the TorchScript exporter: the dynamo one takes seconds a program) into
Relay's and Relax's ``from_onnx``. Each is built at opt_level 0 and 3 (``relay.build`` + the graph executor, ``relax.build`` + the VM) and
must give eager's outputs: the same count, shapes and dtypes, integers and bools exactly, floats
within the dtype's tolerance (``differential.compare_values``). A refusal that names an
unsupported operator (``OpNotImplemented``) is not a finding. ``check_torch_batch`` checks
several programs merged into one module (``merge_programs``): the export's decompositions and
each build, most of a program's time, are paid once per batch. An ONNX file the exporter
refuses to write is a refusal; where an ONNX path disagrees with eager, ONNX Runtime runs the
same file: when ORT gives our answer (or cannot load the file either) the exporter wrote the
difference, an ``exporter`` note that is not the importers' finding. Needs the optional
``torch`` (and ``onnx`` / ``onnxruntime`` for the ONNX paths).
"""

from __future__ import annotations

import re

import numpy as np

from .differential import Finding, compare_values, flatten
from .torch_generator import TorchProgram, build_module, generate_torch_program

__all__ = ["check_torch_program", "generate_torch_program", "IMPORTERS", "OPT_LEVELS",
           "run_importer", "is_refusal", "merge_programs", "check_torch_batch",
           "generate_torch_batch", "BATCH", "onnx_model", "ort_outputs", "NOT_OURS"]

OPT_LEVELS = (0, 3)
IMPORTERS = ("torchscript->relay", "export->relay", "export->relax", "onnx->relay",
             "onnx->relax")
ONNX_OPSET = 17
NOT_OURS = "exporter"  # the kind of a note on a difference the ONNX exporter (or ORT) made
BATCH = 8  # programs checked as one module by ``check_torch_batch``
_NAME = re.compile(r"\b([xvw]\d+)\b")
_VALUE_KINDS = (NOT_OURS, "mismatch", "shape")  # a batch's findings that name their program


def _inputs(prog: TorchProgram):
    import torch

    return tuple(torch.from_numpy(v.copy()) for v in prog.feeds.values())


def _relay_run(mod, params, feeds: dict, opt_level: int) -> list[np.ndarray]:
    from ...relay.build_module import build
    from ...runtime.graph_executor import GraphModule
    from ...transform import PassContext

    with PassContext(opt_level=opt_level):
        lib = build(mod, target="llvm", params=params)
    m = GraphModule(lib["default"]())
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy().copy() for i in range(m.get_num_outputs())]


class ExportRefused(Exception):
    """``torch.onnx.export`` did not write the program (an exporter refusal, not ours)."""


def onnx_model(prog: TorchProgram):
    """``prog`` written by ``torch.onnx.export`` (once; kept on ``prog.exported``), inputs
    named as ``prog.feeds``; ``ExportRefused`` when the exporter fails."""
    if "onnx" not in prog.exported:
        import io
        import warnings

        import onnx
        import torch

        buf = io.BytesIO()
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(build_module(prog), _inputs(prog), buf, dynamo=False,
                                  input_names=list(prog.feeds), opset_version=ONNX_OPSET)
            prog.exported["onnx"] = onnx.load_from_string(buf.getvalue())
        except Exception as err:  # noqa: BLE001 - the exporter's refusal, whatever its type
            prog.exported["onnx"] = ExportRefused(f"{type(err).__name__}: {str(err)[:300]}")
    got = prog.exported["onnx"]
    if isinstance(got, ExportRefused):
        raise got
    return got


def _onnx_feeds(model, prog: TorchProgram) -> dict:
    """The inputs the ONNX graph kept (the exporter drops unused ones), by name."""
    names = {i.name for i in model.graph.input} - {t.name for t in model.graph.initializer}
    return {k: v for k, v in prog.feeds.items() if k in names}


def ort_outputs(prog: TorchProgram) -> list[np.ndarray] | Exception:
    """ONNX Runtime's outputs of ``prog``'s ONNX file (or its error), computed once."""
    if "ort" not in prog.exported:
        try:
            import onnxruntime as ort

            model = onnx_model(prog)
            sess = ort.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])
            prog.exported["ort"] = [np.asarray(o) for o in
                                    sess.run(None, _onnx_feeds(model, prog))]
        except Exception as err:  # noqa: BLE001 - ORT's failure is evidence, not a finding
            prog.exported["ort"] = err
    return prog.exported["ort"]


def import_program(prog: TorchProgram, importer: str):
    """``prog`` imported by ``importer`` (one of ``IMPORTERS``): a Relay (mod, params) or a
    Relax module."""
    import torch

    if importer.startswith("onnx"):
        model = onnx_model(prog)
        shapes = {k: v.shape for k, v in _onnx_feeds(model, prog).items()}
        if importer == "onnx->relay":
            from ...relay.frontend import from_onnx

            return from_onnx(model, shape=shapes)
        from ...relax.frontend.onnx import from_onnx as relax_from_onnx

        return relax_from_onnx(model, shapes, sanitize_input_names=False)
    module = build_module(prog)
    if importer == "torchscript->relay":
        from ...relay.frontend import from_pytorch

        with torch.no_grad():
            traced = torch.jit.trace(module, _inputs(prog), check_trace=False)
        infos = [(k, (v.shape, str(v.dtype))) for k, v in prog.feeds.items()]
        return from_pytorch(traced, infos)
    ep = torch.export.export(module, _inputs(prog))
    if importer == "export->relay":
        from ...relay.frontend.pytorch import from_exported_program

        return from_exported_program(ep)
    from ...relax.frontend.torch import from_exported_program

    return from_exported_program(ep)


def run_importer(prog: TorchProgram, importer: str, opt_level: int, imported=None):
    """``prog`` through ``importer``, built at ``opt_level`` and run on its inputs."""
    imported = import_program(prog, importer) if imported is None else imported
    onnx_feeds = _onnx_feeds(onnx_model(prog), prog) if importer.startswith("onnx") else None
    if importer.endswith("relay"):
        mod, params = imported
        names = [p.name_hint for p in mod["main"].params]
        feeds = dict(zip(names, prog.feeds.values(), strict=True)) \
            if importer.startswith("export") else onnx_feeds or prog.feeds
        return _relay_run(mod, params, feeds, opt_level)
    from ...relax import VirtualMachine
    from ...relax import build as relax_build
    from ...runtime import cpu
    from ...transform import PassContext

    with PassContext(opt_level=opt_level):
        vm = VirtualMachine(relax_build(imported, target="llvm"), cpu())
    if onnx_feeds is not None:
        names = [p.name_hint for p in imported["main"].params]
        return flatten(vm["main"](*[onnx_feeds[n].copy() for n in names]))
    return flatten(vm["main"](*[v.copy() for v in prog.feeds.values()]))


def is_refusal(err: Exception) -> bool:
    """An importer's clear refusal of an operator it does not convert (not a finding)."""
    name = type(err).__name__
    text = str(err)
    low = text.lower()
    return name in ("OpNotImplemented", "ExportRefused") or "not supported" in low and any(
        w in low for w in ("operator", "aten", "dtype", "element type", "scalar type"))


def _floor(prog: TorchProgram) -> str | None:
    if "bfloat16" in prog.source:
        return "bfloat16"
    if "float16" in prog.source or any(v.dtype == np.float16 for v in prog.feeds.values()) \
            or ".half()" in prog.source:
        return "float16"
    return "float32"


def _check_path(prog: TorchProgram, importer: str, opt_levels) -> tuple[list[Finding], bool]:
    """``prog`` through one importer at each opt level: (findings, whether it was refused)."""
    found = []
    try:
        imported = import_program(prog, importer)
    except Exception as err:  # noqa: BLE001 - a finding unless a clear refusal
        if is_refusal(err):
            return [], True
        kind = "import-crash"
        if importer.startswith("onnx") and isinstance(ort_outputs(prog), Exception):
            kind = NOT_OURS  # (ORT cannot run the file either: the exporter wrote it wrong)
        return [Finding(kind, importer, prog.seed,
                        f"{type(err).__name__}: {str(err)[:400]}", prog.text())], False
    for level in opt_levels:
        where = f"{importer} opt_level={level}"
        try:
            with np.errstate(all="ignore"):
                got = run_importer(prog, importer, level, imported)
        except Exception as err:  # noqa: BLE001 - a finding
            # (unless ORT cannot run the ONNX file either: the exporter wrote it invalid)
            kind = NOT_OURS if importer.startswith("onnx") and \
                isinstance(ort_outputs(prog), Exception) else "exception"
            found.append(Finding(kind, where, prog.seed,
                                 f"{type(err).__name__}: {str(err)[:400]}", prog.text()))
            continue
        found += _compare_outputs(prog, importer, where, got)
    return found, False


def _compare_outputs(prog: TorchProgram, importer: str, where: str, got: list) -> list:
    """Findings of ``got`` against eager: a merged batch's outputs are compared program by
    program (its outputs are theirs in order), so a difference names its own program and
    needs no check of that program alone."""
    ref = ort_outputs(prog) if importer.startswith("onnx") else None
    spans = [(prog, 0, len(prog.expected))]
    if prog.parts and len(got) == len(prog.expected) and (
            not isinstance(ref, list) or len(ref) == len(got)):
        spans, at = [], 0
        for p in prog.parts:
            spans.append((p, at, at + len(p.expected)))
            at += len(p.expected)
    found = []
    for p, lo, hi in spans:
        diff = compare_values(p.expected, got[lo:hi] if p is not prog else got,
                              floor=_floor(p))
        if not diff:
            continue
        kind = "shape" if re.match(r"output \d+: \w+\(.*\) vs \w+\(", diff) \
            else "mismatch"
        if ref is not None and _exporter_made(p, got[lo:hi] if p is not prog else got,
                                              ref if isinstance(ref, Exception) or p is prog
                                              else ref[lo:hi]):
            kind, diff = NOT_OURS, f"ORT agrees with us, not eager: {diff}"
        found.append(Finding(kind, where, p.seed, diff, p.text()))
    return found


def _exporter_made(prog: TorchProgram, got: list, ref=None) -> bool:
    """Whether ORT, running the same ONNX file, gives our answer where eager differs (or
    fails on the file): the ONNX file, not its import, holds the difference. ``ref``: ORT's
    outputs (default: of ``prog``'s own file)."""
    ref = ort_outputs(prog) if ref is None else ref
    return isinstance(ref, Exception) or \
        compare_values(prog.expected, ref, floor=_floor(prog)) is not None and \
        compare_values(ref, got, floor=_floor(prog)) is None


def check_torch_program(prog: TorchProgram, importers=IMPORTERS,
                        opt_levels=OPT_LEVELS) -> list[Finding]:
    """Every importer at every opt level against eager; refusals are skipped, not findings."""
    return [f for importer in importers for f in _check_path(prog, importer, opt_levels)[0]]

def merge_programs(progs: list[TorchProgram]) -> TorchProgram:
    """``progs`` as one program: program k's inputs, values and weights renamed ``p{k}_...``,
    its lines in order, the outputs of all of them in order (``parts`` keeps the programs).
    One export, one import and one build per path then serve them all."""
    inputs, lines, outs, weights, feeds, expected, features = [], [], [], {}, {}, [], set()
    for k, p in enumerate(progs):
        body = p.source.rstrip("\n").split("\n")
        rename = lambda text, k=k: _NAME.sub(lambda m: f"p{k}_{m.group(1)}", text)  # noqa: E731
        inputs += [f"p{k}_{n}" for n in p.feeds]
        lines += [rename(line) for line in body[1:-1]]
        outs.append(rename(body[-1].strip()[len("return ("):-1]).rstrip(",") + ",")
        weights.update({f"p{k}_{n}": v for n, v in p.weights.items()})
        feeds.update({f"p{k}_{n}": v for n, v in p.feeds.items()})
        expected += p.expected
        features |= p.features
    src = "\n".join([f"def forward(self, {', '.join(inputs)}):", *lines,
                     f"    return ({' '.join(outs)})"]) + "\n"
    return TorchProgram(progs[0].seed, src, weights, feeds, expected, features,
                        any(p.inplace for p in progs), list(progs))


def _exportable(batch: TorchProgram) -> tuple[TorchProgram | None, int]:
    """The batch the ONNX paths check: ``batch`` when the ONNX exporter writes it, else its
    programs the exporter writes one by one merged again (one program the exporter refuses
    made the whole batch fall back to a check per program: eight imports and sixteen
    builds per path), and how many programs were left out. Kept on ``batch``."""
    if "onnx_batch" not in batch.exported:
        try:
            onnx_model(batch)
            batch.exported["onnx_batch"] = (batch, 0)
        except ExportRefused:
            ok = []
            for p in batch.parts:
                try:
                    onnx_model(p)
                    ok.append(p)
                except ExportRefused:
                    pass
            batch.exported["onnx_batch"] = (merge_programs(ok) if ok else None,
                                            len(batch.parts) - len(ok))
    return batch.exported["onnx_batch"]


def generate_torch_batch(seed: int, size: int = BATCH) -> TorchProgram:
    """Programs ``seed * size`` .. ``seed * size + size - 1`` merged (``merge_programs``)."""
    return merge_programs([generate_torch_program(seed * size + i) for i in range(size)])


def check_torch_batch(batch: TorchProgram, importers=IMPORTERS,
                      opt_levels=OPT_LEVELS, stats: dict | None = None) -> list[Finding]:
    """``check_torch_program`` of a merged batch; a path that refuses or fails the batch checks
    its programs one by one, so each finding names its own program (a failure no single
    program shows is reported on the batch: programs side by side changed an answer).
    ``stats`` (when given) counts per path the programs that ran and those refused."""
    found = []
    for importer in importers:
        tally = stats.setdefault(importer, {"ran": 0, "refused": 0}) if stats is not None \
            else {"ran": 0, "refused": 0}
        checked = batch
        if importer.startswith("onnx"):
            checked, kept_out = _exportable(batch)
            tally["refused"] += kept_out
            if checked is None:
                continue
        on_batch, refused = _check_path(checked, importer, opt_levels)
        whole = checked.text()
        if not refused and all(f.kind in _VALUE_KINDS and f.program != whole
                               for f in on_batch):
            tally["ran"] += len(checked.parts)  # (each difference named its program)
            found += on_batch
            continue
        alone = []
        for p in checked.parts:
            one, no = _check_path(p, importer, opt_levels)
            tally["refused" if no else "ran"] += 1
            alone += one
        found += alone if alone or refused else on_batch
    return found
