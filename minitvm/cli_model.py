"""``minitvm compile / run / bench / viz``: the command line for model files.

    minitvm compile model.onnx -O3 --target llvm -o model.tar
    minitvm run model.tar --input data=x.npy        # random inputs when --input is omitted
    minitvm compile model.onnx --dynamic            # symbolic dims kept: one Relay VM library
    minitvm run model.tar --input-shape data=8,3,224,224   # ... run at any size
    minitvm bench model.onnx                        # our latency beside ONNX Runtime / PyTorch
    minitvm viz model.onnx --pass FuseOps -o graph.html

Models: ONNX (``.onnx``), TFLite (``.tflite``, converted to NCHW after import) and
torch.export programs (``.pt2``); ``viz`` also reads Relay text (``.relay`` / ``.txt``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
import zipfile

import numpy as np

__all__ = ["add_parsers", "cmd_compile", "cmd_run", "cmd_bench", "cmd_viz", "load_model"]


class CLIError(ValueError):
    """A user-facing error: printed without a traceback, exit status 2."""


# ------------------------------------------------------------------ loading
def _parse_shapes(items) -> dict:
    shapes = {}
    for item in items or []:
        name, sep, dims = item.partition("=")
        if not sep or not dims:
            raise CLIError(f"--input-shape expects NAME=D1,D2,..., got {item!r}")
        try:
            shapes[name] = tuple(int(d) for d in dims.replace("x", ",").split(","))
        except ValueError as e:
            raise CLIError(f"--input-shape {item!r}: dimensions must be integers") from e
    return shapes


def _onnx_shapes(model, given: dict, keep_symbolic: bool = False) -> dict:
    """Static input shapes: given ones, else the model's with symbolic dims set to 1
    (``keep_symbolic``: only the given ones; the importer keeps the rest symbolic)."""
    inits = {t.name for t in model.graph.initializer}
    shapes = dict(given)
    for vi in model.graph.input:
        if vi.name in inits or vi.name in shapes or keep_symbolic:
            continue
        dims = vi.type.tensor_type.shape.dim
        fixed = [int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else 1
                 for d in dims]
        if any(not (d.HasField("dim_value") and d.dim_value > 0) for d in dims):
            print(f"note: input {vi.name!r} has symbolic dimensions; using {tuple(fixed)} "
                  f"(set it with --input-shape {vi.name}=...)", file=sys.stderr)
        shapes[vi.name] = tuple(fixed)
    return shapes


def load_model(path: str, input_shapes: dict | None = None, keep_symbolic: bool = False):
    """(mod, params, framework) for a model or Relay text file, chosen by extension.
    ``keep_symbolic``: an ONNX model's symbolic input dimensions stay symbolic (``relay.Any``)."""
    from . import relay, transform

    if not os.path.exists(path):
        raise CLIError(f"no such file: {path}")
    ext = os.path.splitext(path)[1].lower()
    given = dict(input_shapes or {})
    if ext == ".onnx":
        try:
            import onnx
        except ImportError as e:
            raise CLIError("reading .onnx files needs the onnx package: "
                           "pip install 'minitvm[onnx]'") from e
        try:
            model = onnx.load(path)
        except Exception as e:  # noqa: BLE001 - protobuf decode errors
            raise CLIError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from e
        shapes = _onnx_shapes(model, given, keep_symbolic)
        with warnings.catch_warnings():  # (the importer's note on symbolic inputs: asked for)
            if keep_symbolic:
                warnings.simplefilter("ignore", UserWarning)
            mod, params = relay.frontend.from_onnx(model, shape=shapes)
        return mod, params, "onnx"
    if keep_symbolic:
        raise CLIError(f"--dynamic keeps an ONNX model's symbolic input dimensions; {path} is "
                       f"not an ONNX model (compile it with static --input-shape sizes)")
    if ext == ".tflite":
        with open(path, "rb") as f:
            data = f.read()
        mod, params = relay.frontend.from_tflite(data, shape_dict=given or None)
        seq = transform.Sequential([relay.transform.RemoveUnusedFunctions(),
                                    relay.transform.ConvertLayout({"nn.conv2d": ["NCHW",
                                                                                 "default"]})])
        with transform.PassContext(opt_level=3):
            mod = seq(mod)
        return mod, params, "tflite"
    if ext == ".pt2":
        try:
            import torch  # noqa: F401
        except ImportError as e:
            raise CLIError("reading .pt2 files needs torch: pip install 'minitvm[torch]'") from e
        from .relay.frontend.pytorch import from_exported_program

        mod, params = from_exported_program(path, input_shapes=given)
        return mod, params, "pytorch"
    if ext in (".relay", ".txt", ".rly"):
        with open(path) as f:
            mod = relay.transform.InferType()(relay.fromtext(f.read()))
        return mod, {}, "relay"
    raise CLIError(f"{path}: unknown model type {ext!r} (expected .onnx, .tflite, .pt2 or "
                   "Relay text .relay/.txt)")


