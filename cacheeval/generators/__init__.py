"""Per-domain row generators. Each module ``<domain>.py`` exposes
``generate(sources_dir: Path) -> list[dict]`` returning the domain's shard rows
(every row field except ``split``, in file order) and is run by
``scripts/gen_<domain>.py``."""
