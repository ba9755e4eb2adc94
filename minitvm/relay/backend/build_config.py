"""``relay.backend.Executor`` and ``relay.backend.Runtime``: what ``relay.build`` should produce
(TVM's ``Executor("graph", {"link-params": True})``, ``Runtime("cpp")``), with each kind's
options checked by name and type."""

from __future__ import annotations

_EXECUTORS = {
    "graph": {"link-params": bool},
    "aot": {"link-params": bool, "unpacked-api": bool, "interface-api": str,
            "workspace-byte-alignment": int, "constant-byte-alignment": int},
}
_RUNTIMES = {"cpp": {"system-lib": bool}, "crt": {"system-lib": bool}}


class _Config:
    _KINDS: dict = {}
    _WHAT = ""

    def __init__(self, name: str, options: dict | None = None):
        if name not in self._KINDS:
            raise ValueError(f"{self._WHAT} {name!r} is not registered; known: "
                             f"{', '.join(sorted(self._KINDS))}")
        allowed = self._KINDS[name]
        attrs = {}
        for key, value in (options or {}).items():
            if key not in allowed:
                raise ValueError(f"{self._WHAT} {name!r} has no option {key!r}; its options: "
                                 f"{', '.join(sorted(allowed)) or 'none'}")
            want = allowed[key]
            if want is bool and isinstance(value, int) and value in (0, 1):
                value = bool(value)
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                raise TypeError(f"{self._WHAT} {name!r} option {key!r} takes a "
                                f"{want.__name__}, got {value!r}")
            attrs[key] = value
        self.name = name
        self.attrs = attrs

    def __getitem__(self, key):
        return self.attrs[key]

    def __contains__(self, key) -> bool:
        return key in self.attrs

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    def __eq__(self, other):
        return type(other) is type(self) and (self.name, self.attrs) == (other.name, other.attrs)

    def __hash__(self):
        return hash((self.name, tuple(sorted(self.attrs.items()))))

    def __repr__(self):
        opts = "".join(f" --{k}={int(v) if isinstance(v, bool) else v}"
                       for k, v in self.attrs.items())
        return f"{self.name}{opts}"

    @classmethod
    def list_registered(cls) -> list[str]:
        return sorted(cls._KINDS)

    @classmethod
    def list_registered_options(cls, name: str) -> dict[str, str]:
        if name not in cls._KINDS:
            raise ValueError(f"{cls._WHAT} {name!r} is not registered")
        return {k: v.__name__ for k, v in cls._KINDS[name].items()}


class Executor(_Config):
    """The executor ``relay.build`` targets: ``"graph"`` (minitvm's) or ``"aot"``."""

    _KINDS = _EXECUTORS
    _WHAT = "executor"


class Runtime(_Config):
    """The runtime the built module runs in: ``"cpp"`` (minitvm's) or ``"crt"``."""

    _KINDS = _RUNTIMES
    _WHAT = "runtime"
