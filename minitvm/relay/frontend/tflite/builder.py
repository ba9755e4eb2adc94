"""A small TFLite flatbuffer writer (tests and examples build models with it; TensorFlow is not
a dependency). Uses the ``tflite`` package's generated builder functions.

    b = ModelBuilder()
    x = b.input("x", (1, 8, 8, 3))
    w = b.constant("w", weights)                     # a tensor with a data buffer
    y = b.tensor("y", (1, 8, 8, 4))
    b.operator("CONV_2D", [x, w, bias], [y], "Conv2DOptions",
               Padding=0, StrideH=1, StrideW=1, DilationHFactor=1, DilationWFactor=1)
    b.output(y)
    data = b.finish()                                # bytes of a .tflite file

A dynamic batch is written as TFLite's converter writes it: the stored shape at batch 1 and
``signature=(-1, ...)`` (the tensor's ``shape_signature``), e.g. ``b.input("x", (1, 8),
signature=(-1, 8))``.

A custom operator is named ``"CUSTOM:<code>"`` and takes its flexbuffer options as
``custom_options`` (bytes).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ModelBuilder"]

_TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6,
          "int16": 7, "int8": 9, "float64": 10}


class ModelBuilder:
    """Collects tensors, buffers and operators of one subgraph; ``finish()`` serializes."""

    def __init__(self):
        self.tensors: list[tuple] = []  # (name, shape, dtype, buffer index)
        self.quant: dict[int, tuple] = {}  # tensor -> (scales, zero points, quantized dim)
        self.signatures: dict[int, tuple] = {}  # tensor -> shape_signature (-1: dynamic)
        self.buffers: list[bytes] = [b""]  # buffer 0 is the empty buffer, by convention
        # (opcode index, inputs, outputs, options name, fields, custom options)
        self.ops: list[tuple] = []
        self.opcodes: list[str] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.children: list[ModelBuilder] = []  # further subgraphs (control-flow bodies)

    def tensor(self, name: str, shape, dtype: str = "float32", data=None, quant=None,
               signature=None) -> int:
        """A tensor; ``quant=(scale(s), zero point(s)[, axis])`` marks it quantized;
        ``signature``: its ``shape_signature`` (the shape, -1 for a dynamic dim)."""
        buf = 0
        if data is not None:
            arr = np.ascontiguousarray(np.asarray(data, dtype=dtype))
            self.buffers.append(arr.tobytes())
            buf = len(self.buffers) - 1
        self.tensors.append((name, tuple(int(d) for d in shape), dtype, buf))
        if quant is not None:
            self.quant[len(self.tensors) - 1] = (np.atleast_1d(quant[0]).astype("float32"),
                                                 np.atleast_1d(quant[1]).astype("int64"),
                                                 int(quant[2]) if len(quant) > 2 else 0)
        if signature is not None:
            signature = tuple(int(d) for d in signature)
            if len(signature) != len(shape) or any(
                    g not in (-1, d) for g, d in zip(signature, self.tensors[-1][1])):
                raise ValueError(f"tensor {name!r}: signature {signature} does not match its "
                                 f"shape {tuple(shape)} (each dim the same or -1)")
            self.signatures[len(self.tensors) - 1] = signature
        return len(self.tensors) - 1

    def constant(self, name: str, data, dtype: str | None = None, quant=None) -> int:
        arr = np.asarray(data, dtype=dtype or np.asarray(data).dtype)
        return self.tensor(name, arr.shape, str(arr.dtype), arr, quant=quant)

    def input(self, name: str, shape, dtype: str = "float32", quant=None,
              signature=None) -> int:
        t = self.tensor(name, shape, dtype, quant=quant, signature=signature)
        self.inputs.append(t)
        return t

    def output(self, t: int) -> None:
        self.outputs.append(t)

    def operator(self, op: str, inputs, outputs, options: str | None = None,
                 custom_options: bytes | None = None, **fields) -> None:
        if op not in self.opcodes:
            self.opcodes.append(op)
        self.ops.append((self.opcodes.index(op), list(inputs), list(outputs), options, fields,
                         custom_options))

    def add_subgraph(self) -> ModelBuilder:
        """Another subgraph of the same model (shares buffers and operator codes)."""
        child = ModelBuilder()
        child.buffers, child.opcodes = self.buffers, self.opcodes
        self.children.append(child)
        return child

    # ------------------------------------------------------------------ serialization
    def finish(self) -> bytes:
        import flatbuffers
        import tflite

        b = flatbuffers.Builder(1024)

        def ivec(values):
            return b.CreateNumpyVector(np.asarray(values, dtype=np.int32))

        def table_vec(start, offsets):
            start(b, len(offsets))
            for off in reversed(offsets):
                b.PrependUOffsetTRelative(off)
            return b.EndVector()

        buffers = []
        for data in self.buffers:
            vec = b.CreateNumpyVector(np.frombuffer(data, np.uint8)) if data else None
            tflite.BufferStart(b)
            if vec is not None:
                tflite.BufferAddData(b, vec)
            buffers.append(tflite.BufferEnd(b))
        subgraphs = []
        for k, sg in enumerate([self, *self.children]):
            tensors = []
            for t, (name, shape, dtype, buf) in enumerate(sg.tensors):
                q = None
                if t in sg.quant:
                    scale, zp, dim = sg.quant[t]
                    sv, zv = b.CreateNumpyVector(scale), b.CreateNumpyVector(zp)
                    tflite.QuantizationParametersStart(b)
                    tflite.QuantizationParametersAddScale(b, sv)
                    tflite.QuantizationParametersAddZeroPoint(b, zv)
                    tflite.QuantizationParametersAddQuantizedDimension(b, dim)
                    q = tflite.QuantizationParametersEnd(b)
                nm, sh = b.CreateString(name), ivec(shape)
                sig = ivec(sg.signatures[t]) if t in sg.signatures else None
                tflite.TensorStart(b)
                if sig is not None:
                    tflite.TensorAddShapeSignature(b, sig)
                if q is not None:
                    tflite.TensorAddQuantization(b, q)
                tflite.TensorAddShape(b, sh)
                tflite.TensorAddType(b, _TYPES[dtype])
                tflite.TensorAddBuffer(b, buf)
                tflite.TensorAddName(b, nm)
                tensors.append(tflite.TensorEnd(b))
            ops = []
            for code, ins, outs, options, fields, custom in sg.ops:
                vectors = {}
                for k, v in fields.items():  # vector fields (e.g. NewShape) first
                    if isinstance(v, list | tuple | np.ndarray):
                        vectors[k] = ivec(v)
                opt = None
                if options is not None:
                    getattr(tflite, f"{options}Start")(b)
                    for k, v in fields.items():
                        getattr(tflite, f"{options}Add{k}")(b, vectors.get(k, v))
                    opt = getattr(tflite, f"{options}End")(b)
                iv, ov = ivec(ins), ivec(outs)
                cv = b.CreateNumpyVector(np.frombuffer(bytes(custom), np.uint8)) \
                    if custom is not None else None
                tflite.OperatorStart(b)
                tflite.OperatorAddOpcodeIndex(b, code)
                tflite.OperatorAddInputs(b, iv)
                tflite.OperatorAddOutputs(b, ov)
                if cv is not None:
                    tflite.OperatorAddCustomOptions(b, cv)
                if opt is not None:
                    tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, options))
                    tflite.OperatorAddBuiltinOptions(b, opt)
                ops.append(tflite.OperatorEnd(b))
            tv = table_vec(tflite.SubGraphStartTensorsVector, tensors)
            opv = table_vec(tflite.SubGraphStartOperatorsVector, ops)
            iv, ov = ivec(sg.inputs), ivec(sg.outputs)
            name = b.CreateString("main" if k == 0 else f"subgraph{k}")
            tflite.SubGraphStart(b)
            tflite.SubGraphAddTensors(b, tv)
            tflite.SubGraphAddInputs(b, iv)
            tflite.SubGraphAddOutputs(b, ov)
            tflite.SubGraphAddOperators(b, opv)
            tflite.SubGraphAddName(b, name)
            subgraphs.append(tflite.SubGraphEnd(b))
        codes = []
        for op in self.opcodes:
            custom_code = b.CreateString(op[7:]) if op.startswith("CUSTOM:") else None
            builtin = tflite.BuiltinOperator.CUSTOM if custom_code is not None else \
                getattr(tflite.BuiltinOperator, op)
            tflite.OperatorCodeStart(b)
            if custom_code is not None:
                tflite.OperatorCodeAddCustomCode(b, custom_code)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(builtin, 127))
            tflite.OperatorCodeAddBuiltinCode(b, builtin)
            tflite.OperatorCodeAddVersion(b, 1)
            codes.append(tflite.OperatorCodeEnd(b))
        cv = table_vec(tflite.ModelStartOperatorCodesVector, codes)
        sv = table_vec(tflite.ModelStartSubgraphsVector, subgraphs)
        bv = table_vec(tflite.ModelStartBuffersVector, buffers)
        desc = b.CreateString("written by minitvm.relay.frontend.tflite.builder")
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, cv)
        tflite.ModelAddSubgraphs(b, sv)
        tflite.ModelAddDescription(b, desc)
        tflite.ModelAddBuffers(b, bv)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())
