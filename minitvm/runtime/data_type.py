"""``tvm.runtime.DataType`` / ``DataTypeCode``: a dtype string (``"float32x4"``) as DLPack's
(type code, bits, lanes) triple and back, with TVM's spellings: ``bool`` is 1-bit uint,
``void`` is a 0-bit handle with 0 lanes, ``handle`` is 64 bits, ``float16xvscalex4`` a scalable
vector (stored as negative lanes), ``bfloat16``, ``e4m3_float8`` and ``e5m2_float8``."""

from __future__ import annotations

import numpy as np

__all__ = ["DataType", "DataTypeCode"]


class DataTypeCode:
    """DLPack's type codes (``DLDataTypeCode``) and TVM's extensions."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    BFLOAT = 4
    E4M3Float = 6
    E5M2Float = 7


# longest prefixes first: "uint" before "int", "bfloat" and the float8 kinds before "float"
_PREFIXES = (("e4m3_float", DataTypeCode.E4M3Float), ("e5m2_float", DataTypeCode.E5M2Float),
             ("bfloat", DataTypeCode.BFLOAT), ("handle", DataTypeCode.HANDLE),
             ("float", DataTypeCode.FLOAT), ("uint", DataTypeCode.UINT),
             ("int", DataTypeCode.INT))


class DataType:
    """A dtype as ``type_code``, ``bits`` and ``lanes``; ``str()`` gives TVM's spelling back."""

    __slots__ = ("type_code", "bits", "lanes")

    CODE2STR = {DataTypeCode.INT: "int", DataTypeCode.UINT: "uint",
                DataTypeCode.FLOAT: "float", DataTypeCode.HANDLE: "handle",
                DataTypeCode.BFLOAT: "bfloat", DataTypeCode.E4M3Float: "e4m3_float",
                DataTypeCode.E5M2Float: "e5m2_float"}
    STR2DTYPE = {
        "void": {"type_code": DataTypeCode.HANDLE, "bits": 0, "lanes": 0},
        "bool": {"type_code": DataTypeCode.UINT, "bits": 1, "lanes": 1},
    }

    def __init__(self, type_str):
        if isinstance(type_str, DataType):
            self.type_code, self.bits, self.lanes = type_str.type_code, type_str.bits, \
                type_str.lanes
            return
        if isinstance(type_str, np.dtype) or (isinstance(type_str, type)
                                              and issubclass(type_str, np.generic)):
            type_str = "bool" if np.dtype(type_str) == np.bool_ else str(np.dtype(type_str))
        if not isinstance(type_str, str):
            raise TypeError(f"DataType takes a dtype string or numpy dtype, got "
                            f"{type(type_str).__name__}")
        fixed = DataType.STR2DTYPE.get(type_str)
        if fixed is not None:
            self.type_code, self.bits, self.lanes = (fixed["type_code"], fixed["bits"],
                                                     fixed["lanes"])
            return
        parts = type_str.split("x")
        head = parts[0]
        if len(parts) == 3:
            if parts[1] != "vscale":
                raise ValueError(f"Invalid data type {type_str!r}: expected 'vscale' but got "
                                 f"{parts[1]!r}")
            lanes = -int(parts[2])
        elif len(parts) == 2:
            lanes = int(parts[1])
        elif len(parts) == 1:
            lanes = 1
        else:
            raise ValueError(f"Do not know how to handle type {type_str}")
        match = next(((p, c) for p, c in _PREFIXES if head.startswith(p)), None)
        if match is None:
            raise ValueError(f"Do not know how to handle type {type_str}")
        rest, code = head[len(match[0]):], match[1]
        if code == DataTypeCode.HANDLE:
            bits = 64
        elif rest:
            if not rest.isdigit():
                raise ValueError(f"Do not know how to handle type {type_str}")
            bits = int(rest)
        else:
            bits = 32
        self.type_code, self.bits, self.lanes = code, bits, lanes

    def __str__(self) -> str:
        if self.bits == 0 and self.lanes == 0:
            return "void"
        if self.bits == 1 and self.lanes == 1:
            return "bool"
        text = f"{DataType.CODE2STR.get(self.type_code, f'custom[{self.type_code}]')}{self.bits}"
        if self.lanes > 1:
            text += f"x{self.lanes}"
        elif self.lanes < -1:
            text += f"xvscalex{-self.lanes}"
        return text

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        if isinstance(other, str | np.dtype):
            try:
                other = DataType(other)
            except (TypeError, ValueError):
                return False
        if not isinstance(other, DataType):
            return NotImplemented
        return (self.type_code, self.bits, self.lanes) == (other.type_code, other.bits,
                                                           other.lanes)

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self.type_code, self.bits, self.lanes))

    def itemsize(self) -> int:
        """Bytes of one element (of the whole vector when ``lanes`` > 1)."""
        if self.lanes < 0:
            raise ValueError("Cannot determine itemsize for scalable vector types")
        return (self.bits * self.lanes + 7) // 8
