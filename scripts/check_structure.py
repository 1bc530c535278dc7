"""Structure limits of the code base: module lengths, function lengths, import cycles.

Usage (from the repository root)::

    python -m scripts.check_structure                 # cacheeval/ and adapters/
    python -m scripts.check_structure cacheeval       # one package
    python -m scripts.check_structure --top 10 cacheeval adapters

For every ``.py`` file under the given package directories it reports:

* **module length**: physical lines; a module over ``--max-module-lines``
  (default 900) is a violation;
* **function length**: ``end_lineno - lineno + 1`` of every ``def`` (methods and
  nested functions included, decorators not); one over
  ``--max-function-lines`` (default 120) is a violation;
* **layers**: every scanned module belongs to one layer of :data:`LAYERS`
  (its longest matching prefix), and an import - at module level or inside a
  function - only goes to the same layer or one below it; ``cacheeval/`` has
  at most :data:`MAX_TOP_LEVEL_MODULES` modules of its own beside its layer
  packages (``docs/architecture.md`` draws the layers);
* **import cycles**: the strongly connected components of the graph of imports
  between the scanned modules. Imports at module level (outside
  ``if TYPE_CHECKING:``) make the *module graph*; a component of more than one
  module there is a cycle. An import inside a function that would close a
  cycle if it were at module level (its edge lies in a component of the graph
  of *all* imports) is reported too: such an import exists to break a cycle.

``from pkg import name`` counts as an import of ``pkg.name`` when that is a
scanned module, else of ``pkg`` itself. Exit status: 0 when nothing is
violated, 1 otherwise, 2 on a bad argument.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

MAX_MODULE_LINES = 900
MAX_FUNCTION_LINES = 120
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PACKAGES = ("cacheeval", "adapters")
#: The top level of ``cacheeval/`` keeps the public API and the entry points.
MAX_TOP_LEVEL_MODULES = 10
#: The packages whose own folder that limit applies to.
LIMITED_TOP_LEVELS = ("cacheeval",)
#: The layers, lowest first: (name, module prefixes). A module may import its
#: own layer and the ones below; ``cacheeval`` (the package itself) is the top
#: of the library, and the reference caches in ``adapters`` sit above it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core types", ("cacheeval.schema", "cacheeval.version")),
    ("support", ("cacheeval.support",)),
    ("public API", ("cacheeval.cache", "cacheeval.baselines", "cacheeval.dataset")),
    ("metrics", ("cacheeval.metrics",)),
    ("label checkers", ("cacheeval.verify",)),
    ("generators", ("cacheeval.generators",)),
    ("pipeline", ("cacheeval.pipeline",)),
    ("results", ("cacheeval.results",)),
    ("reporting", ("cacheeval.reporting",)),
    ("run", ("cacheeval.run",)),
    ("replay", ("cacheeval.replay",)),
    ("benches", ("cacheeval.benches",)),
    ("server", ("cacheeval.server",)),
    ("commands", ("cacheeval.commands",)),
    ("entry points", ("cacheeval.cli", "cacheeval.__main__", "cacheeval")),
    ("reference caches", ("adapters",)),
)


@dataclass(frozen=True, slots=True)
class Function:
    """One ``def``: module, qualified name, first line and length in lines."""

    module: str
    name: str
    line: int
    lines: int


@dataclass(frozen=True, slots=True)
class Import:
    """One import between scanned modules; ``lazy`` when it sits inside a function."""

    source: str
    target: str
    line: int
    lazy: bool


@dataclass(frozen=True, slots=True)
class Module:
    """A parsed module: dotted name, path, length, its functions and imports."""

    name: str
    path: Path
    lines: int
    functions: tuple[Function, ...]
    imports: tuple[Import, ...]


@dataclass(frozen=True)
class Report:
    """Everything :func:`scan` measured, and the violations of the limits."""

    modules: tuple[Module, ...]
    max_module_lines: int
    max_function_lines: int
    cycles: tuple[tuple[str, ...], ...] = ()
    cycle_breakers: tuple[Import, ...] = ()
    functions: tuple[Function, ...] = field(default=())
    upward: tuple[Import, ...] = ()
    unlayered: tuple[str, ...] = ()
    top_level: dict[str, tuple[str, ...]] = field(default_factory=dict)
    max_top_level: int = MAX_TOP_LEVEL_MODULES

    @property
    def crowded_top_levels(self) -> dict[str, tuple[str, ...]]:
        """Packages with more than ``max_top_level`` modules of their own."""
        return {k: v for k, v in self.top_level.items() if len(v) > self.max_top_level}

    @property
    def long_modules(self) -> list[Module]:
        return [m for m in self.modules if m.lines > self.max_module_lines]

    @property
    def long_functions(self) -> list[Function]:
        return [f for f in self.functions if f.lines > self.max_function_lines]

    @property
    def ok(self) -> bool:
        return not (
            self.long_modules
            or self.long_functions
            or self.cycles
            or self.cycle_breakers
            or self.upward
            or self.unlayered
            or self.crowded_top_levels
        )


def module_name(path: Path, root: Path) -> str:
    """``cacheeval/pipeline/checks.py`` -> ``cacheeval.pipeline.checks``; a
    package's ``__init__.py`` is named after the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(name: str, layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> int | None:
    """Index in ``layers`` of the layer whose longest prefix matches the dotted
    module ``name`` (a prefix matches itself and its submodules); None when
    no layer claims it.

    >>> [layer_of(n) for n in ("cacheeval.schema", "cacheeval.run.harness", "cacheeval", "x")]
    [0, 9, 14, None]
    """
    best: tuple[int, int] | None = None  # (prefix length, layer index)
    for i, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), i)
    return None if best is None else best[1]


