"""The dataset pipeline: generate and number shards, assemble them, assign
splits, write the manifest, calibrate difficulty.

Modules, in pipeline order: :mod:`.generate` (a domain's generator run and its
rows numbered: ``cacheeval generate``), :mod:`.shards` (reading
``domains/<domain>.jsonl``), :mod:`.rowschema` (``schemas/row.schema.json``),
:mod:`.checks` (every rule a build enforces, and ``BuildFailed``),
:mod:`.splits` (family-disjoint train/dev/test), :mod:`.manifest`,
:mod:`.assemble` (the ``cacheeval build`` command and ``--check``) and
:mod:`.pins` (the pin table of the integrity test). Difficulty:
:mod:`.difficulty` (the committed calibration file, read and applied),
:mod:`.similarity` (pair scorers), :mod:`.calibration` (thresholds, buckets,
kappa), :mod:`.difficulty_report` (``reports/DIFFICULTY.md``) and
:mod:`.recalibrate` (the whole recalibration). See ``docs/pipeline.md``.
"""
