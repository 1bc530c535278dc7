"""Stress rows made in worker processes: the bytes of
:func:`~.generate.stress_lines`, in less time on several cores.

A prompt's rows depend only on the prompt, its line number and the seed (its
generator is ``random.Random(f"{seed}:{line}")``), never on the prompts
before it, and the per-text memos change no byte; so any process can turn a
chunk of prompts into rows. Only the ids depend on order (``cb-<domain>-NNNN``,
numbered per domain in output order): a worker returns each row's line without
its id (:func:`~.generate.prompt_lines`) and :func:`stress_lines_parallel`
numbers them as it yields them, chunk after chunk in input order. The prompts
are read here, a chunk at a time, and at most ``2 * workers`` chunks are in
flight, so memory stays flat whatever the size of the file, and a reader's
``file:LINE`` error surfaces here as it does without workers.

    >>> from .edits import Prompt
    >>> from .generate import stress_lines
    >>> prompts = [Prompt(q, None, None, "p.txt", i) for i, q in enumerate(
    ...     ["How do I reverse a list in Python?", "What is 15% of 80?"] * 3, 1)]
    >>> one = "".join(stress_lines(prompts, seed=3))
    >>> one == "".join(stress_lines_parallel(prompts, seed=3, workers=2, chunk=2))
    True
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import islice

from .edits import Prompt
from .generate import DEFAULT_PER_PROMPT, StressStats, numbered_lines, prompt_lines

#: Prompts per task: large enough that a task's pickling is a small share of
#: its work, small enough that the first rows come soon.
CHUNK = 1000

#: A chunk's rows: (domain, each row's line without its id) per prompt that
#: yielded rows, in input order, and the chunk's counts.
ChunkRows = tuple[list[tuple[str, list[str]]], StressStats]


def chunk_rows(
    prompts: list[Prompt], seed: int, per_prompt: int, split: str, domain: str | None
) -> ChunkRows:
    """What a worker makes of one chunk (module docstring)."""
    stats = StressStats()
    return list(prompt_lines(prompts, seed, per_prompt, split, domain, stats)), stats


def stress_lines_parallel(
    prompts: Iterable[Prompt],
    *,
    seed: int,
    per_prompt: int = DEFAULT_PER_PROMPT,
    split: str = "test",
    domain: str | None = None,
    stats: StressStats | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 2,
    chunk: int = CHUNK,
) -> Iterator[str]:
    """:func:`~.generate.stress_lines` (same arguments, same text, same
    ``stats``) made by ``workers`` processes, ``chunk`` prompts per task;
    ``progress`` is called after each chunk."""
    if workers < 1 or chunk < 1:
        raise ValueError(f"workers and chunk must be >= 1, got {workers} and {chunk}")
    if per_prompt < 1:
        raise ValueError(f"per_prompt must be >= 1, got {per_prompt}")
    stats = stats if stats is not None else StressStats()
    numbers: Counter[str] = Counter()
    source = iter(prompts)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future[ChunkRows]] = deque()

        def submit() -> bool:
            batch = list(islice(source, chunk))
            if batch:
                pending.append(pool.submit(chunk_rows, batch, seed, per_prompt, split, domain))
            return bool(batch)

        more = True
        while more and len(pending) < 2 * workers:
            more = submit()
        while pending:
            rows, part = pending.popleft().result()
            if more:
                more = submit()
            stats.merge(part)
            for dom, after_ids in rows:
                yield numbered_lines(dom, after_ids, numbers)
            if progress is not None:
                progress(stats.prompts, 0)
