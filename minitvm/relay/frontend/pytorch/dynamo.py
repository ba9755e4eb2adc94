"""The compiler behind ``torch.compile(model, backend="minitvm")`` (see
``minitvm.contrib.torch_backend``, which Dynamo calls): ATen FX graph -> Relay -> relay.build.

Each graph is lowered to ATen ops with ``make_fx`` (real tensors), imported with ``from_fx``
(parameters and buffers embedded as constants), compiled at ``opt_level`` and run on the graph
executor. Graphs with symbolic sizes are compiled per concrete input signature at call time.
"""

from __future__ import annotations

import threading

__all__ = ["compile_graph"]


def describe(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"


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

    from .... import transform
    from ....runtime import cpu
    from ....runtime.graph_executor import GraphModule
    from ...build_module import build
    from .aten import torch_dtype
    from .fx import from_fx

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
        lib = build(mod, target="llvm", params=params)
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


def _specializing(gm, opt_level: int, fallback):
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
                fn = fallback(gm, describe(e))
            cache[key] = fn
        return fn(*args)

    return run


def compile_graph(gm, example_inputs, opt_level: int, fallback):
    """A callable running ``gm`` compiled; raises when it cannot be compiled.

    ``fallback(gm, reason)`` is used for signatures of a shape-specialized graph that fail
    later, at call time.
    """
    if not _is_static(example_inputs):
        return _specializing(gm, opt_level, fallback)
    return _compile(gm, example_inputs, opt_level)
