import os

import matplotlib
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

settings.register_profile(
    "default",
    deadline=None,
    max_examples=30,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# CI replays one fixed set of examples (a landing should not depend on luck); local runs
# keep exploring new ones
settings.register_profile(
    "ci", parent=settings.get_profile("default"), derandomize=True, database=None
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)


def pytest_sessionstart(session):
    # compile the engine's numba kernels (or load them from their cache) before any test:
    # in a fresh checkout that takes seconds, which a timed test must not pay
    from neuromanifold import relu

    relu.warm_up()


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)
