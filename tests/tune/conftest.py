"""Time limits of the tuner tests that measure real candidates: a limit there bounds a hang, it
is not what the test checks, so it is generous (``patient_workers``). On a machine another test
suite loads, a forked worker's start or a candidate's build and cold timing ran 40x slower
(a 2.6 s test took 115 s) and met the runner's 60 s limits: a candidate was recorded as a
failure, and the test failed on the number of good records."""

import pytest

from minitvm.tune import runner as tune_runner

# seconds a measuring worker may take to start, and a candidate to be built and timed, in the
# tests where neither limit is the point (a result arrives in seconds: nothing waits for it)
PATIENT_S = 900.0


@pytest.fixture
def patient_workers(monkeypatch):
    """``PATIENT_S`` for a worker's start (``runner.WORKER_START_S``); the test passes it as
    the candidates' ``timeout``."""
    monkeypatch.setattr(tune_runner, "WORKER_START_S", PATIENT_S)
    return PATIENT_S
