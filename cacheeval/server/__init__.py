"""The hidden-label grading service: a Starlette app (:mod:`.app`) over an
SQLite store (:mod:`.store`) that grades predictions for the test split with
:func:`cacheeval.run.harness.score` and returns aggregate feedback only
(:mod:`.grading`).

Only :mod:`.app` imports the ``server`` extra (starlette, python-multipart);
the store, grading, token and rate-limit modules are standard-library only,
so ``cacheeval serve --add-submitter`` and ``--regrade`` need no extra.
"""
