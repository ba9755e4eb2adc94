"""PassContext: opt_level, required/disabled passes, instruments and config; a per-thread stack."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from .config import DEBUG_KEYS, config_default, list_configs, validate_config


class _ThreadState(threading.local):
    def __init__(self):
        self.stack: list[PassContext] = []
        self.default: PassContext | None = None
        self.depth = 0  # nesting of instrumented pass calls
        self.running: list = []  # the passes being run on the instrumented path, outermost first
        self.bisect_count = 0  # passes counted by transform.bisect_limit in this pipeline
        self.pass_index = 0  # passes run so far in this pipeline (IR dump numbering)


_STATE = _ThreadState()


def _name_list(value, what: str) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        raise TypeError(f"{what} must be a list of pass names, not the string {value!r}")
    if not isinstance(value, Iterable):
        raise TypeError(f"{what} must be a list of pass names, got {type(value).__name__}")
    return list(value)


def _check_instruments(instruments) -> list:
    out = list(instruments or [])
    for inst in out:
        if not all(hasattr(inst, m) for m in ("run_before_pass", "run_after_pass")):
            raise TypeError(f"instrument {inst!r} is not a PassInstrument (it lacks "
                            "run_before_pass/run_after_pass)")
    return out


class PassContext:
    """The context passes run in: ``with PassContext(opt_level=3, disabled_pass=[...]):``.

    Nested contexts replace the outer one completely (nothing is merged), as in TVM.
    """

    def __init__(self, opt_level: int = 2, required_pass=None, disabled_pass=None,
                 instruments=None, config=None, trace=None, trace_stack=None,
                 make_traceable=None, num_evals: int = 0, tuning_api_database=None):
        if not isinstance(opt_level, int):
            raise TypeError(f"opt_level must be an int, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = _name_list(required_pass, "required_pass")
        self.disabled_pass = _name_list(disabled_pass, "disabled_pass")
        self.instruments = _check_instruments(instruments)
        self.config = validate_config(config)
        self.trace_stack = list(trace_stack or ([trace] if trace is not None else []))
        self.make_traceable = {n: True for n in (make_traceable or [])}
        self.num_evals = num_evals
        self.tuning_api_database = tuning_api_database
        self.diag_ctx = None
        self._required_set = frozenset(self.required_pass)
        self._disabled_set = frozenset(self.disabled_pass)
        self._refresh()

    def _refresh(self) -> None:
        """Decide once whether a debugging option asks for the instrumented path."""
        cfg = self.config
        self._debug = any(k in cfg and cfg[k] != config_default(k) for k in DEBUG_KEYS)

    # ------------------------------------------------------------------ queries
    def get_config(self, key: str, default=None):
        """The value of a config option, or ``default`` (else the registered default)."""
        if key in self.config:
            return self.config[key]
        return default if default is not None else config_default(key)

    def pass_enabled(self, info) -> bool:
        """TVM's PassEnabled: disabled wins, then required, then opt_level."""
        if info.name in self._disabled_set:
            return False
        if info.name in self._required_set:
            return True
        return self.opt_level >= info.opt_level

    @staticmethod
    def current() -> PassContext:
        """The innermost entered context, or this thread's default context."""
        st = _STATE
        if st.stack:
            return st.stack[-1]
        if st.default is None:
            st.default = PassContext()
        return st.default

    @staticmethod
    def list_configs() -> dict:
        return list_configs()

    # ------------------------------------------------------------------ instruments
    def _enter_instruments(self) -> None:
        entered = []
        for inst in self.instruments:
            try:
                if hasattr(inst, "enter_pass_ctx"):
                    inst.enter_pass_ctx()
                entered.append(inst)
            except BaseException:
                for done in reversed(entered):
                    if hasattr(done, "exit_pass_ctx"):
                        try:
                            done.exit_pass_ctx()
                        except Exception:  # the enter error is the one to report
                            pass
                self.instruments.clear()
                self._refresh()
                raise

    def _exit_instruments(self) -> None:
        try:
            for inst in self.instruments:
                if hasattr(inst, "exit_pass_ctx"):
                    inst.exit_pass_ctx()
        except BaseException:
            self.instruments.clear()
            self._refresh()
            raise

    def override_instruments(self, instruments) -> None:
        """Exit the current instruments, install ``instruments`` and enter them."""
        self._exit_instruments()
        self.instruments = _check_instruments(instruments)
        self._refresh()
        self._enter_instruments()

    def __enter__(self) -> PassContext:
        self._enter_instruments()
        _STATE.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        st = _STATE
        if not st.stack or st.stack[-1] is not self:
            raise RuntimeError("PassContext exited out of order: it is not the current context")
        st.stack.pop()
        self._exit_instruments()

    def __repr__(self) -> str:
        return ("Pass context information: \n"
                f"\topt_level: {self.opt_level}\n"
                f"\trequired passes: {self.required_pass}\n"
                f"\tdisabled passes: {self.disabled_pass}\n"
                f"\tinstruments: {self.instruments}\n"
                f"\tconfig: {self.config}\n"
                f"\ttrace stack: {self.trace_stack}\n")
