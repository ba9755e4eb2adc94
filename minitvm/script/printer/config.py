"""Options of the TVMScript printer: the keyword arguments of TVM's ``obj.script(...)``."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class PrinterConfig:
    """``script()``'s keyword arguments with TVM's defaults.

    Used: ``name``, ``show_meta``, ``ir_prefix``, ``tir_prefix`` (the ``T.`` of symbolic variables
    in Relax; PrimFuncs always print ``T``), ``relax_prefix``, ``module_alias``,
    ``verbose_expr``, ``indent_spaces``, ``syntax_sugar``, ``show_object_address``,
    ``show_all_struct_info``. Accepted for compatibility and without effect: ``buffer_dtype``,
    ``int_dtype``, ``float_dtype``, ``print_line_numbers``, ``num_context_lines``, the
    ``path_to_*`` / ``obj_to_*`` underlining options, and ``show()``'s ``style`` and
    ``black_format``.
    """

    name: str | None = None
    show_meta: bool = False
    ir_prefix: str = "I"
    tir_prefix: str = "T"
    relax_prefix: str = "R"
    module_alias: str = "cls"
    buffer_dtype: str = "float32"
    int_dtype: str = "int32"
    float_dtype: str = "void"
    verbose_expr: bool = False
    indent_spaces: int = 4
    print_line_numbers: bool = False
    num_context_lines: int = -1
    syntax_sugar: bool = True
    show_object_address: bool = False
    show_all_struct_info: bool = True
    path_to_underline: object = None
    path_to_annotate: object = None
    obj_to_underline: object = None
    obj_to_annotate: object = None
    style: object = None
    black_format: bool = False

    @staticmethod
    def make(**kwargs) -> PrinterConfig:
        known = {f.name for f in fields(PrinterConfig)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"script() got an unexpected keyword argument {unknown[0]!r}; "
                            f"options are {sorted(known)}")
        cfg = PrinterConfig(**kwargs)
        for key in ("ir_prefix", "tir_prefix", "relax_prefix"):
            if not str(getattr(cfg, key)).isidentifier():
                raise ValueError(f"Invalid `{key}`: {getattr(cfg, key)!r}")
        if cfg.module_alias and not cfg.module_alias.isidentifier():
            raise ValueError(f"Invalid `module_alias`: {cfg.module_alias!r}")
        return cfg

    def builtin_keywords(self) -> list[str]:
        """Names no variable may take (TVM renames a variable ``R`` to ``R_1``)."""
        out = [self.ir_prefix, self.tir_prefix, self.relax_prefix]
        if self.module_alias:
            out.append(self.module_alias)
        return out
