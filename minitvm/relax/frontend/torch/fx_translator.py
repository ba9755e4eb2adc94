"""``relax.frontend.torch.from_fx``: a ``torch.fx.GraphModule`` (or any ``nn.Module``) with
TVM's ``input_info`` list -> Relax ``main``.

The module is exported with ``torch.export`` on example inputs of the given shapes (a string or
``tir.Var`` dimension becomes a dynamic ``Dim`` of that name) and imported through the same
ATen converters as ``from_exported_program``, in inference mode (batch norm uses its running
statistics, dropout is the identity), as TVM's FX importer treats the graph."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ....tir import Var as TirVar
from .context import TorchImportError
from .exported_program import ExportedProgramImporter

__all__ = ["from_fx"]

# example sizes of symbolic dimensions: distinct, and none 0 or 1 (torch.export specializes those)
_EXAMPLE_SIZES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def _input_entries(input_info) -> list[tuple[list, str]]:
    """``input_info`` as a list of (shape, dtype), with a clear error for anything else."""
    if not isinstance(input_info, Sequence) or isinstance(input_info, str):
        raise TypeError(f"from_fx: input_info must be a list of (shape, dtype) pairs, got "
                        f"{type(input_info).__name__}")
    out = []
    for k, entry in enumerate(input_info):
        if not isinstance(entry, Sequence) or len(entry) != 2 or isinstance(entry, str):
            raise TypeError(f"from_fx: input_info[{k}] must be a (shape, dtype) pair, got "
                            f"{entry!r}")
        shape, dtype = entry
        if not isinstance(shape, Sequence) or isinstance(shape, str):
            raise TypeError(f"from_fx: input_info[{k}]: the shape must be a list or tuple, got "
                            f"{shape!r}")
        out.append((list(shape), str(dtype)))
    return out


def _dim_name(d, k: int, j: int) -> str | None:
    """The symbolic name of dimension ``j`` of input ``k`` (None for a static size)."""
    if isinstance(d, TirVar):
        return d.name
    if isinstance(d, str):
        if not re.fullmatch(r"[A-Za-z_]\w*", d):
            raise ValueError(f"from_fx: input_info[{k}] dimension {j}: symbolic size {d!r} must "
                             "be an identifier")
        return d
    try:
        size = int(d)
    except (TypeError, ValueError):
        raise TypeError(f"from_fx: input_info[{k}] dimension {j} must be an int, a name or a "
                        f"tir.Var, got {d!r}") from None
    if size < 0 or size != d:
        raise ValueError(f"from_fx: input_info[{k}] dimension {j} is {d!r}, not a size")
    return None


def from_fx(model, input_info, *, keep_params_as_input: bool = False,
            unwrap_unit_return_tuple: bool = False, no_bind_return_tuple: bool = False,
            custom_convert_map: dict | None = None):
    """Convert a ``torch.fx.GraphModule`` (e.g. ``torch.fx.symbolic_trace(model)``) into a Relax
    IRModule whose ``main`` takes one tensor per ``input_info`` entry ``(shape, dtype)``.

    A dimension given as a string or ``tir.Var`` stays symbolic under that name (the same name
    twice is the same size). A model returning one tensor gives ``main`` a tensor result; a
    tuple result stays a tuple (a 1-tuple is unwrapped with ``unwrap_unit_return_tuple``), bound
    to a variable unless ``no_bind_return_tuple``. ``keep_params_as_input`` makes the weights
    trailing parameters (values in ``main``'s ``"params"`` attribute, see
    ``relax.frontend.detach_params``)."""
    import torch

    if custom_convert_map:
        raise NotImplementedError("from_fx: custom_convert_map is not supported: minitvm "
                                  "converts the exported ATen graph (register an ATen converter "
                                  "with relax.frontend.torch.context.register instead)")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"from_fx expects a torch.fx.GraphModule, got {type(model).__name__}")
    entries = _input_entries(input_info)
    dims: dict[str, object] = {}
    user_vars: dict[str, TirVar] = {}
    args, dynamic = [], []
    for k, (shape, dtype) in enumerate(entries):
        try:
            tdtype = getattr(torch, dtype)
            if not isinstance(tdtype, torch.dtype):
                raise AttributeError
        except AttributeError:
            raise TypeError(f"from_fx: input_info[{k}]: unknown dtype {dtype!r}") from None
        sizes, spec = [], {}
        for j, d in enumerate(shape):
            name = _dim_name(d, k, j)
            if name is None:
                sizes.append(int(d))
                continue
            if name not in dims:
                if len(dims) == len(_EXAMPLE_SIZES):
                    raise ValueError(f"from_fx: more than {len(_EXAMPLE_SIZES)} symbolic sizes")
                dims[name] = (torch.export.Dim(name), _EXAMPLE_SIZES[len(dims)])
                user_vars[name] = d if isinstance(d, TirVar) else TirVar(name, "int64")
            dim, example = dims[name]
            spec[j] = dim
            sizes.append(example)
        args.append(torch.zeros(sizes, dtype=tdtype))
        dynamic.append(spec or None)
    training = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        ep = torch.export.export(model, tuple(args),
                                 dynamic_shapes=tuple(dynamic) if dims else None)
    except Exception as e:  # noqa: BLE001 - torch's tracing / constraint errors, named
        raise TorchImportError(f"from_fx: torch.export could not trace the module on inputs "
                               f"{[(list(s), d) for s, d in entries]}: {type(e).__name__}: "
                               f"{str(e).strip()[:2000]}") from e
    finally:
        for m, mode in training:
            m.train(mode)
    from . import _decomposition_table

    ep = ep.run_decompositions(_decomposition_table())
    out_spec = ep.call_spec.out_spec
    single = out_spec is not None and out_spec.is_leaf()  # the module returns one tensor
    importer = ExportedProgramImporter(keep_params_as_input,
                                       unwrap_unit_return_tuple or single)
    importer.bind_return_tuple = not no_bind_return_tuple
    placeholders = [n for n in ep.graph_module.graph.nodes if n.op == "placeholder"]
    users = [n for n, s in zip(placeholders, ep.graph_signature.input_specs, strict=True)
             if s.kind.name == "USER_INPUT"]
    for node, (shape, _) in zip(users, entries, strict=True):
        val = node.meta.get("val")
        for j, d in enumerate(shape):
            name = _dim_name(d, 0, j)
            expr = getattr(getattr(val.shape[j], "node", None), "expr", None)
            if name is not None and expr is not None and expr.is_Symbol:
                importer.symbols[str(expr)] = user_vars[name]
    return importer.from_exported_program(ep)

