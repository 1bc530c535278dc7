"""Code rows: sandboxed tests, AST/token comparison and a language-identity check.

Payload::

    {"kind": "code",
     "mode": "tests" | "ast" | "lang",
     "lang_a": "python", "lang_b": "javascript",   # the language each query asks for
     "tests_a": "assert f(1) == 2\\n...",           # Python asserts for query_a (python sides)
     "tests_b": "...",                              # ... and for query_b
     "identifiers_a": ["sortPrices"],               # optional: names query_a gives that
     "identifiers_b": ["sortPrices"]}               #   its answer must carry (ast mode)

Languages (:data:`LANGUAGES`): python, javascript, rust, go, bash, and SQL as
``sql`` (portable) or a dialect, ``postgresql`` / ``mysql``. The expected
answers are code, bare or in one fenced block. Each answer's language is
recognised from the code itself (:func:`detect_language`); a query for a SQL
dialect accepts portable SQL, a query for plain ``sql`` accepts any dialect
(:func:`accepts`).

Decision, in order:

1. Consistency (else undecided): each answer is in a language its own query
   accepts; a python side that carries tests passes them
   (``answer_a + tests_a``, ``answer_b + tests_b``, each run in
   :mod:`~cacheeval.verify.sandbox`); every name in ``identifiers_x`` occurs in
   answer x.
2. Language identity: if query_b does not accept the cached answer's language
   the row is MISS (a Python answer cannot serve a JavaScript request, nor
   ``ON CONFLICT`` a MySQL one). ``mode == "lang"`` asserts that this step
   decides; if it does not, the payload is inconsistent.
3. ``mode == "tests"`` (method ``pytest_sandbox``; both sides python): HIT iff
   the cached answer passes all of query_b's tests, run as plain ``assert``
   statements after the answer's code in a fresh sandboxed interpreter. A query
   that renames an identifier has tests that call the new name, so the old
   answer fails them.
4. ``mode == "ast"`` (method ``ast_diff``): HIT iff the two answers are equal
   after normalisation (:func:`normalize_code`: ``ast.dump`` for Python, a
   comment- and layout-free token stream otherwise) and the cached answer
   carries every name in ``identifiers_b``. This is a canonical-answer
   comparison: query_b's expected answer is its reference solution, so any
   other token stream (a flipped comparator, another literal, another name)
   counts as a different answer.

Methods: ``tests`` goes with ``pytest_sandbox``; ``ast`` and ``lang`` with
``ast_diff``. A sandbox timeout is undecided, never a silent MISS.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Sequence

from ..schema import HIT, MISS, Row
from .result import Check
from .sandbox import SandboxResult, run_many

LANGUAGES: tuple[str, ...] = (
    "python",
    "javascript",
    "rust",
    "go",
    "bash",
    "sql",
    "postgresql",
    "mysql",
)
SQL_FAMILY: frozenset[str] = frozenset({"sql", "postgresql", "mysql"})
MODES: tuple[str, ...] = ("tests", "ast", "lang")
METHOD_OF_MODE: dict[str, str] = {"tests": "pytest_sandbox", "ast": "ast_diff", "lang": "ast_diff"}

# --- recognising the language of an answer ------------------------------------

_FENCE = re.compile(r"```[\w+-]*[ \t]*\n(.*?)```", re.DOTALL)
_SQL_START = re.compile(
    r"^\s*(SELECT|WITH|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\b", re.IGNORECASE
)
_PG_MARKERS = re.compile(
    r"ON\s+CONFLICT|\bILIKE\b|::\s*[a-z]|\bSTRING_AGG\b|\bDATE_TRUNC\b|\bRETURNING\b"
    r"|\bSERIAL\b|\bGENERATE_SERIES\b|\bDISTINCT\s+ON\b|\bINTERVAL\s+'|\$\d+",
    re.IGNORECASE,
)
_MYSQL_MARKERS = re.compile(
    r"ON\s+DUPLICATE\s+KEY|\bGROUP_CONCAT\b|\bAUTO_INCREMENT\b|\bDATE_FORMAT\b|`\w+`"
    r"|\bIFNULL\b|\bINTERVAL\s+\d+\s+[A-Z]+\b|\bLIMIT\s+\d+\s*,\s*\d+",
    re.IGNORECASE,
)
_RUST = re.compile(r"\bfn\s+\w+\s*[<(]")
_GO = re.compile(r"\bfunc\s+(\([^)]*\)\s*)?\w+\s*\(")
_JS = re.compile(r"\bfunction\b|=>|\b(const|let|var)\s+\w+\s*=|\bconsole\.")
_PY_STMT = re.compile(r"^(async\s+def|def|class|import|from\s+\S+\s+import|@)\b", re.MULTILINE)
_SHELL_START = re.compile(r"^\s*[a-z][\w.+-]*(\s|$)")


def extract_code(answer: str) -> str:
    """The code of an answer: the first fenced block if there is one, else the text."""
    m = _FENCE.search(answer)
    return (m.group(1) if m else answer).strip("\n")


def _parses_as_python(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def detect_language(code: str) -> str | None:
    """The language ``code`` is written in, or None when it is not recognisable.

    Rules, first match wins: SQL (starts with a statement keyword; the dialect
    from dialect-only syntax, ``sql`` when portable, None when it mixes
    dialects); Python (parses and has a ``def``/``class``/``import``
    statement); Rust (``fn name(``); Go (``func name(``); JavaScript
    (``function``, ``=>``, ``const x =`` ...); bash (starts with a command word).
    """
    if _SQL_START.match(code):
        pg, my = bool(_PG_MARKERS.search(code)), bool(_MYSQL_MARKERS.search(code))
        if pg and my:
            return None
        return "postgresql" if pg else "mysql" if my else "sql"
    if _PY_STMT.search(code) and _parses_as_python(code):
        return "python"
    if _RUST.search(code):
        return "rust"
    if _GO.search(code):
        return "go"
    if _JS.search(code):
        return "javascript"
    if _SHELL_START.match(code):
        return "bash"
    return None


def accepts(requested: str, actual: str | None) -> bool:
    """Whether an answer written in ``actual`` serves a query asking for ``requested``.

    Equal languages always do; a dialect request accepts portable ``sql``; a
    plain ``sql`` request accepts any dialect.
    """
    if actual is None:
        return False
    if requested == actual:
        return True
    if requested in SQL_FAMILY and actual in SQL_FAMILY:
        return actual == "sql" or requested == "sql"
    return False


# --- normalisation for ast mode ------------------------------------------------

_C_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_SQL_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_SH_COMMENTS = re.compile(r"(^|\s)#[^\n]*")
_TOKEN = re.compile(
    r"""
    "(?:\\.|[^"\\])*"            # double-quoted string
    | '(?:\\.|[^'\\])*'          # single-quoted string
    | `(?:\\.|[^`\\])*`          # backtick string / template / quoted identifier
    | [A-Za-z_$][\w$]*           # word
    | \d[\w.]*                   # number
    | ===|!==|=>|==|!=|<=|>=|&&|\|\||\?\?|\?\.|\.\.\.|::|->|\+=|-=|\*=|/=|<<|>>|\+\+|--
    | \S                         # any other single character
    """,
    re.VERBOSE,
)
_CLOSERS = frozenset({")", "]", "}"})
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


def _tokens(code: str, lang: str) -> list[str]:
    if lang in SQL_FAMILY:
        code = _SQL_COMMENTS.sub(" ", code)
    elif lang == "bash":
        code = _SH_COMMENTS.sub(" ", code)
    else:
        code = _C_COMMENTS.sub(" ", code)
    toks = _TOKEN.findall(code)
    out: list[str] = []
    for i, t in enumerate(toks):
        if t[0] in "'\"" and lang in ("javascript", "python"):
            t = "'" + t[1:-1] + "'"  # quote style carries no meaning in these languages
        elif t[0] not in "'\"`" and lang in SQL_FAMILY:
            t = t.casefold()  # SQL keywords and unquoted names are case-insensitive
        if t == ";" and lang in ("javascript", "go", "sql", "postgresql", "mysql"):
            if lang in ("javascript", "go") or i == len(toks) - 1:
                continue  # optional statement terminators (a trailing one in SQL)
        if t == "," and i + 1 < len(toks) and toks[i + 1] in _CLOSERS and lang != "bash":
            continue  # trailing comma before a closing bracket
        out.append(t)
    return out


