"""Relax struct info in TVMScript (``R.Tensor((n, 4), dtype="float32")``, ``R.Shape``,
``R.Tuple``, ``R.Callable``, ...); methods of the printer, mixed into ``RelaxPrinter``."""

from __future__ import annotations

from ...relax import expr as rx
from ...relax import struct_info as si
from . import doc as D


class StructInfoPrinter:
    """Handlers of struct info; dimensions print through ``shape_var`` (quoted in signatures)."""

    def tensor_sinfo(self, s, shape_doc=None):
        shape = s.shape
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
        vdev = _vdevice_text(s.vdevice)
        if vdev is not None:
            kwargs.append(("vdevice", D.quote(vdev)))
        if not args and not kwargs:
            return self.R("Tensor")
        return D.call_text(self.R("Tensor"), args, kwargs)

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



def _vdevice_text(vdev):
    if vdev is None:
        return None
    target = getattr(vdev, "target", None)
    kind = getattr(getattr(target, "kind", None), "name", None)
    if kind is None:
        return None
    return f"{kind}:{getattr(vdev, 'vdevice_id', 0)}"
