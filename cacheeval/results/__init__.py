"""Results: what a run produces before anything is computed from it.

The predictions file format (:mod:`.predictions`) and the per-row score
columns the metrics read (:mod:`.columns`). Above :mod:`cacheeval.metrics`,
below :mod:`cacheeval.reporting` and :mod:`cacheeval.run`.
"""
