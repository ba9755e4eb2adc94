"""Export an ``nn.Module`` to a Relax ``IRModule`` (TVM's ``nn/exporter.py``).

Per method of the spec, one Relax function built with a ``BlockBuilder``: its parameters are the
spec's inputs, then the effects' state (debug IO), then every ``nn.Parameter`` named after its
dotted path with ``.`` replaced by ``_`` (``fc1.weight`` -> ``fc1_weight``); attrs
``{"num_input": <inputs + effects>}``; the body one dataflow block whose result is emitted with
``emit_output`` (``gv``).
"""

from __future__ import annotations

import threading
import typing

from ....ir.module import IRModule
from ....tir.expr import Var as TirVar
from ... import expr as rx
from ...block_builder import BlockBuilder
from ...struct_info import ObjectStructInfo, ShapeStructInfo, TupleStructInfo
from . import core
from . import spec as _spec

__all__ = ["Exporter"]


class Exporter:
    """Builds the functions of a ModuleSpec into one IRModule."""

    _tls = threading.local()

    def __init__(self, debug: bool) -> None:
        from .modules import IOEffect

        self.builder = BlockBuilder()
        self.io_effect = IOEffect() if debug else None
        self.extern_mods: list = []

    @staticmethod
    def current() -> Exporter | None:
        """The exporter whose export is running in this thread, or None."""
        return getattr(Exporter._tls, "current", None)

    def __enter__(self) -> Exporter:
        if Exporter.current() is not None:
            raise RuntimeError("export_tvm cannot be called while another module is being "
                               "exported")
        Exporter._tls.current = self
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        Exporter._tls.current = None

    def add_external_module(self, mod) -> None:
        self.extern_mods.append(mod)

    def build(self, spec: _spec.ModuleSpec) -> tuple[IRModule, list, list]:
        """The IRModule, the ``(name, Parameter)`` list (dotted names) and external modules."""

        def _params() -> list:
            return list(core._attribute_finder(spec.module, "",
                                               lambda x: isinstance(x, core.Parameter)))

        def _effects() -> list:
            result = []
            if self.io_effect is not None:
                result.append(("", self.io_effect))
            result.extend(core._attribute_finder(spec.module, "",
                                                 lambda x: isinstance(x, core.Effect)))
            return result

        params = _params()
        effects = _effects()
        with self:
            if effects:
                with self.builder.function("_initialize_effect"):
                    with self.builder.dataflow():
                        outputs = _emit_effect_init(self.builder, effects)
                    self.builder.emit_func_output(outputs, params=[])
            for method_name, method_spec in zip(spec.method_names, spec.method_specs):
                params = _params()
                len_args = len(method_spec.arg_specs)
                len_effects = {"packed": 1, "none": 0, "plain": len(effects)}[
                    method_spec.effect_mode]
                with self.builder.function(method_name,
                                           attrs={"num_input": len_args + len_effects}):
                    with self.builder.dataflow():
                        outputs, inputs = _emit_method(self.builder, method_name, method_spec,
                                                       params, effects)
                    self.builder.emit_func_output(outputs, inputs)
        mod = self.builder.get()
        _check_well_formed(mod)
        return mod, params, self.extern_mods


def _check_well_formed(mod: IRModule) -> None:
    from ... import analysis

    well_formed = getattr(analysis, "well_formed", None)
    if well_formed is not None and not well_formed(mod):
        raise ValueError("export_tvm produced a module that is not well formed")


def _emit_effect_init(builder: BlockBuilder, effects: list):
    outputs = []
    for prefix, effect in effects:
        inits = effect.emit_init(prefix, builder)
        if not isinstance(inits, list):
            raise TypeError(f"{type(effect).__name__}.emit_init must return a list")
        outputs.extend(inits)
    return builder.emit_output(builder.emit(rx.Tuple(outputs)))