# ------------------------------------------------------------------ progress
class _Progress:
    """A pass-level progress line (tqdm when installed), as a PassInstrument."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.count = 0
        self.start = time.perf_counter()
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(desc="compiling", unit=" pass", file=sys.stderr, leave=False)
            except ImportError:
                self.bar = None

    def instrument(self):
        from .instrument import PassInstrument

        progress = self

        class _Inst(PassInstrument):
            def run_after_pass(self, mod, info):
                progress.step(info.name)

        return _Inst()

    def step(self, name: str) -> None:
        self.count += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(name)
        else:
            elapsed = time.perf_counter() - self.start
            sys.stderr.write(f"\r[{elapsed:6.1f}s] pass {self.count:3d}: {name:<40.40}")
            sys.stderr.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        else:
            sys.stderr.write("\r" + " " * 62 + "\r")


def build_model(mod, params, opt_level: int, target: str, progress: bool = False,
                vm: bool = False):
    """(``relay.build``'s factory, passes run) for ``mod``; ``vm``: (a Relay VM executable,
    passes run), built once for every size of its symbolic dimensions."""
    from . import relay, transform

    bar = _Progress(progress)
    try:
        with transform.PassContext(opt_level=opt_level, instruments=[bar.instrument()]):
            build = relay.vm.compile if vm else relay.build
            lib = build(mod, target=target, params=params)
    finally:
        bar.close()
    return lib, bar.count


# ------------------------------------------------------------------ Relay VM libraries
# ``minitvm compile --dynamic`` keeps an ONNX model's symbolic dimensions and builds it once with
# the Relay VM, for every size. Its file is a zip of three members: the VM's bytecode and
# constants (``Executable.save``'s code), the kernels as ``export_library`` writes them, and the
# inputs' shapes (None where symbolic) so ``minitvm run`` can check and fill them.
_VM_META, _VM_CODE, _VM_KERNELS = "minitvm_vm.json", "vm_code.bin", "kernels.tar"


def _shape_of(ty) -> list:
    from .ir.type import TensorType

    if not isinstance(ty, TensorType):
        raise CLIError(f"--dynamic: an input of type {ty} is not a tensor")
    def size(d):
        value = d if isinstance(d, int) else getattr(d, "value", None)  # (int or IntImm)
        return int(value) if isinstance(value, int | np.integer) else None

    return [size(d) for d in ty.shape]


def write_vm_library(exe, inputs: list, path: str) -> None:
    """Write a VM executable and its inputs' specs ``[(name, shape, dtype)]`` to ``path``."""
    code, lib = exe.save()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = os.path.join(tmp, _VM_KERNELS)
        lib.export_library(kernels)
        with zipfile.ZipFile(path, "w") as z:
            z.writestr(_VM_META, json.dumps({"format": "minitvm-relay-vm", "inputs": inputs}))
            z.writestr(_VM_CODE, code)
            z.write(kernels, _VM_KERNELS)