def normalize_code(code: str, lang: str) -> str:
    """A form of ``code`` in which layout, comments and other meaning-free choices
    are gone: ``ast.dump`` of the module for Python (a syntax error leaves the
    token form), else the space-joined token stream (see :func:`_tokens`)."""
    if lang == "python":
        try:
            return ast.dump(ast.parse(code))
        except SyntaxError:
            pass
    return " ".join(_tokens(code, lang))


def identifiers(code: str) -> frozenset[str]:
    """Every identifier-like word in ``code`` (case kept)."""
    return frozenset(_WORD.findall(code))


# --- running tests (memoised: many rows share an answer and its own tests) ------

_RESULTS: dict[tuple[str, str], SandboxResult] = {}
_RESULTS_LOCK = threading.Lock()


def run_tests_cached(jobs: Sequence[tuple[str, str]]) -> list[SandboxResult]:
    """Run each ``(code, tests)`` job in the sandbox (in parallel threads), reusing
    the result of an identical earlier job: the sandbox is deterministic for the
    code the benchmark holds, and the whole shard re-runs far fewer programs."""
    with _RESULTS_LOCK:
        todo = list(dict.fromkeys(j for j in jobs if j not in _RESULTS))
    if todo:
        fresh = run_many(todo)
        with _RESULTS_LOCK:
            for job, result in zip(todo, fresh, strict=True):
                # A timeout may come from a loaded machine, a refusal from a
                # missing sandbox: never memoise either.
                if not result.timed_out and result.undecided is None:
                    _RESULTS[job] = result
        done = dict(zip(todo, fresh, strict=True))
    else:
        done = {}
    with _RESULTS_LOCK:
        return [done.get(j) or _RESULTS[j] for j in jobs]