def _emit_method(builder: BlockBuilder, method_name: str, spec: _spec.MethodSpec, params: list,
                 effects: list):
    # one tir.Var per symbolic-dimension name in this function (spec inputs and parameters)
    str2var: dict[str, TirVar] = {}

    def _get_var(name: str) -> TirVar:
        var = str2var.get(name)
        if var is None:
            var = str2var[name] = TirVar(name, "int64")
        return var

    def _unwrap_ret(value: typing.Any):
        if isinstance(value, core.Tensor | core.Object):
            return value._expr
        if isinstance(value, tuple | list):
            return rx.Tuple([_unwrap_ret(x) for x in value])
        raise TypeError(f"export_tvm: method {method_name!r} returned an unsupported value of "
                        f"type {type(value).__name__}; expected nn.Tensor or a tuple/list of "
                        "them")

    def _convert_input(arg):
        if isinstance(arg, TirVar):
            return rx.Var(arg.name, ShapeStructInfo(values=[arg]))
        if isinstance(arg, core.Tensor | core.Object):
            return arg._expr
        if isinstance(arg, _spec.Tuple):
            return rx.Var(arg.name, TupleStructInfo(
                [_convert_input(a).struct_info for a in arg.elements]))
        raise TypeError(f"Unsupported input type: {type(arg).__name__}")

    def _method_inputs() -> list:
        def _convert(arg_name, arg_spec):
            if isinstance(arg_spec, _spec.Int):
                return _get_var(arg_name)
            if isinstance(arg_spec, _spec.Tensor):
                for d in arg_spec.shape:  # a tir.Var given in a spec also names its dimension
                    if isinstance(d, TirVar):
                        str2var.setdefault(d.name, d)
                shape = [_get_var(d) if isinstance(d, str) else d for d in arg_spec.shape]
                return core.Tensor.placeholder(shape, arg_spec.dtype, arg_name)
            if isinstance(arg_spec, _spec.Object):
                return arg_spec.object_type(_expr=rx.Var(arg_name, ObjectStructInfo()),
                                            _name=arg_name)
            if isinstance(arg_spec, _spec.Tuple):
                elements = type(arg_spec.elements)(
                    _convert(f"{arg_name}_{i}", e) for i, e in enumerate(arg_spec.elements))
                return _spec.Tuple(arg_name, elements)
            raise TypeError(f"Invalid spec for argument {arg_name}: {arg_spec}")

        return [_convert(n, s) for n, s in zip(spec.arg_names, spec.arg_specs)]

    def _param_inputs(mode: str) -> list:
        inputs = []
        for name, param in params:
            shape = [_get_var(d.name) if isinstance(d, TirVar) else d for d in param.shape]
            var = core.Tensor.placeholder(shape, param.dtype, core._legal_name(name))._expr
            inputs.append(var)
            param._expr = var
        if mode == "none":
            return []
        if mode == "plain":
            return inputs
        if mode == "packed":
            packed = rx.Var("packed_params", TupleStructInfo([v.struct_info for v in inputs]))
            for i, (name, param) in enumerate(params):
                param._expr = builder.emit(rx.TupleGetItem(packed, i), core._legal_name(name))
            return [packed]
        raise ValueError(f"Invalid param_mode: {mode}")

    def _effect_inputs(mode: str) -> list:
        unflat = []
        for name, effect in effects:
            state = effect.create(name)
            effect.set_state(state)
            unflat.append(state)
        inputs = [v for state in unflat for v in state]
        if mode == "none":
            return []
        if mode == "plain":
            return inputs
        if mode == "packed":
            packed = rx.Var("packed_effects", TupleStructInfo([v.struct_info for v in inputs]))
            i = 0
            for state, (_, effect) in zip(unflat, effects):
                new_state = []
                for v in state:
                    new_state.append(builder.emit(rx.TupleGetItem(packed, i), v.name_hint))
                    i += 1
                effect.set_state(new_state)
            return [packed]
        raise ValueError(f"Invalid effect_mode: {mode}")

    def _detuple(arg, var):
        if isinstance(arg, _spec.Tuple):
            out = []
            for i, elem in enumerate(arg.elements):
                field = builder.emit(rx.TupleGetItem(var, i), f"{arg.name}_{i}")
                out.append(_detuple(elem, field))
            return type(arg.elements)(out)
        if isinstance(arg, core.Tensor):
            return core.Tensor(_expr=var)
        if isinstance(arg, TirVar):
            return arg
        raise TypeError(f"Unsupported input type: {type(arg).__name__}")

    explicit_inputs = _method_inputs()
    inputs = [_convert_input(x) for x in explicit_inputs]
    inputs += _effect_inputs(spec.effect_mode)
    inputs += _param_inputs(spec.param_mode)
    for i, (arg, var) in enumerate(zip(explicit_inputs, inputs)):
        if isinstance(arg, _spec.Tuple):
            explicit_inputs[i] = _detuple(arg, var)

    outputs = spec.method(**dict(zip(spec.arg_names, explicit_inputs)))
    effect_outputs = []
    for _, effect in effects:
        effect_outputs.extend(effect.finalize())
    if effect_outputs and spec.effect_mode != "none":
        ret = rx.Tuple([_unwrap_ret(outputs), rx.Tuple(effect_outputs)])
    else:
        ret = _unwrap_ret(outputs)
    return builder.emit_output(ret), inputs
