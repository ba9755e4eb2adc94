"""AnnotateTarget: mark which external compiler runs each op with compiler_begin/compiler_end.

An op call goes to the first target in ``targets`` whose ``target.<name>`` op attribute (a
predicate registered with ``tvm.ir.register_op_attr``) accepts the call; a call of a composite
function goes to the target its ``Composite`` name starts with (``"dnnl.conv2d_relu"``);
everything else to ``"default"``. Every argument gets ``compiler_begin(arg, target)`` and an
argument produced by an annotated expression first gets that expression's ``compiler_end``.
Tuples, projections and reference nodes follow their inputs' target when
``include_non_call_ops``; otherwise they stay outside every region and their annotated inputs
just end there (TVM's two rewriters). Running the pass again keeps existing annotations.
"""

from __future__ import annotations

import inspect

from ...ir.op import Op
from ...transform.sequential import Sequential
from ..expr import (
    Call,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..expr_functor import ExprMutator
from ..op.annotation import compiler_begin, compiler_end
from ._pass_helpers import make_function_pass, register
from .infer_type import InferType

__all__ = ["AnnotateTarget", "annotate_target"]

DEFAULT = "default"


def _is(e, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _compiler(e) -> str:
    return e.attrs.compiler


_ARITY: dict = {}  # predicate -> its number of parameters (inspect.signature costs 60 us)


def _arity(pred) -> int:
    try:
        n = _ARITY.get(pred)
    except TypeError:  # an unhashable callable: looked up every time
        return _signature_arity(pred)
    if n is None:
        n = _signature_arity(pred)
        if len(_ARITY) >= 256:
            _ARITY.clear()
        _ARITY[pred] = n
    return n


def _signature_arity(pred) -> int:
    try:
        return len(inspect.signature(pred).parameters)
    except (TypeError, ValueError):
        return 1


def _accepts(pred, call: Call) -> bool:
    """Call a ``target.<name>`` predicate: ``pred(expr)`` (TVM >= 0.7) or the older
    ``pred(attrs, args)``; a plain bool is taken as is."""
    if isinstance(pred, bool):
        return pred
    n = _arity(pred)
    return bool(pred(call.attrs, list(call.args)) if n == 2 else pred(call))


class _Annotator(ExprMutator):
    def __init__(self, targets: list[str], include_non_call_ops: bool):
        super().__init__()
        self.targets = targets
        self.include_non_call_ops = include_non_call_ops
        self.target_of: dict[int, str] = {}
        self._keep: list = []  # keep annotated nodes alive while their ids are keys

    def _set(self, e, target: str):
        self.target_of[id(e)] = target
        self._keep.append(e)

    def _annotate_args(self, args, target: str = ""):
        """(target, new args): begins around the args, ends after annotated producers."""
        ref, begins, ends = "", [], []
        for arg in args:
            arg_target = DEFAULT
            if _is(arg, "annotation.compiler_begin"):
                if _compiler(arg) != DEFAULT:
                    begins.append(arg)
                else:
                    ends.append(arg.args[0])
                inner = arg.args[0]
                if _is(inner, "annotation.compiler_end"):
                    arg_target = _compiler(inner)
            elif id(arg) in self.target_of:
                arg_target = self.target_of[id(arg)]
                if isinstance(arg, Call) and not arg.args:
                    ends.append(arg)
                else:
                    ends.append(compiler_end(arg, arg_target))
            else:
                ends.append(arg)
            if ref == "":
                ref = arg_target
            elif ref != arg_target:
                ref = DEFAULT
        op_target = ref if target == "" else target
        if ref == "":
            return op_target, list(args)
        return op_target, begins + [compiler_begin(e, op_target) for e in ends]

    def _end(self, e):
        """``compiler_end`` after an annotated expression (a function or let body, an if's
        parts, a field in call-ops-only mode): the expression's own target; an existing
        default end is re-targeted. Argument-free calls (``zeros``) get none."""
        if self.target_of.get(id(e), "") != "":  # "" = an empty tuple: no region
            if isinstance(e, RefCreate | RefRead | RefWrite | Tuple | TupleGetItem) or (
                    isinstance(e, Call) and e.args):
                target = self.target_of[id(e)]
                e = compiler_end(e, target)
                self._set(e, target)
        elif _is(e, "annotation.compiler_end") and _compiler(e) == DEFAULT:
            inner = e.args[0]
            target = self.target_of.get(id(inner), DEFAULT)
            e = compiler_end(inner, target)
            self._set(e, target)
        return e

    # ------------------------------------------------------------------ hooks
    def visit_call(self, call):
        post = super().visit_call(call)
        op = call.op
        if isinstance(op, Op) and op.name == "annotation.compiler_begin":
            return post  # kept: the op using it decides (a later run)
        if isinstance(op, Op) and op.name == "annotation.compiler_end":
            inner = post.args[0]
            if id(inner) not in self.target_of:
                self._set(inner, _compiler(post))
            return post
        if call.args and _is(call.args[0], "annotation.compiler_begin") and \
                _compiler(call.args[0]) != DEFAULT:
            return post  # annotated by an earlier run
        supported = []
        if isinstance(op, Op):
            for t in self.targets:
                pred = op.get_attr(f"target.{t}")
                if pred is not None and _accepts(pred, call):
                    supported.append(t)
        elif isinstance(op, Function):
            comp = op.get_attr("Composite")
            if comp is not None and "." in str(comp):
                prefix = str(comp).split(".", 1)[0]
                if prefix in self.targets:
                    supported.append(prefix)
        supported.append(DEFAULT)
        if isinstance(op, Var) and not self.include_non_call_ops:
            # a call of a local function: its arguments leave their regions, no new one
            return Call(post.op, [self._end(a) for a in post.args], post.attrs,
                        post.type_args, post.span)
        target, args = self._annotate_args(post.args, supported[0])
        new = Call(post.op, args, post.attrs, post.type_args, post.span)
        self._set(new, target)
        return new

    def _non_call(self, post, parts, rebuild):
        """A tuple, projection or reference node: joins its inputs' region when
        ``include_non_call_ops``; otherwise its inputs just end their regions."""
        if not self.include_non_call_ops:
            return rebuild([self._end(p) for p in parts])
        target, args = self._annotate_args(parts)
        new = rebuild(args)
        self._set(new, target)
        return new

    def visit_tuple(self, tup):
        post = super().visit_tuple(tup)
        return self._non_call(post, post.fields, lambda a: Tuple(a, post.span))

    def visit_tuple_getitem(self, op):
        post = super().visit_tuple_getitem(op)
        return self._non_call(post, [post.tuple_value],
                              lambda a: TupleGetItem(a[0], post.index, post.span))

    def visit_ref_create(self, ref):
        post = super().visit_ref_create(ref)
        return self._non_call(post, [post.value], lambda a: RefCreate(a[0], post.span))

    def visit_ref_read(self, ref):
        post = super().visit_ref_read(ref)
        return self._non_call(post, [post.ref], lambda a: RefRead(a[0], post.span))

    def visit_ref_write(self, ref):
        post = super().visit_ref_write(ref)
        return self._non_call(post, [post.ref, post.value],
                              lambda a: RefWrite(a[0], a[1], post.span))

    def visit_function(self, fn):
        if fn.get_attr("Composite") is not None:
            return fn  # never step into composite functions
        post = super().visit_function(fn)
        body = self._end(post.body)
        return Function(post.params, body, post.ret_type, post.type_params, post.attrs, post.span)

    def visit_let(self, let):
        post = super().visit_let(let)
        body = self._end(post.body)
        if isinstance(post.value, Function):
            return Let(post.var, post.value, body, post.span)
        _, (value,) = self._annotate_args([post.value])
        return Let(post.var, value, body, post.span)

    def visit_if(self, ite):
        post = super().visit_if(ite)
        return If(self._end(post.cond), self._end(post.true_branch),
                  self._end(post.false_branch), post.span)


def annotate_target(func: Function, targets, include_non_call_ops: bool = True) -> Function:
    """``func`` with every op annotated for the first target that supports it."""
    return _Annotator(_targets(targets), include_non_call_ops).visit(func)


def _targets(targets) -> list[str]:
    if isinstance(targets, str):
        return [targets]
    out = []
    for t in targets:
        name = getattr(getattr(t, "kind", None), "name", None) or str(t)
        if not name:
            raise ValueError("AnnotateTarget: an empty target name")
        out.append(name)
    if not out:
        raise ValueError("AnnotateTarget: no targets given")
    return out


@register("AnnotateTarget")
def AnnotateTarget(targets, include_non_call_ops: bool = True):  # noqa: N802 - TVM's name
    """Annotate ops with compiler_begin/compiler_end for the external compilers ``targets``.

    Parameters
    ----------
    targets : str or list of str
        The external compilers, in priority order (``"dnnl"``, ``["dnnl", "xyzlib"]``).
    include_non_call_ops : bool
        Let tuples and tuple projections join their fields' region (else they stay on the
        default target).
    """
    names = _targets(targets)

    def run(func, mod, ctx):
        return _Annotator(names, include_non_call_ops).visit(func)

    # TVM: Sequential([AnnotateTargetFunc (requires InferType), InferType]); a Sequential there
    # runs a pass's required passes first, so the op predicates see checked types
    func_pass = make_function_pass(run, opt_level=0, name="AnnotateTargetFunc",
                                   required=["InferType"])
    return Sequential([InferType(), func_pass, InferType()], opt_level=0, name="AnnotateTarget")