def _layer_findings(
    modules: Sequence[Module], layers: Sequence[tuple[str, Sequence[str]]]
) -> tuple[tuple[Import, ...], tuple[str, ...]]:
    """Imports that go up a layer, and modules no layer claims (only in
    packages the layers name at all: a tiny test package has its own)."""
    roots = {p.split(".")[0] for _, prefixes in layers for p in prefixes}
    upward = []
    unlayered = []
    for m in modules:
        if m.name.split(".")[0] not in roots:
            continue
        own = layer_of(m.name, layers)
        if own is None:
            unlayered.append(m.name)
            continue
        for imp in m.imports:
            target = layer_of(imp.target, layers)
            if target is not None and target > own:
                upward.append(imp)
    return tuple(sorted(upward, key=lambda i: (i.source, i.line))), tuple(sorted(unlayered))


def _top_level(modules: Sequence[Module], roots: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each root package, the modules directly in its folder (its
    ``__init__`` included)."""
    out = {}
    for root in roots:
        out[root] = tuple(
            sorted(
                m.path.name
                for m in modules
                if m.path.parent.name == root
                and (m.name == root or m.name.count(".") == 1 and m.name.startswith(root + "."))
            )
        )
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if node.level == 0:
        return node.module or ""
    package = name.split(".") if is_package else name.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


class _Visitor(ast.NodeVisitor):
    def __init__(self, name: str, is_package: bool) -> None:
        self.name = name
        self.is_package = is_package
        self.stack: list[str] = []
        self.depth = 0  # how many defs enclose the current node
        self.functions: list[Function] = []
        self.raw: list[tuple[list[str], int, bool]] = []  # candidate targets, line, lazy

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qual = ".".join([*self.stack, node.name])
        end = node.end_lineno if node.end_lineno is not None else node.lineno
        self.functions.append(Function(self.name, qual, node.lineno, end - node.lineno + 1))
        self.stack.append(node.name)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        self.stack.pop()

    visit_FunctionDef = _def
    visit_AsyncFunctionDef = _def

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def _lazy(self) -> bool:
        return self.depth > 0

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.raw.append(([alias.name], node.lineno, self._lazy()))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolve(self.name, self.is_package, node)
        for alias in node.names:
            self.raw.append(([f"{base}.{alias.name}", base], node.lineno, self._lazy()))


def parse_module(path: Path, root: Path) -> tuple[Module, list[tuple[list[str], int, bool]]]:
    """Parse one file: its :class:`Module` (imports not yet resolved) and the
    raw import candidates."""
    text = path.read_text(encoding="utf-8")
    name = module_name(path, root)
    visitor = _Visitor(name, path.name == "__init__.py")
    visitor.visit(ast.parse(text, filename=str(path)))
    lines = len(text.splitlines())
    return Module(name, path, lines, tuple(visitor.functions), ()), visitor.raw


def _with_imports(
    module: Module, raw: Sequence[tuple[list[str], int, bool]], known: set[str]
) -> Module:
    imports = []
    for candidates, line, lazy in raw:
        target = next((c for c in candidates if c in known), None)
        if target is not None and target != module.name:
            imports.append(Import(module.name, target, line, lazy))
    imports = list(dict.fromkeys(imports))  # one per (target, line): `from x import a, b`
    return Module(module.name, module.path, module.lines, module.functions, tuple(imports))


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph`` (node -> successors),
    each sorted, components of one node without a self-loop left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, succ = work[-1]
            advanced = False
            for nxt in succ:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in graph.get(node, ()):
                    out.append(sorted(comp))
    return sorted(out)


def scan(
    packages: Sequence[Path],
    *,
    root: Path = REPO_ROOT,
    max_module_lines: int = MAX_MODULE_LINES,
    max_function_lines: int = MAX_FUNCTION_LINES,
    layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
    max_top_level: int = MAX_TOP_LEVEL_MODULES,
    limited_top_levels: Sequence[str] = LIMITED_TOP_LEVELS,
) -> Report:
    """Measure every module under the package directories ``packages``
    (imports are resolved among all of them together)."""
    parsed = []
    for pkg in packages:
        for path in sorted(pkg.rglob("*.py")):
            parsed.append(parse_module(path, root))
    known = {m.name for m, _ in parsed}
    modules = tuple(_with_imports(m, raw, known) for m, raw in parsed)
    eager: dict[str, set[str]] = {m.name: set() for m in modules}
    every: dict[str, set[str]] = {m.name: set() for m in modules}
    for m in modules:
        for imp in m.imports:
            every[m.name].add(imp.target)
            if not imp.lazy:
                eager[m.name].add(imp.target)
    cycles = tuple(tuple(c) for c in strongly_connected(eager))
    component = {n: i for i, c in enumerate(strongly_connected(every)) for n in c}
    breakers = tuple(
        sorted(
            {
                imp
                for m in modules
                for imp in m.imports
                if imp.lazy
                and imp.source in component
                and component.get(imp.target) == component[imp.source]
            },
            key=lambda i: (i.source, i.line, i.target),
        )
    )
    functions = tuple(f for m in modules for f in m.functions)
    upward, unlayered = _layer_findings(modules, layers)
    return Report(
        modules,
        max_module_lines,
        max_function_lines,
        cycles,
        breakers,
        functions=functions,
        upward=upward,
        unlayered=unlayered,
        top_level=_top_level(modules, [p.name for p in packages if p.name in limited_top_levels]),
        max_top_level=max_top_level,
    )


def _shown(path: Path) -> str:
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def render(report: Report, top: int = 5) -> str:
    """The report as text: totals, the largest modules and longest functions,
    then every violation."""
    mods = sorted(report.modules, key=lambda m: (-m.lines, m.name))
    funcs = sorted(report.functions, key=lambda f: (-f.lines, f.module, f.line))
    lines = [
        f"{len(report.modules)} modules, {sum(m.lines for m in report.modules)} lines, "
        f"{len(report.functions)} functions "
        f"({sum(1 for f in report.functions if f.lines > 50)} over 50 lines, "
        f"{sum(1 for f in report.functions if f.lines > 100)} over 100)",
        f"largest modules (limit {report.max_module_lines}):",
        *(f"  {m.lines:5d}  {_shown(m.path)}" for m in mods[:top]),
        f"longest functions (limit {report.max_function_lines}):",
        *(f"  {f.lines:5d}  {f.module}:{f.line} {f.name}" for f in funcs[:top]),
        f"import cycles: {len(report.cycles)}; "
        f"imports inside functions that close a cycle: {len(report.cycle_breakers)}; "
        f"upward imports: {len(report.upward)}",
        *(
            f"{root}/ top level: {len(names)} modules (limit {report.max_top_level})"
            for root, names in report.top_level.items()
        ),
    ]
    for m in report.long_modules:
        lines.append(f"VIOLATION {_shown(m.path)}: {m.lines} lines > {report.max_module_lines}")
    for f in report.long_functions:
        lines.append(
            f"VIOLATION {f.module}:{f.line} {f.name}: {f.lines} lines > {report.max_function_lines}"
        )
    for c in report.cycles:
        lines.append(f"VIOLATION import cycle: {' <-> '.join(c)}")
    for imp in report.cycle_breakers:
        lines.append(
            f"VIOLATION {imp.source}:{imp.line}: import of {imp.target} inside a function "
            "closes an import cycle"
        )
    for imp in report.upward:
        lines.append(f"VIOLATION {imp.source}:{imp.line}: imports {imp.target}, a higher layer")
    for name in report.unlayered:
        lines.append(f"VIOLATION {name}: in no layer (add it to LAYERS)")
    for root, names in report.crowded_top_levels.items():
        lines.append(
            f"VIOLATION {root}/: {len(names)} top-level modules > {report.max_top_level}: "
            + ", ".join(names)
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.check_structure", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "packages",
        nargs="*",
        default=list(DEFAULT_PACKAGES),
        help="package directories, relative to the repository root (default: cacheeval adapters)",
    )
    parser.add_argument("--max-module-lines", type=int, default=MAX_MODULE_LINES)
    parser.add_argument("--max-function-lines", type=int, default=MAX_FUNCTION_LINES)
    parser.add_argument("--top", type=int, default=5, help="largest modules/functions to list")
    args = parser.parse_args(argv)
    dirs = [REPO_ROOT / p for p in args.packages]
    for d in dirs:
        if not d.is_dir():
            print(f"check_structure: {d}: not a directory", file=sys.stderr)
            return 2
    report = scan(
        dirs,
        max_module_lines=args.max_module_lines,
        max_function_lines=args.max_function_lines,
    )
    print(render(report, args.top))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
