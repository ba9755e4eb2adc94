"""``tvm.contrib.popen_pool``: run Python calls in separate worker processes, with a timeout.

``PopenWorker`` drives one process (``minitvm.contrib.popen_worker``) through a pair of pipes:
``send(fn, args, kwargs, timeout)`` then ``recv()`` returns the result, re-raises the call's
exception, raises ``TimeoutError`` when the call ran past its timeout, or ``ChildProcessError``
when the process died (``tvm.testing.terminate_self``); after a timeout or a death the next
``send`` starts a fresh process. An ``initializer(*initargs)`` runs in every new process, and
``maximum_uses`` restarts the process after that many calls.

``PopenPoolExecutor`` keeps one worker per thread of a thread pool: ``submit`` returns a
``concurrent.futures.Future``; ``map_with_error_catching`` gives a ``MapResult(status, value)``
per input instead of raising.
"""

from __future__ import annotations

import concurrent.futures
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from collections import namedtuple
from enum import IntEnum

__all__ = ["StatusKind", "MapResult", "PopenWorker", "PopenPoolExecutor",
           "kill_child_processes"]


class StatusKind(IntEnum):
    """The state of a call in a worker, and how its reply ended."""

    RUNNING = 0
    COMPLETE = 1
    EXCEPTION = 2
    TIMEOUT = 3


class MapResult(namedtuple("MapResult", ["status", "value"])):
    """One result of ``map_with_error_catching``: a StatusKind and the value or exception."""

    __slots__ = ()


def _pickler():
    try:
        import cloudpickle  # noqa: PLC0415 - optional: pickles lambdas and local functions

        return cloudpickle
    except ImportError:
        return pickle


_BOOT = ("import importlib.util as u, sys; s = u.spec_from_file_location('popen_worker', "
         "sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m); m.main(sys.argv[1:])")


