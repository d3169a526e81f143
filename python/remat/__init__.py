"""remat: optimal gradient-checkpointing plans for computation graphs.

    >>> import remat
    >>> g = remat.Graph([
    ...     {"name": "x", "op": "input", "bytes": 4},
    ...     {"name": "a", "op": "relu", "inputs": ["x"], "bytes": 8, "time": 1.0},
    ...     {"name": "b", "op": "relu", "inputs": ["a"], "bytes": 8, "time": 1.0},
    ... ])
    >>> s = remat.solve(g)
    >>> s.status, s.peak == remat.simulate(g, s.schedule).peak_bytes
    ('optimal', True)

`solve` takes every option of the C++ `remat::solve_options` by keyword, in
the CLI's words (method "exact", order "consumers-first", ...); errors from
the core arrive as `remat.Error` (InvalidGraph, ParseError, InvalidSchedule)
with the core's message.
"""

from ._core import (
    Error,
    Graph,
    InvalidGraph,
    InvalidSchedule,
    ParseError,
    Simulation,
    Solution,
    __version__,
    kept_schedule,
    methods,
    simulate,
    solve,
)

__all__ = [
    "Error",
    "Graph",
    "InvalidGraph",
    "InvalidSchedule",
    "ParseError",
    "Simulation",
    "Solution",
    "__version__",
    "kept_schedule",
    "methods",
    "simulate",
    "solve",
]
