"""``ExportedProgram.run_decompositions`` for both dialects' torch.export importers: torch runs
the program's graph to decompose it, so a graph it cannot run (an operator given the wrong
arguments) fails there; the failure is an import error naming torch's node (``%name``)."""

from __future__ import annotations

__all__ = ["decompose"]


def decompose(ep, table, error: type[Exception]):
    """``ep.run_decompositions(table)``; torch's failure raised as ``error`` (a ValueError
    subclass of the calling importer) with torch's message, which names the node."""
    try:
        return ep.run_decompositions(table)
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError / TypeError / ...
        raise error(f"torch cannot run the exported program to decompose it: "
                    f"{type(e).__name__}: {str(e).strip()[:2000]}") from e
