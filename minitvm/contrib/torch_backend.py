"""``torch.compile(model, backend="minitvm")``: a TorchDynamo backend compiling FX graphs with
minitvm (ATen FX graph -> Relay -> ``relay.build``), falling back to eager when it cannot.

Each graph Dynamo hands over is lowered to ATen ops with ``make_fx``, imported with
``relay.frontend.pytorch.from_fx`` (parameters and buffers embedded as constants), compiled at
``opt_level`` 3 and run on the graph executor. A graph that cannot be compiled (an unsupported
op, a training graph, dynamic shapes) runs eagerly, with one warning per distinct reason.
"""

from __future__ import annotations

import threading
import warnings

__all__ = ["minitvm_backend", "register", "fallback_reasons"]

_WARNED: set[str] = set()
_LOCK = threading.Lock()
fallback_reasons: list[str] = []  # every reason a graph ran eagerly, in order (for tests/users)


def _fallback(gm, reason: str):
    fallback_reasons.append(reason)
    with _LOCK:
        first = reason not in _WARNED
        _WARNED.add(reason)
    if first:
        warnings.warn(f"minitvm torch.compile backend: running this graph eagerly: {reason}",
                      RuntimeWarning, stacklevel=3)
    return gm.forward


def _frozen_indices(gm, example_inputs) -> set[int]:
    """Placeholders holding parameters or buffers (embedded as constants)."""
    import torch

    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    out = set()
    for i, (name, t) in enumerate(zip(names, example_inputs)):
        if isinstance(t, torch.nn.Parameter) or "_parameters_" in str(name) or \
                "_buffers_" in str(name):
            out.add(i)
    return out


def _is_static(example_inputs) -> bool:
    import torch

    for t in example_inputs:
        if not isinstance(t, torch.Tensor):
            return False
        if any(not isinstance(d, int) for d in t.shape):
            return False
    return True


def _compile(gm, example_inputs, opt_level: int):
    """Compile ``gm`` for these concrete inputs (tensors and Python numbers)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from .. import relay, transform
    from ..relay.frontend.pytorch import from_fx
    from ..relay.frontend.pytorch.aten import torch_dtype
    from ..runtime import cpu
    from ..runtime.graph_executor import GraphModule

    frozen = _frozen_indices(gm, example_inputs)
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        raise ValueError("autograd is on and inputs require grad (a training graph); run "
                         "inference under torch.no_grad() or torch.inference_mode() to compile")
    with torch.no_grad():
        aten_gm = make_fx(gm, tracing_mode="real")(*example_inputs)
    aten_gm.graph.eliminate_dead_code()  # e.g. the unused `empty` batch norm traces
    infos, runtime_idx, constants = [], [], {}
    for i, t in enumerate(example_inputs):
        if i in frozen or not isinstance(t, torch.Tensor):
            infos.append(None)
            constants[i] = t
        else:
            infos.append((f"input{i}", tuple(t.shape), torch_dtype(t.dtype)))
            runtime_idx.append(i)
    mod, params = from_fx(aten_gm, infos, constants)
    with transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target="llvm", params=params)
    names = [p.name_hint for p in mod["main"].params]
    out_node = next(n for n in aten_gm.graph.nodes if n.op == "output")
    as_tuple = isinstance(out_node.args[0], list | tuple)
    lock = threading.Lock()
    executor = GraphModule(lib["default"](cpu()))

    def run(*args):
        with lock:  # one executor: calls from several threads take turns
            for name, i in zip(names, runtime_idx, strict=True):
                executor.set_input(name, args[i].detach().cpu().numpy())
            executor.run()
            outs = [torch.from_numpy(executor.get_output(k).numpy().copy())
                    for k in range(executor.get_num_outputs())]
        return tuple(outs) if as_tuple else outs[0]

    return run


def _specializing(gm, opt_level: int):
    """For graphs with symbolic sizes: compile per concrete input signature at call time."""
    import torch

    cache: dict = {}

    def signature(args):
        return tuple((tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else
                     ("value", a) for a in args)

    def run(*args):
        key = signature(args)
        fn = cache.get(key)
        if fn is None:
            try:
                fn = _compile(gm, list(args), opt_level)
            except Exception as e:  # noqa: BLE001 - this signature runs eagerly
                fn = _fallback(gm, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            cache[key] = fn
        return fn(*args)

    return run


def minitvm_backend(gm, example_inputs, opt_level: int = 3):
    """The Dynamo backend: a compiled callable for ``gm``, or ``gm.forward`` on failure."""
    try:
        if not _is_static(example_inputs):
            return _specializing(gm, opt_level)
        return _compile(gm, example_inputs, opt_level)
    except Exception as e:  # noqa: BLE001 - any failure means eager, said once per reason
        return _fallback(gm, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def register() -> bool:
    """Register ``"minitvm"`` with torch._dynamo (also done by the package's entry point)."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return False
    if "minitvm" not in list_backends(exclude_tags=()):
        register_backend(name="minitvm")(minitvm_backend)
    return True


register()
