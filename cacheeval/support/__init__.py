"""Support: the bottom layer every other one may use.

Canonical JSON/JSONL reading and writing (:mod:`.jsonio`), compact id sets
(:mod:`.idset`), the repository's paths and seeded RNGs (:mod:`.layout`), git
provenance (:mod:`.gitinfo`) and progress callbacks (:mod:`.progress`).
Standard library only; imports nothing else from CacheEval.
"""
