"""``minitvm cache info`` / ``minitvm cache clear``: inspect and empty the on-disk kernel cache."""

from __future__ import annotations

import argparse

from .backend import disk_cache


def add_parser(sub) -> argparse.ArgumentParser:
    """Register the ``cache`` subcommand on ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser("cache", help="inspect or empty the on-disk kernel cache")
    p.add_argument("action", choices=["info", "clear"],
                   help="info: where it is and how big; clear: remove every entry")
    p.add_argument("--dir", default=None, metavar="PATH",
                   help="the cache directory (default: $MINITVM_CACHE_DIR, else "
                        "$XDG_CACHE_HOME/minitvm, else ~/.cache/minitvm)")
    return p


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def cmd_cache(args) -> int:
    cache = disk_cache.get_cache(args.dir)
    if args.action == "clear":
        n = cache.clear()
        print(f"removed {n} cached kernel{'s' if n != 1 else ''} from {cache.root}")
        return 0
    info = cache.info()
    state = "disabled (MINITVM_DISABLE_DISK_CACHE)" if disk_cache.disabled_by_env() else "enabled"
    print(f"path:      {info['path']}")
    print(f"status:    {state}")
    print(f"entries:   {info['entries']}")
    print(f"size:      {_size(info['bytes'])} of {_size(info['max_bytes'])} "
          f"(limit: ${disk_cache.ENV_MAX_BYTES})")
    return 0