def _is_vm_library(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return _VM_META in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def load_vm_library(path: str):
    """(VirtualMachine, inputs' specs) of a file ``write_vm_library`` wrote."""
    from . import runtime
    from .runtime.vm import Executable, VirtualMachine

    try:
        with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory() as tmp:
            meta = json.loads(z.read(_VM_META))
            code = z.read(_VM_CODE)
            kernels = z.extract(_VM_KERNELS, tmp)
            lib = runtime.load_module(kernels)
            exe = Executable.load_exec(code, lib)
    except (KeyError, ValueError, zipfile.BadZipFile) as e:
        raise CLIError(f"{path}: a damaged Relay VM library ({e})") from e
    specs = [(n, tuple(s), d) for n, s, d in meta["inputs"]]
    return VirtualMachine(exe, runtime.cpu()), specs


# ------------------------------------------------------------------ commands
def cmd_compile(args) -> int:
    mod, params, fw = load_model(args.model, _parse_shapes(args.input_shape),
                                 keep_symbolic=args.dynamic)
    progress = not args.quiet and sys.stderr.isatty()
    out = args.output or os.path.splitext(os.path.basename(args.model))[0] + ".tar"
    main = mod["main"]
    inputs = [p for p in main.params if p.name_hint not in params]
    t = time.perf_counter()
    if args.dynamic:
        exe, passes = build_model(mod, params, args.opt_level, args.target, progress, vm=True)
        elapsed = time.perf_counter() - t
        specs = [(p.name_hint, _shape_of(p.checked_type), str(p.checked_type.dtype))
                 for p in inputs]
        write_vm_library(exe, specs, out)
        kernels, how = len(exe.kernels), " (Relay VM: any size of the ? dimensions)"
    else:
        lib, passes = build_model(mod, params, args.opt_level, args.target, progress)
        elapsed = time.perf_counter() - t
        lib.export_library(out)
        kernels, how = len(lib.get_lib().kernels), ""
    print(f"compiled {args.model} ({fw}) at -O{args.opt_level} for {args.target} in "
          f"{elapsed:.2f} s: {passes} passes, {kernels} kernels -> {out}{how}")
    for p in inputs:
        print(f"  input  {p.name_hint}: {p.checked_type}")
    print(f"  output {main.ret_type}")
    return 0


def _graph_module(path: str):
    from . import runtime
    from .runtime.graph_executor import GraphModule

    try:
        factory = runtime.load_module(path)
    except ValueError as e:
        raise CLIError(str(e)) from e
    if not hasattr(factory, "get_graph_json"):
        raise CLIError(f"{path} is not a graph-executor library written by `minitvm compile`")
    return GraphModule(factory["default"](runtime.cpu()))


def _input_specs(gm) -> list[tuple[str, tuple, str]]:
    specs = []
    for name in gm.input_names:
        v = gm.get_input(name)
        specs.append((name, tuple(v.shape), str(v.dtype)))
    return specs


def _random_input(shape, dtype, rng):
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 10, shape).astype(dtype)


def _fits(shape: tuple, spec: tuple) -> bool:
    """Does a concrete ``shape`` fit ``spec`` (None: any size)?"""
    return len(shape) == len(spec) and all(d is None or d == n for d, n in zip(spec, shape))


def _spec_text(spec: tuple) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in spec) + \
        ("," if len(spec) == 1 else "") + ")"


def _parse_inputs(items, specs, seed: int, sizes: dict | None = None) -> dict:
    """Inputs by name: read from ``NAME=FILE.npy`` items, else random of the spec's shape, whose
    symbolic dimensions (None) come from ``sizes`` (``--input-shape``) or are 1."""
    rng = np.random.default_rng(seed)
    by_name = {n: (s, d) for n, s, d in specs}
    sizes = dict(sizes or {})
    for name, shape in sizes.items():
        if name not in by_name:
            raise CLIError(f"--input-shape {name!r}: the model's inputs are {', '.join(by_name)}")
        if not _fits(shape, by_name[name][0]):
            raise CLIError(f"--input-shape {name}={','.join(map(str, shape))}: the model "
                           f"expects {_spec_text(by_name[name][0])}")
    feeds = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep:
            raise CLIError(f"--input expects NAME=FILE.npy, got {item!r}")
        if name not in by_name:
            raise CLIError(f"--input {name!r}: the model's inputs are {', '.join(by_name)}")
        try:
            arr = np.load(path)
        except Exception as e:  # noqa: BLE001 - missing / unreadable file
            raise CLIError(f"--input {name}: cannot read {path!r}: {e}") from e
        shape, dtype = by_name[name]
        if not _fits(arr.shape, shape):
            raise CLIError(f"--input {name}: {path} has shape {arr.shape}, the model expects "
                           f"{_spec_text(shape)}")
        if arr.dtype.kind not in "biuf" or not np.can_cast(arr.dtype, dtype, "same_kind"):
            raise CLIError(f"--input {name}: {path} holds {arr.dtype} values, the model expects "
                           f"{dtype} (only a cast within a kind, as float64 -> float32, is made)")
        feeds[name] = arr.astype(dtype, copy=False)
    for name, (shape, dtype) in by_name.items():
        if name in feeds:
            continue
        if name not in sizes and None in shape:
            print(f"note: input {name!r} has symbolic dimensions {_spec_text(shape)}; using 1 "
                  f"(set them with --input-shape {name}=...)", file=sys.stderr)
        concrete = sizes.get(name, tuple(1 if d is None else d for d in shape))
        feeds[name] = _random_input(concrete, dtype, rng)
    return feeds


