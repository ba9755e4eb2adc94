"""The process behind ``tvm.contrib.popen_pool.PopenWorker``, started with this file and the
two pipe descriptors (``main([this_file, READ_FD, WRITE_FD])``; ``python -m
minitvm.contrib.popen_worker READ_FD WRITE_FD`` works too).

It reads length-prefixed pickles ``(fn, args, kwargs, timeout)`` from READ_FD, runs each call and
writes ``(status, value)`` back: ``COMPLETE`` with the result, ``EXCEPTION`` with the exception,
or — when the call outlives its timeout — ``TIMEOUT``, after which the process ends itself (the
parent starts a fresh one). A call that exits the process (``sys.exit``) closes the pipe, which
the parent reports as a ``ChildProcessError``. Functions travel by reference to their module
(minitvm's own keep their ``minitvm.*`` module names under ``install_as_tvm``), or by value
when ``cloudpickle`` is installed (lambdas, local functions)."""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import threading

# the status codes of popen_pool.StatusKind (kept here: the worker imports nothing else)
RUNNING, COMPLETE, EXCEPTION, TIMEOUT = 0, 1, 2, 3


def _pickler():
    try:
        import cloudpickle  # noqa: PLC0415 - optional: pickles lambdas and local functions

        return cloudpickle
    except ImportError:
        return pickle


def _send(writer, lock, value) -> None:
    data = _pickler().dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    with lock:
        writer.write(struct.pack("<i", len(data)))
        writer.write(data)
        writer.flush()


def main(argv: list[str]) -> None:
    """Serve calls until the parent closes the pipe."""
    reader = os.fdopen(int(argv[1]), "rb")
    writer = os.fdopen(int(argv[2]), "wb")
    lock = threading.Lock()
    while True:
        head = reader.read(4)
        if len(head) != 4:
            return
        size = struct.unpack("<i", head)[0]
        fn, args, kwargs, timeout = _pickler().loads(reader.read(size))
        state = {"status": RUNNING}

        def on_timeout(state=state):
            with lock:
                if state["status"] != RUNNING:
                    return
                state["status"] = TIMEOUT
            _send(writer, threading.Lock(), (TIMEOUT, TimeoutError()))
            os.kill(os.getpid(), signal.SIGKILL)

        watcher = None
        if timeout is not None:
            watcher = threading.Timer(timeout, on_timeout)
            watcher.daemon = True
            watcher.start()
        try:
            reply = (COMPLETE, fn(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 - handed to the parent, which re-raises it
            reply = (EXCEPTION, err)
        if watcher is not None:
            watcher.cancel()
        with lock:
            if state["status"] != RUNNING:
                continue
            state["status"] = reply[0]
        try:
            _send(writer, threading.Lock(), reply)
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            _send(writer, threading.Lock(),
                  (EXCEPTION, RuntimeError(f"the result of the call could not be pickled: "
                                           f"{type(err).__name__}: {err}")))


if __name__ == "__main__":
    main(sys.argv)
