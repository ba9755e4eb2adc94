"""Helpers of the TVMScript parser tests, as the fixture ``sp``: skips for what other parts have
not written yet (the printer, operators), and comparisons of parsed and expected IR."""

import pytest

from minitvm import relax, tir
from minitvm.ir.structural import assert_structural_equal
from minitvm.script.parser import from_source


def _printer_available() -> bool:
    try:
        import minitvm.script.printer  # noqa: F401
    except ImportError:
        return False
    return True


class ParserTesting:
    printer = _printer_available()

    def need_printer(self):
        if not self.printer:
            pytest.skip("the TVMScript printer (minitvm.script.printer) is not there yet")

    @staticmethod
    def need_ops(*paths):
        """Skip unless ``relax.op`` has every operator (``"add"``, ``"nn.relu"``)."""
        missing = []
        for p in paths:
            obj = relax.op
            for part in p.split("."):
                obj = getattr(obj, part, None)
                if obj is None:
                    missing.append(p)
                    break
        if missing:
            pytest.skip(f"relax.op lacks {missing}: operators not written yet")

    @staticmethod
    def prim_funcs_equal(a, b):
        """PrimFuncs compared with their buffer maps in parameter order: the core's
        structural_equal compares ``buffer_map`` as a dict keyed by Var identity, so two equal
        PrimFuncs never compare equal through it."""
        ka = (a.params, [a.buffer_map.get(p) for p in a.params], a.body, a.attrs)
        kb = (b.params, [b.buffer_map.get(p) for p in b.params], b.body, b.attrs)
        assert_structural_equal(ka, kb, map_free_vars=True)

    def equal(self, a, b):
        """Modules, Relax functions or PrimFuncs structurally equal (PrimFuncs as above)."""
        if isinstance(a, tir.PrimFunc):
            self.prim_funcs_equal(a, b)
        elif hasattr(a, "functions"):
            names = sorted(g.name_hint for g in a.functions)
            assert names == sorted(g.name_hint for g in b.functions)
            for gv, f in a.functions.items():
                g = b[gv.name_hint]
                assert type(f) is type(g), gv.name_hint
                self.equal(f, g)
        else:
            assert_structural_equal(a, b)

    def roundtrip(self, obj):
        """``from_source(obj.script())`` equals ``obj`` and prints the same text."""
        self.need_printer()
        text = obj.script()
        back = from_source(text)
        self.equal(back, obj)
        assert back.script() == text
        return back


@pytest.fixture
def sp():
    return ParserTesting()
