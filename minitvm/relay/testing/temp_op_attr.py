"""``TempOpAttr``: set an op attribute for the duration of a ``with`` block (tests override
FTVMLegalize, FTVMConvertOpLayout... this way), restoring what was there before."""

from __future__ import annotations

from ...ir.op import Op


class TempOpAttr:
    """``with TempOpAttr("nn.conv2d", "FTVMLegalize", fn): ...`` registers ``fn`` as the op's
    attribute inside the block (above any registered level) and restores the old value after."""

    _LEVEL = 1 << 20

    def __init__(self, op_name: str, attr_key: str, attr_value):
        self.op = Op.get(op_name)
        self.attr_key = attr_key
        self.attr_value = attr_value
        self._saved = None

    def __enter__(self):
        self._saved = self.op._attrs.get(self.attr_key)
        self.op.reset_attr(self.attr_key)
        self.op.set_attr(self.attr_key, self.attr_value, self._LEVEL)
        return self

    def __exit__(self, *exc):
        self.op.reset_attr(self.attr_key)
        if self._saved is not None:
            self.op._attrs[self.attr_key] = self._saved
