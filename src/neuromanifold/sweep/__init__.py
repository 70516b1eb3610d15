"""Sweeps: grids of analyses over architectures and seeds, run as independent tasks on
local processes or a Dask cluster, streamed to a resumable JSON Lines file."""

from ._analyses import ANALYSES
from ._sweep import SweepSummary, Task, load_config, run_sweep, tasks_of

__all__ = ["run_sweep", "load_config", "tasks_of", "Task", "SweepSummary", "ANALYSES"]
