"""What an ATen -> Relax converter works with: the BlockBuilder, scalars, symbolic sizes.

torch.export's symbolic sizes (sympy expressions over ``s0, s1...``) become ``tir`` int64
expressions over one variable per symbol, so a dynamic ``Dim`` stays symbolic in Relax."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....ir.prim_expr import IntImm, PrimExpr
from ....runtime import error as _error
from ....tir import Var as TirVar
from ... import op as _op
from ...expr import Call, Expr, ShapeExpr, const
from ...struct_info import TensorStructInfo

__all__ = ["ATEN", "register", "AtenContext", "TorchImportError", "OpNotImplemented",
           "torch_dtype"]

# ATen op name ("conv2d" / "add.Tensor" / "add") -> converter(ctx, args) -> value
ATEN: dict[str, Callable] = {}


class TorchImportError(ValueError):
    """The exported program cannot be imported (malformed, or a node a converter rejects)."""


class OpNotImplemented(_error.OpNotImplemented):
    """The program uses ATen operators this importer does not convert (all listed at once)."""


def register(*names: str):
    """Register a converter under ATen names (``"add.Tensor"`` or a whole packet ``"add"``)."""

    def deco(fn):
        for name in names:
            ATEN[name] = fn
        return fn

    return deco


# (the wider unsigned types appear without the user asking: torch's decomposition of
# ``aten.eye`` builds its two aranges in the narrowest unsigned type that holds n, uint16 from
# n = 256 on, uint32 from 65536)
_DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "int64": "int64", "long": "int64",
    "int32": "int32", "int": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
}


def torch_dtype(dt) -> str:
    """The dtype name of a ``torch.dtype``."""
    name = str(dt).replace("torch.", "")
    if name not in _DTYPES:
        raise TorchImportError(f"torch dtype {dt} is not supported")
    return _DTYPES[name]


class AtenContext:
    """Converter state: the BlockBuilder, the node being converted, sympy -> tir symbols."""

    def __init__(self, bb):
        self.bb = bb
        self.node = None
        self.symbols: dict[str, TirVar] = {}
        self.analyzer = bb.get_analyzer()

    def fail(self, detail: str) -> TorchImportError:
        where = f"{self.node.target} (node {self.node.name})" if self.node is not None else "?"
        return TorchImportError(f"{where}: {detail}")

    def emit(self, e: Expr) -> Expr:
        """Bind a call; nested call arguments are bound first (as TVM's normalizer does)."""
        if isinstance(e, Call):
            args = [self.emit(a) if isinstance(a, Call) else a for a in e.args]
            if any(a is not b for a, b in zip(args, e.args, strict=True)):
                e = Call(e.op, args, e.attrs, e.sinfo_args)
        return self.bb.emit(e)

    # -- symbolic sizes ----------------------------------------------------------------------
    def sym(self, e):
        """A sympy / SymInt size as an int or a ``tir`` expression (one already converted,
        e.g. a ``sym_size`` node's value times a constant, is kept)."""
        import sympy

        if isinstance(e, int | np.integer):
            return int(e)
        if isinstance(e, PrimExpr):
            return self.simplify(e)
        node = getattr(e, "node", None)
        if node is not None and hasattr(node, "expr"):  # torch.SymInt
            e = node.expr
        if isinstance(e, sympy.Integer):
            return int(e)
        if isinstance(e, sympy.Symbol):
            name = str(e)
            if name not in self.symbols:
                self.symbols[name] = TirVar(name, "int64")
            return self.symbols[name]
        args = [self.sym(a) for a in e.args]
        kind = type(e).__name__
        if isinstance(e, sympy.Add):
            out = args[0]
            for a in args[1:]:
                out = out + a
        elif isinstance(e, sympy.Mul):
            out = args[0]
            for a in args[1:]:
                out = out * a
        elif kind in ("FloorDiv", "floor_divide"):
            out = args[0] // args[1]
        elif kind in ("Mod", "PythonMod"):
            out = args[0] % args[1]
        else:
            raise self.fail(f"symbolic size {e} ({kind}) is not supported")
        return self.simplify(out)

    def simplify(self, e):
        if isinstance(e, PrimExpr):
            e = self.analyzer.simplify(e)
            return int(e.value) if isinstance(e, IntImm) else e
        return e

    # -- tensors -----------------------------------------------------------------------------
    def sinfo(self, x) -> TensorStructInfo:
        s = x.struct_info
        if not isinstance(s, TensorStructInfo):
            raise self.fail(f"expected a tensor, got {s}")
        return s

    def shape(self, x) -> list:
        s = self.sinfo(x)
        dims = s.shape.values if isinstance(s.shape, ShapeExpr) else None
        if dims is None:
            raise self.fail("an input's shape is unknown")
        return [int(d.value) if isinstance(d, IntImm) else d for d in dims]

    def ndim(self, x) -> int:
        return self.sinfo(x).ndim

    def dtype(self, x) -> str:
        return str(self.sinfo(x).dtype)

    def tensor(self, v, like=None) -> Expr:
        """A Relax expression for a tensor argument, or a scalar in ``like``'s dtype."""
        if isinstance(v, Expr):
            return v
        if isinstance(v, bool | int | float):
            dtype = self.dtype(like) if like is not None else (
                "float32" if isinstance(v, float) else "int64")
            # (the dtype named: ``const`` narrows an unnamed float64 array to float32)
            return const(np.array(v, dtype=dtype), dtype)
        if isinstance(v, PrimExpr):
            t = self.emit(_op.shape_to_tensor(ShapeExpr([v])))
            return self.emit(_op.reshape(t, ShapeExpr([])))
        raise self.fail(f"expected a tensor, got {type(v).__name__}")

    def shape_expr(self, dims) -> ShapeExpr:
        return ShapeExpr([d if isinstance(d, PrimExpr) else IntImm("int64", int(d))
                          for d in dims])
