"""Running caches: the blind harness (:mod:`.harness`), the block runner
(:mod:`.blockrun`), worker processes (:mod:`.procpool`, :mod:`.parallel`) and
Ray (:mod:`.ray_backend`). Produces :mod:`cacheeval.results` and hands them to
:mod:`cacheeval.reporting`.
"""