def _flat_outputs(value) -> list:
    """A VM result (a tensor or nested tuples of them) as a list of numpy arrays."""
    from .runtime.container import ADT

    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, ADT | tuple | list):
            stack.extend(reversed(list(v)))
        else:
            out.append(v.numpy() if hasattr(v, "numpy") else np.asarray(v))
    return out


def _stats(arr) -> str:
    if arr.size == 0:
        return "empty"
    a = arr.astype(np.float64)
    return (f"min {a.min():.6g}  max {a.max():.6g}  mean {a.mean():.6g}  std {a.std():.6g}")


def cmd_run(args) -> int:
    sizes = _parse_shapes(args.input_shape)
    if _is_vm_library(args.library):
        vm, specs = load_vm_library(args.library)
        feeds = _parse_inputs(args.input, specs, args.seed, sizes)
        ordered = [feeds[n] for n, _, _ in specs]
        last = []

        def run_once():
            last[:] = [vm.run(*ordered)]

        def outputs():
            return _flat_outputs(last[0])
    else:
        gm = _graph_module(args.library)
        feeds = _parse_inputs(args.input, _input_specs(gm), args.seed, sizes)
        gm.set_input(**feeds)
        run_once = gm.run

        def outputs():
            return [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]
    for name, arr in feeds.items():
        src = "file" if any(i.startswith(name + "=") for i in args.input or []) else "random"
        print(f"input  {name}: shape {arr.shape} {arr.dtype} ({src})")
    t = time.perf_counter()
    for _ in range(max(args.repeat, 1)):
        run_once()
    ms = (time.perf_counter() - t) * 1000 / max(args.repeat, 1)
    outs = outputs()
    for i, o in enumerate(outs):
        print(f"output {i}: shape {o.shape} {o.dtype}  {_stats(o)}")
    print(f"time: {ms:.3f} ms per run ({args.repeat} runs)")
    if args.output:
        np.savez(args.output, *outs)
        print(f"outputs saved to {args.output}")
    return 0


