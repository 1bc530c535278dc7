"""Building the dataset: assemble shards, assign splits, write the manifest.

Modules: :mod:`.shards` (reading ``domains/<domain>.jsonl``), :mod:`.rowschema`
(``schemas/row.schema.json``), :mod:`.checks` (every rule a build enforces),
:mod:`.splits` (family-disjoint train/dev/test), :mod:`.manifest`,
:mod:`.assemble` (the ``cacheeval build`` command and ``--check``) and
:mod:`.pins` (the pin table of the integrity test). See ``docs/pipeline.md``.
"""
