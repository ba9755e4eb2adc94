"""GraphExecutorCodegen: the optimized ``main`` to TVM's graph JSON plus lowered kernels.

Two stages over ``main`` (after FuseOps), each one walk in dataflow order without recursion:
first every primitive function called is lowered to a kernel (identical functions share one),
then the graph is emitted: parameters become input nodes, constants parameter nodes ``p0, p1,
...`` (their values go to ``params``), each kernel call a ``tvm_op`` node. Functions that only
reshape their input become ``__nop`` views of it. ``graph_json`` then plans memory. A ``let``
names its value's nodes (as TVM's graph codegen), so let-bound dataflow programs build too.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future, ThreadPoolExecutor

from ...backend.memory_plan import plan_memory
from ...ir.attrs import DictAttrs
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from ...ir.type import TensorType
from ...schedule import LoweringOptions
from ...topi.utils import static_shape
from ..analysis.canonical_key import canonical_key
from ..expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var
from ..expr_functor import dataflow_children, dataflow_post_order
from .te_compiler import _static, func_ops, lower_function, prefetch_kernels, tensor_types

RESHAPE_OPS = frozenset({"reshape", "squeeze", "expand_dims", "nn.batch_flatten", "reshape_like",
                         "contrib_reverse_reshape"})


# threads transforming weights beside the emit walk (``GraphCodegen._start_packs``)
PACK_THREADS = min(2, os.cpu_count() or 1)


class GraphCodegenError(ValueError):
    """``main`` cannot run on the graph executor (control flow, closures, dynamic shapes)."""


def _is_primitive(f) -> bool:
    return isinstance(f, Function) and f.attrs is not None and bool(f.attrs.get("Primitive", 0))


def _is_reshape_only(func: Function) -> bool:
    """Does ``func`` only reshape its single input (so its output can alias the input)?"""
    if len(func.params) != 1:
        return False
    e = func.body
    while isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in RESHAPE_OPS:
        e = e.args[0]
    return e is func.params[0] and isinstance(func.body, Call)


def _concat_axis(func: Function) -> int | None:
    """The axis when ``func`` only concatenates its parameters, each once and in order (the
    memory plan may then have their producers write into the output), else None."""
    e = func.body
    if not (isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "concatenate"
            and isinstance(e.args[0], Tuple)):
        return None
    fields = e.args[0].fields
    if len(fields) != len(func.params) or any(f is not p for f, p in zip(fields, func.params)):
        return None
    return int(e.attrs.axis) % len(_static(e.checked_type))


def _wrap_op_call(call: Call) -> Function:
    """A bare op call (no FuseOps) as a primitive function of fresh parameters."""
    params, args = [], []
    for k, a in enumerate(call.args):
        if isinstance(a, Constant):
            args.append(a)
            continue
        v = Var(f"p{k}", a.checked_type)
        v._checked_type = a.checked_type
        params.append(v)
        args.append(v)
    body = Call(call.op, args, call.attrs, call.type_args)
    body._checked_type = call.checked_type
    return Function(params, body, call.checked_type, attrs=DictAttrs({"Primitive": 1}))


def _transform_key(fn):
    """A weight transform's identity by value: its class and fields (the schedules' transforms
    are small picklable objects), else the object itself."""
    fields = getattr(fn, "__dict__", None)
    if fields is None:
        return fn
    key = (type(fn), tuple(sorted(fields.items())))
    try:
        hash(key)
    except TypeError:
        return fn
    return key


def _function_key(func: Function):
    """A key structurally equal functions share (candidates under it are confirmed by
    structural equality): the ``hash`` label LabelOps gave the function, else its structural
    hash. (Equal functions have equal labels; reading one saves hashing every kernel's function
    a second time.)"""
    label = func.attrs.get("hash") if func.attrs is not None else None
    if isinstance(label, str):
        return ("label", label)
    return structural_hash(func)


def _entry_shape(node: dict, t: TensorType) -> list[int]:
    """The static shape of a graph entry; a shape known only at run time (an output whose size
    depends on the values: NonMaxSuppression, NonZero, Unique) is an error naming the node and
    the executor that runs it."""
    try:
        return list(static_shape(t))
    except ValueError:
        raise GraphCodegenError(
            f"relay.build's graph executor needs static shapes, but node {node.get('name')!r} "
            f"gives {t} (its size depends on the values or a symbolic dim): compile it for the "
            "Relay VM instead (relay.vm.compile, or relay.create_executor('vm', mod=mod))"
        ) from None


class GraphCodegen:
    """Produce ``(graph_json, kernels, params)`` for ``main``."""

    def __init__(self, options: LoweringOptions | None = None):
        self.options = options if options is not None else LoweringOptions()
        self.nodes: list[dict] = []
        self.params: dict = {}
        self._input_names: set[str] = set()
        self.kernels: dict[str, object] = {}  # kernel name -> runtime.Kernel
        self._by_func: dict = {}  # (structural hash, const inputs) -> [(func, kernel name)]
        # (canonical key, const inputs) -> kernel name: equal keys are equal functions, so the
        # 100,000 calls of one small fused function cost no structural comparison each
        self._by_canonical: dict = {}
        self._name_count: dict[str, int] = {}
        self.entries: list[dict] = []  # per node output: shape, dtype
        # (parameter, transform) -> the graph entry of the transformed copy, so a weight read by
        # many calls in one layout is transformed and stored once (an unrolled RNN's
        # recurrent weight: one packed copy, not one per step)
        self._packed: dict[tuple, tuple] = {}
        # (id of a constant, transform key) -> its transform running on a thread
        # (``_start_packs``); parameter name -> id of the constant it holds
        self._pack_futures: dict[tuple, Future] = {}
        self._param_const: dict[str, int] = {}

    # ------------------------------------------------------------------ nodes
    def _add_node(self, node: dict, types: list[TensorType]) -> list[tuple]:
        nid = len(self.nodes)
        node.setdefault("inputs", [])
        self.nodes.append(node)
        out = []
        for k, t in enumerate(types):
            self.entries.append({"node": nid, "index": k, "shape": _entry_shape(node, t),
                                 "dtype": t.dtype})
            out.append((nid, k, 0))
        node["_num_outputs"] = len(types)
        return out

    def _kernel_for(self, func: Function, const_inputs: frozenset = frozenset(),
                    shash: int | None = None):
        """The kernel name of ``func`` (``shash``: its structural hash when known); an equal
        function lowered before shares its kernel: one of the same canonical key (structurally
        equal), else one of the same hash that compares equal."""
        ckey = canonical_key(func)
        if ckey is None:
            return self._kernel_by_hash(func, const_inputs, shash)
        name = self._by_canonical.get((ckey, const_inputs))
        if name is None:  # (the first equal function met: the one the hash buckets return)
            name = self._kernel_by_hash(func, const_inputs, shash)
            self._by_canonical[(ckey, const_inputs)] = name
        return name

    def _kernel_by_hash(self, func: Function, const_inputs: frozenset, shash):
        shash = _function_key(func) if shash is None else shash
        bucket = self._by_func.setdefault((shash, const_inputs), [])
        for f, name in bucket:
            if f is func or structural_equal(f, func):
                return name
        ops = func_ops(func)
        base = "tvmgen_default_fused_" + "_".join(o.replace(".", "_") for o in ops[:6])
        if func.attrs is not None and func.attrs.get("Compiler") is not None:
            compiler = func.attrs.get("Compiler")
            base = str(func.attrs.get("global_symbol") or f"tvmgen_default_{compiler}")
        n = self._name_count.get(base, 0)
        self._name_count[base] = n + 1
        name = base if n == 0 else f"{base}_{n}"
        self.kernels[name] = lower_function(func, name, self.options, const_inputs, shash=shash)
        bucket.append((func, name))
        return name

    @staticmethod
    def _kernel_call(e):
        """(primitive function, its arguments) when call ``e`` runs a kernel, else None."""
        if isinstance(e.op, Op):
            return _wrap_op_call(e), [a for a in e.args if not isinstance(a, Constant)]
        if _is_primitive(e.op):
            return e.op, list(e.args)
        return None

    def lower_kernels(self, order) -> None:
        """Stage 1: lower the primitive function of every kernel call in ``order``.

        A constant argument (a weight; it becomes a graph parameter) is a constant input of the
        kernel, which may then take it in another layout (``Kernel.input_packs``).
        """
        self._call_kernels: dict[int, tuple] = {}
        pending = []  # (call, func, args, const inputs), lowered below after a parallel prefetch
        for e in order:
            if not isinstance(e, Call):
                continue
            found = self._kernel_call(e)
            if found is None:
                continue  # the emit stage says why it cannot run
            func, args = found
            counts = [len(tensor_types(a.checked_type)) for a in args]
            if _is_reshape_only(func) and sum(counts) == 1:
                self._call_kernels[id(e)] = (func, args, None)
                continue
            const, pos = set(), 0
            for a, n in zip(args, counts):
                if isinstance(a, Constant) and n == 1:
                    const.add(pos)
                pos += n
            pending.append((e, func, args, frozenset(const)))
        hashes: dict[int, object] = {}  # id(func) -> its key, computed once per function
        for _, func, _, _ in pending:
            if id(func) not in hashes:
                hashes[id(func)] = _function_key(func)
        prefetch_kernels([(func, const) for _, func, _, const in pending], self.options, hashes)
        for e, func, args, const in pending:
            self._call_kernels[id(e)] = (func, args,
                                         self._kernel_for(func, const, hashes[id(func)]))

    def _repack(self, inputs: list, packs: dict, uses: dict) -> list:
        """Feed kernel inputs ``packs`` (position -> numpy transform) with transformed weights;
        a weight several calls read in one layout is transformed and stored once."""
        inputs = list(inputs)
        for pos, fn in packs.items():
            nid = inputs[pos][0]
            name = self.nodes[nid]["name"]
            key = (name, _transform_key(fn))
            entry = self._packed.get(key)
            if entry is not None:
                inputs[pos] = entry
                continue
            ahead = self._pack_futures.pop((self._param_const.get(name), key[1]), None)
            value = ahead.result() if ahead is not None else fn(self.params[name])
            if uses.get(name, 0) == 1:  # only this call reads it: transform in place
                self.params[name] = value
                for en in self.entries:
                    if en["node"] == nid:
                        en["shape"] = list(value.shape)
                continue
            new = self._param_name()
            self.params[new] = value
            t = TensorType(value.shape, str(value.dtype))
            inputs[pos] = self._packed[key] = self._add_node({"op": "null", "name": new}, [t])[0]
            self._arg_nodes.append(len(self.nodes) - 1)
        return inputs

    def _param_name(self) -> str:
        """A fresh ``p{k}`` for a constant lifted to a parameter, never an input's name."""
        k = len(self.params)
        while f"p{k}" in self.params or f"p{k}" in self._input_names:
            k += 1
        return f"p{k}"

    # ------------------------------------------------------------------ main walk
    def codegen(self, main: Function):
        env: dict[int, list] = {}
        arg_nodes = []
        self._input_names = {p.name_hint for p in main.params}
        for p in main.params:
            t = p.checked_type
            if not isinstance(t, TensorType):
                raise GraphCodegenError(f"parameter {p.name_hint} has type {t}; the graph "
                                        "executor takes tensors only")
            env[id(p)] = self._add_node({"op": "null", "name": p.name_hint}, [t])
            arg_nodes.append(len(self.nodes) - 1)
        self._let_values: dict[int, object] = {}

        def children(e):
            if isinstance(e, Call) and _is_primitive(e.op):
                return e.args
            if type(e) is Let:  # the value's nodes first: the body refers to them by the var
                self._let_values[id(e.var)] = e.value
                return (e.value, e.body)
            return dataflow_children(e)

        order = dataflow_post_order(main.body, children)
        self.lower_kernels(order)
        pool = None
        if any(k is not None and getattr(self.kernels.get(k), "input_packs", None)
               for _, _, k in self._call_kernels.values()):
            pool = ThreadPoolExecutor(PACK_THREADS, thread_name_prefix="minitvm-pack")
        try:
            if pool is not None:
                self._start_packs(order, pool)
            return self._emit(main, order, env, arg_nodes)
        finally:
            if pool is not None:
                for f in self._pack_futures.values():
                    f.cancel()
                self._pack_futures.clear()
                pool.shutdown(wait=True)

    def _start_packs(self, order, pool: ThreadPoolExecutor) -> None:
        """Start every weight transform the emit walk will ask ``_repack`` for on ``pool``:
        numpy's copies release the GIL, so they run beside the walk and each other instead of
        one by one inside it (ResNet-50: 53 transforms, 0.2 CPU s of page faults and strided
        copies, the largest serial step after the kernels are compiled)."""
        for e in order:
            found = self._call_kernels.get(id(e)) if isinstance(e, Call) else None
            if found is None or found[2] is None:
                continue
            _, args, name = found
            packs = self.kernels[name].input_packs
            if not packs:
                continue
            flat = []  # flattened input position -> its argument
            for a in args:
                flat.extend([a] * len(tensor_types(a.checked_type)))
            for pos, fn in packs.items():
                a = flat[pos] if pos < len(flat) else None
                if isinstance(a, Constant):
                    key = (id(a), _transform_key(fn))
                    if key not in self._pack_futures:
                        self._pack_futures[key] = pool.submit(fn, a.data.numpy())

    def _emit(self, main: Function, order, env: dict, arg_nodes: list):
        """Stage 2: the graph's nodes, in ``order``."""
        self._arg_nodes = arg_nodes
        self._const_uses: dict[int, int] = {}
        self._param_uses: dict[str, int] = {}
        for e in order:
            if isinstance(e, Call):
                for a in e.args:
                    if isinstance(a, Constant):
                        self._const_uses[id(a)] = self._const_uses.get(id(a), 0) + 1
        for e in order:
            if id(e) in env:
                continue
            env[id(e)] = self._visit(e, env, arg_nodes)
        heads = env[id(main.body)]
        return heads, arg_nodes

    def _visit(self, e, env, arg_nodes):
        if isinstance(e, Constant):
            name = self._param_name()
            self.params[name] = e.data.numpy()
            self._param_const[name] = id(e)
            self._param_uses[name] = self._const_uses.get(id(e), 0)
            t = TensorType(e.data.numpy().shape, str(e.data.numpy().dtype))
            out = self._add_node({"op": "null", "name": name}, [t])
            arg_nodes.append(len(self.nodes) - 1)
            return out
        if isinstance(e, Tuple):
            return [x for f in e.fields for x in env[id(f)]]
        if isinstance(e, TupleGetItem):
            src = env[id(e.tuple_value)]
            types = e.tuple_value.checked_type.fields
            start = sum(len(tensor_types(t)) for t in types[:e.index])
            return src[start:start + len(tensor_types(types[e.index]))]
        if isinstance(e, Call):
            if id(e) not in self._call_kernels:
                raise GraphCodegenError(
                    f"the graph executor runs calls of primitive functions only, found a call of "
                    f"{type(e.op).__name__}; use the 'vm' or 'debug' executor")
            func, args, name = self._call_kernels[id(e)]
            for a in args:
                if id(a) not in env:
                    env[id(a)] = self._visit(a, env, arg_nodes)
            inputs = [x for a in args for x in env[id(a)]]
            types = tensor_types(e.checked_type)
            if name is None:  # reshape only: a view of its input
                node = {"op": "tvm_op", "name": "reshape_nop", "attrs": {
                    "func_name": "__nop", "num_inputs": "1", "num_outputs": "1",
                    "flatten_data": "0"}, "inputs": [list(x) for x in inputs]}
                return self._add_node(node, types)
            packs = self.kernels[name].input_packs
            if packs:
                inputs = self._repack(inputs, packs, self._param_uses)
            node = {"op": "tvm_op", "name": name, "attrs": {
                "func_name": name, "num_inputs": str(len(inputs)),
                "num_outputs": str(len(types)), "flatten_data": "0"},
                "inputs": [list(x) for x in inputs]}
            axis = _concat_axis(func)
            if axis is not None:
                node["_concat_axis"] = axis
            return self._add_node(node, types)
        if type(e) is Let:
            return env[id(e.body)]
        if isinstance(e, Var):
            value = self._let_values.get(id(e))
            if value is not None and id(value) in env:
                return env[id(value)]
            raise GraphCodegenError(f"free variable %{e.name_hint} in main")
        raise GraphCodegenError(f"the graph executor cannot run {type(e).__name__} "
                                "expressions; use the 'vm' or 'debug' executor")

    # ------------------------------------------------------------------ json
    def graph_json(self, heads, arg_nodes) -> str:
        plan = plan_memory(self.nodes, self.entries, heads, self.kernels)
        for nid in plan["in_place"]:  # producers wrote the parts: no kernel runs
            self.nodes[nid]["attrs"] = {**self.nodes[nid]["attrs"], "func_name": "__concat"}
        row_ptr = [0]
        for n in self.nodes:
            row_ptr.append(row_ptr[-1] + n["_num_outputs"])
        nodes = []
        for n in self.nodes:
            d = {k: v for k, v in n.items() if not k.startswith("_")}
            nodes.append(d)
        graph = {
            "nodes": nodes,
            "arg_nodes": arg_nodes,
            "heads": [list(h) for h in heads],
            "attrs": {
                "storage_id": ["list_int", plan["storage_id"]],
                "shape": ["list_shape", [en["shape"] for en in self.entries]],
                "dltype": ["list_str", [en["dtype"] for en in self.entries]],
                "minitvm_storage_bytes": ["list_int", plan["storage_bytes"]],
                "minitvm_workspace_bytes": ["list_int", [plan["workspace_bytes"]]],
            },
            "node_row_ptr": row_ptr,
        }
        if any(plan["storage_offset"]):
            graph["attrs"]["minitvm_storage_offset"] = ["list_int", plan["storage_offset"]]
        return format_graph_json(graph)


def format_graph_json(graph: dict) -> str:
    """The graph as JSON text, one node and one attribute per line: as readable as an indented
    dump, and each line goes through the C encoder where ``indent=`` takes Python's (a
    100k-node graph is written in 0.3 s, was 1.3 s)."""
    dumps = json.dumps
    parts = []
    for key, value in graph.items():
        if key == "nodes":
            rows, brackets = [dumps(n) for n in value], "[]"
        elif isinstance(value, dict):
            rows, brackets = [f"{dumps(k)}: {dumps(v)}" for k, v in value.items()], "{}"
        else:
            parts.append(f"  {dumps(key)}: {dumps(value)}")
            continue
        inner = "".join(f"\n    {r}," for r in rows)[:-1]  # (no comma after the last row)
        parts.append(f"  {dumps(key)}: {brackets[0]}{inner}\n  {brackets[1]}")
    return "{\n" + ",\n".join(parts) + "\n}"
