"""TVM's pytest helpers: module-level parameters (``dtype = tvm.testing.parameter(...)``),
joint parameter sets, cached fixtures, known-failing targets and ``CompareBeforeAfter``."""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import sys

_COUNTER = itertools.count()


def _pytest():
    import pytest

    return pytest


def parameter(*values, ids=None, by_dict: dict | None = None):
    """A fixture taking each of ``values`` in turn; assign it to the parameter's name at module
    or class level: ``dtype = tvm.testing.parameter("float32", "float16")``. ``by_dict`` maps
    ids to values."""
    if by_dict is not None:
        if values or ids:
            raise TypeError("parameter(): pass either values (and ids) or by_dict, not both")
        ids, values = list(by_dict), list(by_dict.values())
    if not values:
        raise TypeError("parameter() needs at least one value")

    @_pytest().fixture(params=list(values), ids=ids)
    def as_fixture(*_cls, request):
        return request.param

    return as_fixture


def parameters(*value_sets, ids=None):
    """Fixtures that take their values jointly: ``shape, dtype = tvm.testing.parameters(((2,),
    "f"), ((3,), "g"))`` runs each test once per set, not once per combination. Must be called
    at module or class level (the shared fixture is placed next to the returned ones)."""
    if not value_sets:
        raise TypeError("parameters() needs at least one value set")
    width = len(value_sets[0])
    if any(len(v) != width for v in value_sets):
        raise ValueError("parameters(): every value set must have the same length")
    hidden = f"_tvm_testing_parameters_{next(_COUNTER)}"
    pytest = _pytest()

    @pytest.fixture(params=list(value_sets), ids=ids, name=hidden)
    def group(*_cls, request):
        return request.param

    sys._getframe(1).f_locals[hidden] = group

    def member(k):
        def value(**kwargs):
            return kwargs[hidden][k]

        # The member depends on the shared fixture by name, so pytest parametrizes once.
        value.__signature__ = inspect.Signature(
            [inspect.Parameter(hidden, inspect.Parameter.KEYWORD_ONLY)])
        return pytest.fixture(value)

    return tuple(member(k) for k in range(width))


def fixture(func=None, *, cache_return_value: bool = False):
    """``pytest.fixture``; with ``cache_return_value=True`` the function runs once per distinct
    set of argument values and each test gets a deep copy of the result (expensive setup shared
    across parametrizations)."""
    pytest = _pytest()

    def wrap(f):
        if not cache_return_value:
            return pytest.fixture(f)
        cache: dict = {}

        @functools.wraps(f)
        def cached(*args, **kwargs):
            key = repr((args, sorted(kwargs.items())))
            if key not in cache:
                cache[key] = f(*args, **kwargs)
            return copy.deepcopy(cache[key])

        return pytest.fixture(cached)

    return wrap(func) if func is not None else wrap


def known_failing_targets(*targets):
    """Marks a target-parametrized test as expected to fail on ``targets`` (xfail there)."""
    wanted = {str(t).split()[0] for t in targets}

    def decorator(func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            target = kwargs.get("target")
            if target is not None and str(target).split()[0] in wanted:
                _pytest().xfail(f"known failing on target {target}")
            return func(*args, **kwargs)

        return run

    return decorator


class CompareBeforeAfter:
    """Subclass with ``transform`` (a pass), ``before`` and ``expected`` (PrimFuncs, IRModules,
    TVMScript functions written in the class, or an exception type ``expected`` to be raised);
    ``test_compare`` checks ``transform(before)`` against ``expected`` structurally."""

    check_well_formed = True

    @staticmethod
    def _as_module(value):
        from ..ir.module import IRModule
        from ..tir.function import PrimFunc

        if isinstance(value, IRModule):
            return value
        if isinstance(value, PrimFunc):
            return IRModule({"main": value})
        if callable(value):
            from ..script import from_source

            source = inspect.getsource(value)
            parsed = from_source(_dedent_def(source))
            return CompareBeforeAfter._as_module(parsed)
        raise TypeError(f"CompareBeforeAfter: cannot use a {type(value).__name__} as a program")

    def _value(self, name):
        attr = inspect.getattr_static(type(self), name, None)
        if attr is None:
            raise AttributeError(f"{type(self).__name__} must define {name!r}")
        value = getattr(self, name)
        if isinstance(attr, staticmethod | classmethod) or not callable(value):
            return value
        if getattr(value, "__self__", None) is self:
            # A TVMScript function written in the class, or a method building the program.
            return value.__func__ if _script_like(value.__func__) else value()
        return value

    def test_compare(self):
        from ..ir.structural import assert_structural_equal

        transform = self._value("transform")
        before = self._as_module(self._value("before"))
        expected = self._value("expected")
        if isinstance(expected, type) and issubclass(expected, Exception):
            with _pytest().raises(expected):
                transform(before)
            return
        after = transform(before)
        assert_structural_equal(after, self._as_module(expected), map_free_vars=True)


def _script_like(func) -> bool:
    """A TVMScript function written inside a class (no ``self`` parameter)."""
    params = list(inspect.signature(func).parameters)
    return not params or params[0] != "self"


def _dedent_def(source: str) -> str:
    import textwrap

    text = textwrap.dedent(source)
    lines = text.splitlines()
    if not any(line.startswith("@") for line in lines[:1]):
        lines.insert(0, "@T.prim_func")
    return "\n".join(lines) + "\n"
