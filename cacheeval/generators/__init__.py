"""Per-domain row generators, one module ``<domain>.py`` each.

Every module exposes ``load_families(fixture_dir)`` (the parsed, checked
fixture families of ``sources/<domain>/``) and ``generate(fixture_dir) ->
list[DraftRow]``: the domain's rows in file order, unnumbered
(:class:`~cacheeval.generators.common.DraftRow`). A bad fixture raises
:class:`~cacheeval.generators.common.FixtureError` naming ``path:LINE``.
The domain's :class:`~cacheeval.pipeline.domains.DomainSpec` names its generator; the
pipeline (:func:`cacheeval.pipeline.generate.generate_shard`, the
``cacheeval generate`` command) checks the label counts against the matrix
and numbers the rows.
"""
