"""Shared-cache replay: one store, top-1 retrieval over everything stored
(:mod:`.engine`), its reference shared caches (:mod:`.shared_baselines`) and
its report (:mod:`.report`).
"""
