"""torch.export ExportedProgram (a ``.pt2`` file) -> Relay, through the ATen FX importer.

Parameters, buffers and lifted constants are embedded as constants; user inputs become Relay
inputs named after the program's placeholders.
"""

from __future__ import annotations

from ..common import ImportError_
from .aten import torch_dtype
from .fx import from_fx

__all__ = ["from_exported_program"]


def from_exported_program(ep, input_shapes: dict | None = None):
    """Convert a ``torch.export.ExportedProgram`` (or a path to a saved ``.pt2``).

    ``input_shapes`` overrides the shapes of user inputs (by placeholder name); by default the
    example shapes recorded in the program are used.
    """
    import torch

    if isinstance(ep, str) or hasattr(ep, "__fspath__"):
        try:
            ep = torch.export.load(ep)
        except Exception as e:  # noqa: BLE001 - zip / pickle errors of a bad file
            raise ImportError_(f"cannot read exported program {str(ep)!r}: "
                               f"{type(e).__name__}: {e}") from e
    if not isinstance(ep, torch.export.ExportedProgram):
        raise TypeError(f"expected a torch.export.ExportedProgram or a .pt2 path, got "
                        f"{type(ep).__name__}")
    from ....frontend_common.torch_export import decompose

    ep = decompose(ep, {}, ImportError_)  # functional ATen ops (no in-place variants)
    gm = ep.graph_module
    _drop_size_assertions(gm)
    _keep_user_outputs(gm, ep.graph_signature.output_specs)
    specs = ep.graph_signature.input_specs
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    input_shapes = dict(input_shapes or {})
    infos, constants = [], {}
    state = dict(ep.state_dict)
    state.update(getattr(ep, "constants", {}) or {})
    for i, (spec, node) in enumerate(zip(specs, placeholders, strict=True)):
        kind = spec.kind.name
        if kind == "USER_INPUT":
            val = node.meta.get("val")
            shape = input_shapes.get(node.name, tuple(int(d) for d in val.shape))
            infos.append((node.name, tuple(shape), torch_dtype(val.dtype)))
        else:
            if spec.target not in state:
                raise ImportError_(f"exported program input {spec.target!r} ({kind}) has no "
                                   "value in its state dict")
            infos.append(None)
            constants[i] = state[spec.target]
    return from_fx(gm, infos, constants)


def _keep_user_outputs(gm, output_specs) -> None:
    """Drop the graph outputs that are not the program's own (the new values of inputs and
    buffers it mutates in place, which torch.export returns first) from the decomposed graph."""
    keep = [i for i, spec in enumerate(output_specs) if spec.kind.name == "USER_OUTPUT"]
    if len(keep) == len(output_specs):
        return
    out = next(n for n in gm.graph.nodes if n.op == "output")
    values = out.args[0]
    out.args = (type(values)(values[i] for i in keep),)
    gm.graph.eliminate_dead_code()


def _drop_size_assertions(gm) -> None:
    """Remove ``_assert_scalar`` nodes (torch.export's range checks of a data-dependent size,
    such as ``0 <= nonzero count <= numel``, which hold by the op's definition) and the size
    arithmetic only they read, from the decomposed program's own graph."""
    import torch

    asserts = [n for n in gm.graph.nodes
               if n.op == "call_function" and n.target is torch.ops.aten._assert_scalar.default]
    for n in asserts:
        gm.graph.erase_node(n)
    if asserts:
        gm.graph.eliminate_dead_code()
