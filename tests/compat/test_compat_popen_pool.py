"""tvm.contrib.popen_pool as TVM's worker-pool tests use it (issue 13): calls run in a worker
process; exceptions come back, a timeout kills the worker (TimeoutError), a worker that exits
(tvm.testing.terminate_self) is reported as ChildProcessError and replaced; initializers and
maximum_uses; the executor's futures and map_with_error_catching."""

import functools
import operator
import os
import time

import pytest

import minitvm as tvm
from minitvm.contrib.popen_pool import MapResult, PopenPoolExecutor, PopenWorker, StatusKind


def test_worker_results_errors_timeouts_and_death():
    worker = PopenWorker()
    try:
        worker.send(divmod, [17, 5])
        assert worker.recv() == (3, 2) and worker.is_alive()
        pid = worker._proc.pid
        assert pid != os.getpid()
        worker.send(int, ["not a number"])
        with pytest.raises(ValueError, match="invalid literal"):
            worker.recv()
        worker.send(os.getpid)
        assert worker.recv() == pid  # an exception leaves the process running
        worker.send(time.sleep, [5], timeout=0.3)
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            worker.recv()
        assert time.monotonic() - start < 4.5 and not worker.is_alive()
        worker.send(tvm.testing.terminate_self)
        with pytest.raises(ChildProcessError, match="Subprocess terminated"):
            worker.recv()
        worker.send(functools.partial(operator.mul, 6), [7])  # in a fresh process
        assert worker.recv() == 42 and worker._proc.pid != pid
    finally:
        worker.kill()
    assert not worker.is_alive()


def test_worker_initializer_and_maximum_uses(tmp_path):
    # the initializer is a standard-library call (changing directory), so the two fresh processes
    # import no compiler: the helpers TVM's test sends (tvm.testing.initializer,
    # after_initializer) are checked by test_compat_testing_process.py::test_popen_pool_jobs
    worker = PopenWorker(initializer=os.chdir, initargs=[str(tmp_path)], maximum_uses=2)
    try:
        pids = []
        for _ in range(2):
            worker.send(os.getcwd)
            assert worker.recv() == str(tmp_path)  # set by the initializer in every process
            worker.send(os.getpid)
            pids.append(worker.recv())
        # two calls per process: getcwd and getpid; each round gets a new process
        assert len(set(pids)) == 2
    finally:
        worker.kill()
    with pytest.raises(ValueError, match="maximum_uses"):
        PopenWorker(maximum_uses=0)


def test_pool_executor():
    with PopenPoolExecutor(max_workers=2, timeout=2.0) as pool:
        futures = [pool.submit(pow, n, 2) for n in range(6)]
        assert [f.result() for f in futures] == [0, 1, 4, 9, 16, 25]
        results = list(pool.map_with_error_catching(functools.partial(operator.floordiv, 10),
                                                    [5, 0]))
    assert results[0] == MapResult(StatusKind.COMPLETE, 2)
    assert results[1].status == StatusKind.EXCEPTION
    assert isinstance(results[1].value, ZeroDivisionError)
    with PopenPoolExecutor(max_workers=1, timeout=0.3) as pool:
        (late,) = pool.map_with_error_catching(time.sleep, [5])
    assert late.status == StatusKind.TIMEOUT and isinstance(late.value, TimeoutError)


def test_lambdas_travel_by_value_with_cloudpickle():
    pytest.importorskip("cloudpickle")
    worker = PopenWorker()
    try:
        scale = 3
        worker.send(lambda a, b=1: a * b * scale, [2], {"b": 7})
        assert worker.recv() == 42
    finally:
        worker.kill()
