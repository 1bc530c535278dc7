"""``cacheeval stress``: counterfactual benchmark rows from a user's unlabelled prompts.

Each prompt (side a) is paired with variants (side b) made by one controlled
edit whose effect on the answer is known by construction:

* **noise** (:mod:`.noise`, HIT: EQUIV or PARA_SAFE): case, spacing,
  punctuation, one keyboard typo in a word that decides nothing, a greeting or
  a thanks, contractions and expansions, a modal rewording, a British/American
  spelling;
* **identity** (:mod:`.identity`, MISS: ADVERSARIAL): a number, year, fraction,
  number word or ordinal changed in the same format, a named entity swapped for
  another of its type (city, country, first name, natural or programming
  language, currency, unit, weekday, month, landmark, company, work, event...),
  a common noun swapped for another of its kind in a request (animal, drink,
  element, appliance...), a direction turned round, a curated operator,
  comparison or antonym swapped, a negation removed or added, with/without;
* **context** (:mod:`.context`, MISS: ADVERSARIAL): the same query under
  another user's system prompt, after another conversation's turns, or after
  one of its own prior turns with an identity edit (MISS by the key, as in the
  benchmark).

:mod:`.triggers` picks, from one pass over a prompt's words, the kinds worth
trying; every edit is kept only when the checker's validator for its kind
(:mod:`cacheeval.verify.perturbation_rules`) accepts it.

A prompt the never-cache detector refuses (:mod:`cacheeval.verify.never_cache`:
creative writing, live data, state changes through an offered tool, a signed-in
user's data) makes rows that are MISS by policy, as in the benchmark.

Rows are ordinary benchmark rows (:class:`cacheeval.schema.Row`):
``subcategory`` is the perturbation kind, ``construction_method`` is
``stress_perturbation``, ``source`` is ``FILE:LINE``, and the payload (kind
``perturbation``) records the changed span and its replacement, from which
``cacheeval verify --rows`` re-derives every label
(:mod:`cacheeval.verify.perturbation`).

Modules: :mod:`.reader` (prompts in), :mod:`.noise`, :mod:`.identity`,
:mod:`.context` (one per family), :mod:`.generate` (choosing the edits of a
prompt, streaming rows), :mod:`.rows` (a row of an edit), :mod:`.audit` (the
blind audit sheet and its score).
"""
