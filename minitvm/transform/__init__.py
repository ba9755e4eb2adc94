"""tvm.transform: the pass infrastructure (skeleton; the full version replaces this file)."""

from __future__ import annotations

import functools


class PassInfo:
    def __init__(self, opt_level, name, required=None, traceable=False):
        self.opt_level = opt_level
        self.name = name
        self.required = list(required or [])
        self.traceable = traceable


class PassContext:
    _stack: list = []

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None,
                 config=None, **_):
        self.opt_level = opt_level
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.instruments = list(instruments or [])
        self.config = dict(config or {})

    @staticmethod
    def current():
        return PassContext._stack[-1] if PassContext._stack else PassContext()

    def __enter__(self):
        PassContext._stack.append(self)
        return self

    def __exit__(self, *a):
        PassContext._stack.pop()


class Pass:
    def __init__(self, pass_func, info):
        self.pass_func = pass_func
        self.info = info

    def __call__(self, mod, ctx=None):
        return self.pass_func(mod, ctx or PassContext.current())


class ModulePass(Pass):
    def __call__(self, mod, ctx=None):
        return self.pass_func(mod.shallow_copy(), ctx or PassContext.current())


class Sequential(Pass):
    def __init__(self, passes=None, opt_level=0, name="sequential", required=None):
        self.passes = list(passes or [])
        self.info = PassInfo(opt_level, name, required)

    def __call__(self, mod, ctx=None):
        ctx = ctx or PassContext.current()
        for p in self.passes:
            if p.info.name in ctx.disabled_pass:
                continue
            if p.info.name in ctx.required_pass or ctx.opt_level >= p.info.opt_level:
                mod = p(mod)
        return mod


def module_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False):
    def create(fn):
        return ModulePass(fn, PassInfo(opt_level, name or fn.__name__, required))

    return create(pass_func) if pass_func is not None else create


functools  # noqa: B018