def _short(result: SandboxResult) -> str:
    lines = [ln for ln in result.stderr_tail.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit status {result.returncode}"


# --- the check ----------------------------------------------------------------------


def _str_list(value: object) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return list(value)
    return None


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    mode = p.get("mode")
    if mode not in MODES:
        return Check(None, f"code payload mode {mode!r} is not one of {', '.join(MODES)}")
    if row.verification_method != METHOD_OF_MODE[mode]:
        return Check(
            None,
            f"mode {mode!r} needs method {METHOD_OF_MODE[mode]!r}, not {row.verification_method!r}",
        )
    lang_a, lang_b = p.get("lang_a"), p.get("lang_b")
    if lang_a not in LANGUAGES or lang_b not in LANGUAGES:
        return Check(
            None, f"lang_a/lang_b must be in {', '.join(LANGUAGES)}, got {lang_a!r}/{lang_b!r}"
        )
    assert isinstance(lang_a, str) and isinstance(lang_b, str)
    tests_a, tests_b = p.get("tests_a"), p.get("tests_b")
    for name, tests in (("tests_a", tests_a), ("tests_b", tests_b)):
        if tests is not None and (not isinstance(tests, str) or not tests.strip()):
            return Check(None, f"{name} must be a non-empty string when present")
    if mode == "tests" and (lang_a, lang_b) != ("python", "python"):
        return Check(None, "tests mode needs python on both sides")
    if mode == "tests" and (tests_a is None or tests_b is None):
        return Check(None, "tests mode needs tests_a and tests_b")
    ids_a, ids_b = _str_list(p.get("identifiers_a")), _str_list(p.get("identifiers_b"))
    if ids_a is None or ids_b is None:
        return Check(None, "identifiers_a/identifiers_b must be lists of non-empty strings")
    if row.expected_answer_a is None or row.expected_answer_b is None:
        return Check(None, "expected answers are missing")
    code_a, code_b = extract_code(row.expected_answer_a), extract_code(row.expected_answer_b)
    det_a, det_b = detect_language(code_a), detect_language(code_b)

    # 1. consistency of each side with its own query
    for side, det, lang in (("a", det_a, lang_a), ("b", det_b, lang_b)):
        if not accepts(lang, det):
            return Check(
                None,
                f"expected_answer_{side} reads as {det or 'unknown'}, query_{side} asks for {lang}",
            )
    for side, code, ids in (("a", code_a, ids_a), ("b", code_b, ids_b)):
        missing = [n for n in ids if n not in identifiers(code)]
        if missing:
            return Check(
                None, f"expected_answer_{side} lacks identifier(s) {missing} its query names"
            )
    sides: list[str] = []
    jobs: list[tuple[str, str]] = []
    if lang_a == "python" and tests_a is not None:
        sides.append("a")
        jobs.append((code_a, tests_a))
    if lang_b == "python" and tests_b is not None:
        sides.append("b")
        jobs.append((code_b, tests_b))
    cross = mode == "tests" and accepts(lang_b, det_a)
    if cross:
        assert isinstance(tests_b, str)
        jobs.append((code_a, tests_b))
    results = run_tests_cached(jobs)
    for result in results:
        if result.undecided is not None:  # no isolation, a blocked escape, a stray signal
            return Check(None, f"undecided: {result.undecided}")
    for side, result in zip(sides, results, strict=False):
        if not result.passed:
            why = "timed out" if result.timed_out else _short(result)
            return Check(None, f"expected_answer_{side} fails its own tests ({why})")

    # 2. language identity
    if not accepts(lang_b, det_a):
        return Check(MISS, f"cached answer is {det_a}; query_b asks for {lang_b}")
    if mode == "lang":
        return Check(None, f"lang mode, but a {det_a} answer serves a {lang_b} query")

    # 3. behaviour under query_b's tests
    if mode == "tests":
        result = results[-1]
        if result.timed_out:
            return Check(None, "cached answer timed out on query_b's tests")
        if result.passed:
            return Check(HIT, "cached answer passes all of query_b's tests")
        return Check(MISS, f"cached answer fails query_b's tests: {_short(result)}")

    # 4. canonical-answer comparison
    assert det_a is not None and det_b is not None
    norm_lang = det_b if det_b in SQL_FAMILY else lang_b
    missing_b = [n for n in ids_b if n not in identifiers(code_a)]
    if missing_b:
        return Check(MISS, f"cached answer lacks identifier(s) {missing_b} that query_b names")
    if normalize_code(code_a, norm_lang) == normalize_code(code_b, norm_lang):
        return Check(HIT, "cached answer equals query_b's reference answer after normalisation")
    return Check(MISS, "cached answer differs from query_b's reference answer after normalisation")
