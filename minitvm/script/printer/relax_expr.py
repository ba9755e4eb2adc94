"""Relax expressions in TVMScript: variables, constants, tuples, calls (``R.call_tir`` and the
other calls TVM prints specially); methods of the printer, mixed into ``RelaxPrinter``."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs, DictAttrs
from ...ir.op import Op
from ...relax import expr as rx
from ...relax import struct_info as si
from ...runtime.ndarray import NDArray
from . import doc as D
from .prim import float_literal

# attrs fields holding a DataType: an unset one prints as "void", as TVM's DataType() does
DTYPE_FIELDS = frozenset({"dtype", "out_dtype"})
CALL_TIR_LIKE = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed",
                           "relax.call_tir_with_grad", "relax.dist.call_tir_local_view"})
SPECIAL_OPS = CALL_TIR_LIKE | {"relax.assert_op", "relax.print", "relax.hint_on_device",
                               "relax.to_vdevice"}
_SCALAR_DTYPES = frozenset({"int8", "int16", "int32", "int64", "float16", "float32", "float64",
                            "bool"})


class ExprPrinter:
    """Handlers of Relax expressions (generators resumed with the docs of what they yield)."""

    def var(self, v):
        ann = "None" if v.struct_info_ is None else (yield v.struct_info_)
        f = self.frames[-1]
        name = self.define_var(v, f)
        f.stmts.append(D.assign(name, None, ann))
        return name

    def prim_value(self, n):
        return D.call_text(self.R("prim_value"), [self.prim(n.value)])

    def shape_expr(self, n):
        return D.call_text(self.R("shape"), [D.list_text([self.shape_var(v) for v in n.values])])

    def constant(self, c):
        arr = c.data.numpy() if isinstance(c.data, NDArray) else np.asarray(c.data)
        dtype = str(arr.dtype)
        if arr.ndim == 0 and dtype in _SCALAR_DTYPES:
            v = arr.item()
            if dtype == "bool":
                lit = "True" if v else "False"
            elif dtype.startswith("int"):
                lit = str(int(v))
            else:
                lit = float_literal(float(v))
            return D.call_text(self.R("const"), [lit, D.quote(dtype)])
        return self.add_metadata(c, "relax.expr.Constant")

    def tuple(self, t):
        if not t.fields:
            return D.call_text(self.R("tuple"))
        docs = []
        for x in t.fields:
            docs.append((yield x))
        return D.tuple_text(docs)

    def tuple_get_item(self, t):
        v = yield t.tuple_value
        return D.cat([v, f"[{t.index}]"])

    def callee(self, e):
        if isinstance(e, rx.ExternFunc):
            return D.quote(e.global_symbol)
        return (yield e)

    def call(self, n):
        op = n.op
        if isinstance(op, Op):
            name = op.name
            if name in CALL_TIR_LIKE and len(n.sinfo_args) == 1 and len(n.args) in (2, 3):
                return (yield from self.call_tir(n))
            if name == "relax.assert_op" and len(n.args) >= 2:
                args = [(yield n.args[0])]
                fmt = yield n.args[1]
                for a in n.args[2:]:
                    args.append((yield a))
                return D.call_text(self.R("assert_op"), args, [("format", fmt)])
            if name == "relax.print" and n.args:
                fmt = yield n.args[0]
                args = []
                for a in n.args[1:]:
                    args.append((yield a))
                return D.call_text(self.R("print"), args, [("format", fmt)])
            if name == "relax.to_vdevice" and n.attrs is not None and len(n.args) == 1:
                x = yield from self.callee(n.args[0])
                dev = self.vdevice_text(n.attrs.dst_vdevice)
                kw = [("dst_vdevice", D.quote(dev))] if dev is not None else []
                return D.call_text(self.R("to_vdevice"), [x], kw)
            if name == "relax.hint_on_device" and n.attrs is not None:
                x = yield from self.callee(n.args[0])
                kw = []
                for k, v in n.attrs.items():
                    kw.append((k, (yield ("attr", k, v))))
                return D.call_text(self.R("hint_on_device"), [x, D.call_text(self.R("device"), (),
                                                                          kw)])
            prefix = self.R(name[6:]) if name.startswith("relax.") else name
            args = []
        elif isinstance(op, rx.ExternFunc):
            prefix = self.R("call_packed")
            args = [D.quote(op.global_symbol)]
        elif isinstance(op, rx.Function):  # a function literal has no expression form
            prefix = self.add_metadata(op, "relax.expr.Function")
            args = []
        else:
            prefix = yield op
            args = []
        for k, a in enumerate(n.args):
            args.append((yield from self.callee(a)) if k == 0 else (yield a))
        kwargs = []
        attrs = n.attrs
        if attrs is not None:
            if isinstance(op, rx.ExternFunc):
                kwargs.append(("attrs_type_key", D.quote(getattr(attrs, "type_key", "DictAttrs"))))
            if isinstance(attrs, DictAttrs):
                items = sorted(attrs.items(), key=lambda kv: kv[0])
            elif isinstance(attrs, Attrs):
                items = attrs.items()
            else:
                items = dict(attrs).items()
            for k, v in items:
                kwargs.append((k, (yield ("attr", k, v))))
        if n.sinfo_args:
            docs = []
            for s in n.sinfo_args:
                docs.append((yield s))
            kwargs.append(("sinfo_args", D.tuple_text(docs)))
        return D.call_text(prefix, args, kwargs)

    def call_tir(self, n):
        name = n.op.name
        args = [(yield from self.callee(n.args[0])), (yield n.args[1])]
        out = n.sinfo_args[0]
        if isinstance(out, si.TupleStructInfo):
            docs = []
            for s in out.fields:
                docs.append((yield s))
            out_doc = D.list_text(docs)
        else:
            out_doc = yield out
        kwargs = [("out_sinfo", out_doc)]
        attrs = n.attrs
        if name == "relax.call_tir_inplace":
            idx = attrs.get("inplace_indices", ()) if attrs is not None else ()
            kwargs.append(("inplace_indices", f"[{', '.join(str(int(i)) for i in idx)}]"))
        if name == "relax.call_tir_with_grad":
            grad_name = attrs.get("te_grad_name", "") if attrs is not None else ""
            kwargs.append(("te_grad_name", D.quote(grad_name)))
            grad_kwargs = attrs.get("te_grad_kwargs", None) if attrs is not None else None
            if grad_kwargs:
                kwargs.append(("te_grad_kwargs", (yield ("value", dict(grad_kwargs)))))
            return D.call_text(self.R("call_tir_with_grad"), args, kwargs)
        if name == "relax.call_dps_packed":
            return D.call_text(self.R("call_dps_packed"), args, kwargs)
        if len(n.args) == 3:
            kwargs.append(("tir_vars", (yield n.args[2])))
        if name == "relax.dist.call_tir_local_view":
            return D.call_text(self.R("dist.call_tir_local_view"), args, kwargs)
        if name == "relax.call_tir_inplace":
            return D.call_text(self.R("call_tir_inplace"), args, kwargs)
        return D.call_text(self.R("call_tir"), args, kwargs)