def _time(fn, repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1000


def bench_rows(path: str, input_shapes: dict, repeat: int, opt_level: int = 3):
    """[(runtime, median ms, note)] for minitvm and the peers installed, on the same inputs."""
    from . import runtime
    from .runtime.graph_executor import GraphModule

    mod, params, fw = load_model(path, input_shapes)
    lib, _ = build_model(mod, params, opt_level, "llvm")
    gm = GraphModule(lib["default"](runtime.cpu()))
    feeds = _parse_inputs([], _input_specs(gm), 0)
    gm.set_input(**feeds)
    rows = [("minitvm", _time(gm.run, repeat), f"-O{opt_level}, llvm")]
    ours = [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]
    if fw == "onnx":
        try:
            import onnxruntime as ort
        except ImportError:
            rows.append(("onnxruntime", None, "not installed"))
        else:
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            names = [i.name for i in sess.get_inputs()]
            ort_feeds = {n: feeds[n] for n in names if n in feeds}
            ref = sess.run(None, ort_feeds)
            err = max(float(np.abs(a - b).max()) for a, b in zip(ours, ref))
            rows.append(("onnxruntime", _time(lambda: sess.run(None, ort_feeds), repeat),
                         f"max |diff| {err:.2e}"))
    if fw == "pytorch":
        import torch

        prog = torch.export.load(path).module()
        targs = [torch.from_numpy(v) for v in feeds.values()]
        with torch.no_grad():
            ref = prog(*targs)
            ref = ref if isinstance(ref, tuple | list) else (ref,)
            err = max(float(np.abs(a - b.numpy()).max()) for a, b in zip(ours, ref))
            ms = _time(lambda: prog(*targs), repeat)
        rows.append(("pytorch (eager)", ms, f"max |diff| {err:.2e}"))
    return rows


def cmd_bench(args) -> int:
    rows = bench_rows(args.model, _parse_shapes(args.input_shape), args.repeat, args.opt_level)
    base = rows[0][1]
    print(f"{'runtime':<18}{'median ms':>12}{'vs minitvm':>12}  note")
    for name, ms, note in rows:
        if ms is None:
            print(f"{name:<18}{'-':>12}{'-':>12}  {note}")
        else:
            print(f"{name:<18}{ms:>12.3f}{ms / base:>11.2f}x  {note}")
    return 0


def cmd_viz(args) -> int:
    from . import relay, transform
    from .contrib import relay_viz

    mod, params, _ = load_model(args.model, _parse_shapes(args.input_shape))
    parser_cls = relay_viz._DEFAULT_PARSER
    sections = [("before" if args.pass_name else "main",
                 parser_cls().get_graph("main", mod["main"], params))]
    if args.pass_name:
        from .transform.registry import get_pass

        try:
            p = get_pass(args.pass_name)
        except Exception as e:  # noqa: BLE001 - unknown pass name
            raise CLIError(f"--pass {args.pass_name!r}: {e}") from e
        with transform.PassContext(opt_level=3):
            after = p(relay.transform.InferType()(mod))
        sections.append((f"after {args.pass_name}",
                         parser_cls().get_graph("main", after["main"], params)))
    if args.format == "term":
        from .contrib.relay_viz.terminal import render_tree

        print("\n\n".join(f"== {h}\n{render_tree(g)}" for h, g in sections))
        return 0
    from .contrib.relay_viz.svg import graph_svg, html_page

    out = args.output or os.path.splitext(os.path.basename(args.model))[0] + (
        ".svg" if args.format == "svg" else ".html")
    text = graph_svg(sections[-1][1]) if args.format == "svg" else html_page(
        os.path.basename(args.model), sections)
    with open(out, "w") as f:
        f.write(text)
    print(f"wrote {out} ({', '.join(f'{h}: {len(g.nodes)} nodes' for h, g in sections)})")
    return 0


def add_parsers(sub) -> dict:
    """Add the model subcommands to ``minitvm``'s argparse subparsers; name -> handler."""
    c = sub.add_parser("compile", help="compile a model file (.onnx, .tflite, .pt2)")
    c.add_argument("model")
    c.add_argument("-O", dest="opt_level", type=int, default=3, help="opt level (default 3)")
    c.add_argument("--target", default="llvm")
    c.add_argument("-o", "--output", default=None, help="library path (default MODEL.tar)")
    c.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    c.add_argument("--dynamic", action="store_true",
                   help="keep an ONNX model's symbolic input dimensions: one Relay VM library "
                        "for every size (`minitvm run --input-shape` picks them)")
    r = sub.add_parser("run", help="run a library written by `minitvm compile`")
    r.add_argument("library")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    r.add_argument("--repeat", type=int, default=1)
    r.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    r.add_argument("-o", "--output", default=None, help="save the outputs (.npz)")
    r.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="sizes of a --dynamic library's symbolic dimensions (random inputs)")
    b = sub.add_parser("bench", help="latency of a model beside ONNX Runtime / PyTorch")
    b.add_argument("model")
    b.add_argument("--repeat", type=int, default=20)
    b.add_argument("-O", dest="opt_level", type=int, default=3)
    b.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...")
    v = sub.add_parser("viz", help="draw a model's or Relay file's dataflow graph (HTML/SVG)")
    v.add_argument("model")
    v.add_argument("--pass", dest="pass_name", default=None,
                   help="also draw the graph after this registered pass")
    v.add_argument("--format", choices=["html", "svg", "term"], default="html")
    v.add_argument("-o", "--output", default=None)
    v.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...")
    return {"compile": cmd_compile, "run": cmd_run, "bench": cmd_bench, "viz": cmd_viz}


def run_command(handler, args) -> int:
    """Run a handler; user errors print one line and return 2."""
    from .relay.frontend import ImportError_, OpNotImplemented

    try:
        return handler(args) or 0
    except (CLIError, ImportError_, OpNotImplemented) as e:
        print(f"minitvm {args.command}: error: {e}", file=sys.stderr)
        return 2
