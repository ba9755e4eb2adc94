"""Relax struct info in TVMScript (``R.Tensor((n, 4), dtype="float32")``, ``R.Shape``,
``R.Tuple``, ``R.Callable``, ...); methods of the printer, mixed into ``RelaxPrinter``."""

from __future__ import annotations

import functools

from ...ir.prim_expr import IntImm
from ...relax import expr as rx
from ...relax import struct_info as si
from . import doc as D
from .prim import _int


@functools.lru_cache(maxsize=1024)
def _static_tensor_text(tensor: str, dtype: str, dims: tuple) -> str:
    """``R.Tensor((4, 8), dtype="float32")`` of constant ``dims`` ((value, dtype) pairs)."""
    shape = D.tuple_text([_int(IntImm(t, v)) for v, t in dims])
    kwargs = [("dtype", D.quote(dtype))] if dtype != "void" else []
    return D.call_text(tensor, [shape], kwargs)


class StructInfoPrinter:
    """Handlers of struct info; dimensions print through ``shape_var`` (quoted in signatures)."""

    def tensor_sinfo(self, s, shape_doc=None):
        shape = s.shape
        if shape_doc is None and s.vdevice is None and type(shape) is rx.ShapeExpr and \
                all(type(v) is IntImm for v in shape.values):
            # a static shape (most tensors of a large program): the text by value, cached
            return _static_tensor_text(self.R("Tensor"), s.dtype,
                                       tuple((v.value, v.dtype) for v in shape.values))
        if shape is not None and shape_doc is None:
            if not isinstance(shape, rx.ShapeExpr):
                return self._tensor_sinfo_shape_var(s)
            shape_doc = D.tuple_text([self.shape_var(v) for v in shape.values])
        args = [shape_doc] if shape_doc is not None else []
        kwargs = []
        if s.dtype != "void":
            kwargs.append(("dtype", D.quote(s.dtype)))
        if shape is None and s.ndim != -1:
            kwargs.append(("ndim", str(s.ndim)))
        vdev = self.vdevice_text(s.vdevice)
        if vdev is not None:
            kwargs.append(("vdevice", D.quote(vdev)))
        if not args and not kwargs:
            return self.R("Tensor")
        return D.call_text(self.R("Tensor"), args, kwargs)

    def vdevice_text(self, vdev) -> str | None:
        """``"kind:index"``: the device's position among the module's global-info vdevices of
        the same target kind (TVM's text; -1 when the module does not declare it)."""
        kind = getattr(getattr(getattr(vdev, "target", None), "kind", None), "name", None)
        if kind is None:
            return None
        devices = self.global_infos.get("vdevice", ()) if self.global_infos else ()
        same = [d for d in devices
                if getattr(getattr(d.target, "kind", None), "name", None) == kind]
        index = next((k for k, d in enumerate(same) if d is vdev), -1)
        if index < 0:  # an equal device declared in the module (a rebuilt one) names it too
            index = next((k for k, d in enumerate(same) if d == vdev), -1)
        return f"{kind}:{index}"

    def vdevice(self, v):
        """``I.vdevice({target config}, id, "scope")`` in ``I.module_global_infos``."""
        if v.target is None:
            return D.call_text(self.I("vdevice"), [])
        config = dict(v.target.export())
        config.setdefault("tag", "")  # TVM's exported targets always carry their tag
        spec = yield ("value", config)
        return D.call_text(self.I("vdevice"),
                           [spec, str(v.vdevice_id), D.quote(v.memory_scope)])

    def _tensor_sinfo_shape_var(self, s):
        return self.tensor_sinfo(s, (yield s.shape))

    def func_sinfo(self, s):
        ret = yield s.ret
        if s.params is None:
            kwargs = []
            if not isinstance(s.ret, si.ObjectStructInfo):
                kwargs.append(("ret", ret))
            if s.purity:
                kwargs.append(("purity", "True"))
            return D.call_text(self.R("Callable"), (), kwargs) if kwargs else self.R("Callable")
        params = []
        for p in s.params:
            params.append((yield p))
        return D.call_text(self.R("Callable"),
                           [D.tuple_text(params), ret, "True" if s.purity else "False"])

    def tuple_sinfo(self, s):
        if not s.fields:
            return self.R("Tuple")
        docs = []
        for x in s.fields:
            docs.append((yield x))
        return D.call_text(self.R("Tuple"), docs)


    def object_sinfo(self, s):
        return self.R("Object")

    def prim_sinfo(self, s):
        if s.value is not None:
            return D.call_text(self.R("Prim"), (), [("value", self.shape_var(s.value))])
        return D.call_text(self.R("Prim"), [D.quote(s.dtype)])

    def shape_sinfo(self, s):
        if s.values is not None:
            dims = [self.shape_var(v) for v in s.values]
            return D.call_text(self.R("Shape"), [D.list_text(dims)])
        return D.call_text(self.R("Shape"), (), [("ndim", str(s.ndim))])