def kill_child_processes(pid: int) -> None:
    """Kill the processes started by worker ``pid`` (its process group; the worker leads it)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


class PopenWorker:
    """One worker process running the calls sent to it, one at a time."""

    def __init__(self, initializer=None, initargs=(), maximum_uses: int | None = None,
                 stdout=None, stderr=None):
        if maximum_uses is not None and maximum_uses < 1:
            raise ValueError(f"PopenWorker: maximum_uses must be at least 1, got {maximum_uses}")
        self._proc = None
        self._reader = self._writer = None
        self._initializer = initializer
        self._initargs = tuple(initargs)
        self._maximum_uses = maximum_uses
        self._remaining_uses = None
        self._stdout = stdout
        self._stderr = stderr

    def __del__(self):
        try:
            self.kill()
        except (ImportError, AttributeError, TypeError):  # interpreter shutdown
            pass

    def kill(self) -> None:
        """End the worker process (the next ``send`` starts a new one)."""
        if self._proc is None:
            return
        for f in (self._writer, self._reader):
            try:
                f.close()
            except OSError:
                pass
        kill_child_processes(self._proc.pid)
        try:
            self._proc.kill()
            self._proc.wait()
        except OSError:
            pass
        self._proc = None

    def _start(self) -> None:
        if self._proc is not None:
            return
        main_read, worker_write = os.pipe()
        worker_read, main_write = os.pipe()
        # the worker script is loaded by path, not as ``minitvm.contrib.popen_worker``: a fresh
        # process then imports the compiler only when a call it unpickles needs it
        worker_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "popen_worker.py")
        cmd = [sys.executable, "-c", _BOOT, worker_file, str(worker_read), str(worker_write)]
        # the worker imports this package from where the parent found it
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(cmd, pass_fds=(worker_read, worker_write),
                                      stdout=self._stdout, stderr=self._stderr, env=env,
                                      start_new_session=True)
        os.close(worker_read)
        os.close(worker_write)
        self._reader = os.fdopen(main_read, "rb")
        self._writer = os.fdopen(main_write, "wb")
        self._remaining_uses = self._maximum_uses
        if self._initializer is not None:
            self._write((self._initializer, self._initargs, {}, None))
            self.recv()

    def join(self, timeout: float | None = None) -> None:
        """Wait (at most ``timeout`` seconds) for the worker process to end."""
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass

    def is_alive(self) -> bool:
        """Whether the worker process is running."""
        return self._proc is not None and self._proc.poll() is None

    def _write(self, payload) -> None:
        data = _pickler().dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._writer.write(struct.pack("<i", len(data)))
            self._writer.write(data)
            self._writer.flush()
        except OSError:
            pass  # a dead worker: recv reports it

    def send(self, fn, args=(), kwargs=None, timeout: float | None = None) -> None:
        """Start ``fn(*args, **kwargs)`` in the worker; ``recv`` gets its result. Call ``recv``
        before the next ``send``."""
        if self._proc is not None and self._remaining_uses == 0:
            self.kill()  # used up: a fresh process for this call
        if self._proc is None:
            self._start()
        if self._remaining_uses is not None:
            self._remaining_uses -= 1
        self._write((fn, tuple(args), dict(kwargs or {}), timeout))

    def _child_process_error(self) -> ChildProcessError:
        self.kill()
        return ChildProcessError("Subprocess terminated")

    def recv(self):
        """The result of the last ``send``; re-raises its exception, ``TimeoutError`` after a
        timeout, ``ChildProcessError`` when the process ended during the call."""
        if self._reader is None:
            raise self._child_process_error()
        try:
            head = self._reader.read(4)
        except OSError:
            raise self._child_process_error() from None
        if len(head) != 4:
            raise self._child_process_error()
        try:
            size = struct.unpack("<i", head)[0]
            status, value = _pickler().loads(self._reader.read(size))
        except (OSError, EOFError, pickle.UnpicklingError):
            raise self._child_process_error() from None
        if status == StatusKind.COMPLETE:
            return value
        if status == StatusKind.EXCEPTION:
            raise value
        self.kill()
        raise TimeoutError()


class PopenPoolExecutor:
    """A pool of ``max_workers`` PopenWorkers (default: the CPU count); every call gets
    ``timeout`` seconds."""

    def __init__(self, max_workers: int | None = None, timeout: float | None = None,
                 initializer=None, initargs=(), maximum_process_uses: int | None = None,
                 stdout=None, stderr=None):
        self._threadpool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers or os.cpu_count())
        self._timeout = timeout
        self._worker_map: dict[int, PopenWorker] = {}
        self._lock = threading.Lock()
        self._initializer = initializer
        self._initargs = initargs
        self._maximum_process_uses = maximum_process_uses
        self._stdout = stdout
        self._stderr = stderr
        self._shutdown = False

    def __del__(self):
        try:
            self.shutdown()
        except (ImportError, AttributeError, TypeError):
            pass

    def shutdown(self) -> None:
        """Stop the worker processes and the thread pool."""
        if self._shutdown:
            return
        self._shutdown = True
        with self._lock:
            for worker in self._worker_map.values():
                worker.kill()
            self._worker_map.clear()
        self._threadpool.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    def _worker_run(self, fn, args, kwargs):
        tid = threading.get_ident()
        with self._lock:
            worker = self._worker_map.get(tid)
            if worker is None:
                worker = PopenWorker(self._initializer, self._initargs,
                                     self._maximum_process_uses, self._stdout, self._stderr)
                self._worker_map[tid] = worker
        worker.send(fn, args, kwargs, self._timeout)
        return worker.recv()

    def _worker_run_with_error_catching(self, fn, args, kwargs) -> MapResult:
        try:
            return MapResult(StatusKind.COMPLETE, self._worker_run(fn, args, kwargs))
        except TimeoutError as err:
            return MapResult(StatusKind.TIMEOUT, err)
        except Exception as err:  # noqa: BLE001 - returned to the caller, as TVM does
            return MapResult(StatusKind.EXCEPTION, err)

    def submit(self, fn, *args, **kwargs) -> concurrent.futures.Future:
        """Run ``fn(*args, **kwargs)`` in a worker; the future holds its result."""
        return self._threadpool.submit(self._worker_run, fn, args, kwargs)

    def map_with_error_catching(self, fn, iterator):
        """``fn(x)`` for each ``x``, as MapResults (exceptions and timeouts returned, not
        raised), in input order."""
        return self._threadpool.map(
            lambda x: self._worker_run_with_error_catching(fn, (x,), None), iterator)
