"""Benches beyond the committed dataset: private slices (:mod:`.slice`), imported pair files
(:mod:`.importers`, :mod:`.pair_formats`), external validity
(:mod:`.external`), held-out shift (:mod:`.shift`) and blind audit sheets
(:mod:`.audit`).
The ones that grade a cache run it through :mod:`cacheeval.run`.
"""
