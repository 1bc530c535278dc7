"""``cacheeval stress`` end to end on files the tests write: determinism, the
rows load and verify (``cacheeval verify --rows``), policy prompts, JSONL and
CSV inputs, the blind audit sheet, and bad input (``path:LINE``, exit 2, no
traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.dataset import load_bench
from cacheeval.schema import MISS, subscore_of
from cacheeval.verify.perturbation import KINDS

PROMPTS = [
    "How do I reverse a list in Python?",
    "What's the difference between TCP and UDP?",
    "How many miles is it from Paris to London?",
    "Convert 25 degrees Celsius to Fahrenheit.",
    "My order hasn't arrived after 10 days, what should I do?",
    "Write a short poem about the ocean at night.",
    "What's the weather in Oslo right now?",
    "How do I sort a list in ascending order?",
    "",
    "Who wrote Pride and Prejudice?",
]


def _prompts(tmp_path: Path, lines: list[str] = PROMPTS) -> Path:
    path = tmp_path / "prompts.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _stress(*args: str) -> int:
    return main(["stress", *args])


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_same_seed_same_bytes_other_seed_other_rows(tmp_path: Path) -> None:
    src = _prompts(tmp_path)
    outs = [tmp_path / f"{name}.jsonl" for name in ("a", "b", "c")]
    assert _stress(str(src), "--out", str(outs[0]), "--seed", "5") == 0
    assert _stress(str(src), "--out", str(outs[1]), "--seed", "5") == 0
    assert _stress(str(src), "--out", str(outs[2]), "--seed", "6") == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert outs[0].read_bytes() != outs[2].read_bytes()


def test_rows_load_verify_and_say_how_they_were_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _prompts(tmp_path), tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(out), "--per-prompt", "3") == 0
    summary = capsys.readouterr().out
    assert "9 prompts -> " in summary
    # the poem's and the weather's rows are counted by kind here, under policy in
    # a report: the summary says so, or its counts look wrong beside the report's
    assert "rows per kind (the never-cache prompts' rows included;" in summary
    (tmp_path / "plain").mkdir()
    plain = _prompts(tmp_path / "plain", PROMPTS[:2])
    assert _stress(str(plain), "--out", str(tmp_path / "plain" / "rows.jsonl")) == 0
    assert "\nrows per kind:\n" in capsys.readouterr().out
    rows = load_bench(out)
    assert 9 <= len(rows) <= 27
    assert len({r.id for r in rows}) == len(rows)
    for row in rows:
        assert row.subcategory in KINDS
        assert row.construction_method == "stress_perturbation"
        assert row.source is not None and row.source.startswith("prompts.txt:")
        assert row.split == "test"
    lines = {int(r.source.split(":")[1]) for r in rows if r.source}
    assert 9 not in lines  # the blank line yields nothing
    # the poem and the live weather are never cached: every row of them is MISS
    for row in rows:
        if row.source in ("prompts.txt:6", "prompts.txt:7"):
            assert row.binary_label == MISS
            assert row.verification_method == "policy_no_cache"
            assert subscore_of(row) == "policy"
    assert main(["verify", "--rows", str(out), "--jobs", "1"]) == 0
    assert "disagreements: 0" in capsys.readouterr().out


def test_verify_rows_reports_a_tampered_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _prompts(tmp_path), tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(out)) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["query_b"] = first["query_b"] + " please"
    lines[0] = json.dumps(first, ensure_ascii=False)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["verify", "--rows", str(out), "--jobs", "1"]) == 1
    assert "disagreements: 1" in capsys.readouterr().out


def test_jsonl_with_system_prompt_and_turns(tmp_path: Path) -> None:
    src = tmp_path / "chats.jsonl"
    records = [
        {"msg": "What should I pack?", "sys": None,
         "turns": [{"role": "user", "content": "I'm flying to Rome on Monday."},
                   {"role": "assistant", "content": "Nice! How can I help?"}]},
        {"msg": "What's my balance?", "sys": "You help the member. Member: Chloe Dubois",
         "turns": None},
        {"msg": "skip me", "sys": None, "turns": None, "split": "train"},
    ]  # fmt: skip
    records[0]["split"] = records[1]["split"] = "dev"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    fields = ["--field", "msg", "--system-field", "sys", "--turns-field", "turns"]
    code = _stress(
        str(src), *fields, "--where", "split=dev", "--out", str(out), "--per-prompt", "6"
    )
    assert code == 0
    rows = load_bench(out)
    assert {r.source for r in rows} == {"chats.jsonl:1", "chats.jsonl:2"}
    turn_rows = [r for r in rows if r.source == "chats.jsonl:1"]
    assert any(r.subcategory in ("turns_other", "turns_edit") for r in turn_rows)
    assert all(r.context_a for r in turn_rows)
    member = [r for r in rows if r.source == "chats.jsonl:2"]
    assert member and all(r.verification_method == "policy_no_cache" for r in member)
    assert all((r.verification_payload or {})["policy"]["rule"] == "personal_data" for r in member)
    assert main(["verify", "--rows", str(out), "--jobs", "1"]) == 0


def test_csv_column(tmp_path: Path) -> None:
    src = tmp_path / "tickets.csv"
    src.write_text('id,text\n1,"How do I reset my router, step by step?"\n2,Is 91 prime?\n')
    out = tmp_path / "rows.jsonl"
    assert _stress(str(src), "--column", "text", "--out", str(out)) == 0
    assert {r.source for r in load_bench(out)} == {"tickets.csv:2", "tickets.csv:3"}


def test_audit_sheet_and_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, rows = _prompts(tmp_path), tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(rows)) == 0
    sheet = tmp_path / "sheet.jsonl"
    assert _stress(str(rows), "--audit", "12", "--out", str(sheet)) == 0
    items = [json.loads(line) for line in sheet.read_text().splitlines()]
    assert len(items) == 12
    for item in items:  # blind: the two requests and two blanks, nothing else
        assert set(item) == {"item", "a", "b", "same_answer", "natural"}
    key = {
        json.loads(line)["item"]: json.loads(line)
        for line in (tmp_path / "sheet.key.jsonl").read_text().splitlines()
    }
    # a reader who agrees on every item but calls the first one unnatural and
    # gets the second one wrong
    for i, item in enumerate(items):
        label = key[item["item"]]["edit_label"]
        item["same_answer"] = label if i != 1 else ("MISS" if label == "HIT" else "HIT")
        item["natural"] = i != 0
    sheet.write_text("".join(json.dumps(item) + "\n" for item in items))
    capsys.readouterr()
    assert _stress("--audit-score", str(sheet)) == 0
    table = capsys.readouterr().out
    last = table.splitlines()[-1].split()
    assert last[:2] == ["all", "12"]
    assert last[2] == "0.917"  # agreement 11/12
    assert last[5] == "0.917"  # natural 11/12
    assert last[8] == "0.833"  # pass 10/12


def test_audit_score_needs_every_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, rows = _prompts(tmp_path), tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(rows)) == 0
    sheet = tmp_path / "sheet.jsonl"
    assert _stress(str(rows), "--audit", "3", "--out", str(sheet)) == 0
    capsys.readouterr()
    assert _stress("--audit-score", str(sheet)) == 2
    assert _error(capsys).startswith(f"stress: {sheet}:1: same_answer is null")


def _filled_sheet(tmp_path: Path) -> tuple[Path, list[dict], list[dict]]:
    src, rows = _prompts(tmp_path), tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(rows)) == 0
    sheet = tmp_path / "sheet.jsonl"
    assert _stress(str(rows), "--audit", "4", "--out", str(sheet)) == 0
    items = [json.loads(line) for line in sheet.read_text().splitlines()]
    keys = [json.loads(line) for line in (tmp_path / "sheet.key.jsonl").read_text().splitlines()]
    for item in items:
        item.update(same_answer="HIT", natural=True)
    return sheet, items, keys


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (lambda items, keys: items[1].update(natural=None), "sheet:2",
         "natural is null: fill in true or false"),
        (lambda items, keys: items[1].update(natural=1), "sheet:2",
         "natural is 1: fill in true or false"),
        (lambda items, keys: items[2].update(item=[1]), "sheet:3", "an item the key does not know"),
        (lambda items, keys: items.append(dict(items[0])), "sheet:5", "is in the sheet twice"),
        (lambda items, keys: keys[1].pop("item"), "key:2", "not a key line"),
        (lambda items, keys: keys[1].update(item="2"), "key:2", "not a key line"),
        (lambda items, keys: keys[1].update(item=[2]), "key:2", "not a key line"),
        (lambda items, keys: keys[1].update(edit_label=None), "key:2", "not a key line"),
        (lambda items, keys: keys.clear(), "key:1", "no items in the key"),
    ],
)  # fmt: skip
def test_audit_score_bad_sheet_or_key_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object, where: str, message: str
) -> None:
    # these were tracebacks (a key line without an int item, a list as an item),
    # an error without its file (item "abc"), or counted as natural (a blank)
    sheet, items, keys = _filled_sheet(tmp_path)
    edit(items, keys)  # type: ignore[operator]
    sheet.write_text("".join(json.dumps(i) + "\n" for i in items))
    key = tmp_path / "sheet.key.jsonl"
    key.write_text("".join(json.dumps(k) + "\n" for k in keys))
    capsys.readouterr()
    assert _stress("--audit-score", str(sheet)) == 2
    path, line = where.split(":")
    expected = f"stress: {sheet if path == 'sheet' else key}:{line}: "
    got = _error(capsys)
    assert got.startswith(expected) and message in got, got


def test_audit_of_a_file_not_made_by_stress_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a benchmark's hidden test row used to get "pass the labels file", which
    # --audit cannot take
    from cacheeval.schema import HIDDEN_TEST_FIELDS

    src, rows = _prompts(tmp_path, PROMPTS[:2]), tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(rows)) == 0
    first = json.loads(rows.read_text(encoding="utf-8").splitlines()[0])
    bench = tmp_path / "bench.jsonl"
    hidden = {**first, **dict.fromkeys(HIDDEN_TEST_FIELDS), "construction_method": None}
    bench.write_text(json.dumps(hidden) + "\n")
    capsys.readouterr()
    assert _stress(str(bench), "--audit", "3", "--out", str(tmp_path / "s.jsonl")) == 2
    assert _error(capsys) == (
        f"stress: {bench}:1: not a row made by cacheeval stress "
        "(its construction_method is null, not stress_perturbation)"
    )


@pytest.mark.parametrize(
    ("name", "data", "args", "message"),
    [
        ("empty.txt", b"", [], "empty.txt:1: no prompts in the file"),
        ("blank.txt", b"\n  \n", [], "blank.txt:1: no prompts in the file"),
        ("binary.txt", b"hello\nab\x00\x01cd\n", [], "binary.txt:2: binary data"),
        ("latin1.txt", b"fine\ncaf\xe9 au lait\n", [], "latin1.txt:2: not UTF-8 text"),
        ("missing.csv", b"id,body\n1,hi\n", ["--column", "text"],
         "missing.csv:1: no column 'text'"),
        ("nocol.csv", b"id,text\n1,hi\n", [], "nocol.csv:1: a CSV file needs --column"),
        ("field.jsonl", b'{"text": "hi"}\n{"body": "x"}\n', ["--field", "text"],
         "field.jsonl:2: no field 'text'"),
        ("notjson.jsonl", b'{"text": "hi"}\n{oops\n', ["--field", "text"],
         "notjson.jsonl:2: not valid JSON"),
        ("binary.jsonl", b'{"text": "hi"}\n\x00\x00\n', ["--field", "text"],
         "binary.jsonl:2: binary data"),
        ("badutf.csv", b"text\nok\n\xff\xfe\n", ["--column", "text"],
         "badutf.csv:3: not UTF-8 text"),
        ("null.jsonl", b'{"text": null}\n', ["--field", "text"],
         "null.jsonl:1: text is null, not a string"),
        ("array.jsonl", b'{"text": "hi"}\n[1, 2]\n', ["--field", "text"],
         "array.jsonl:2: expected a JSON object, got an array"),
        ("long.txt", b"How " + b"a" * 100_001 + b"\n", [],
         "long.txt:1: the line is longer than 100000 characters"),
        ("where.jsonl", b'{"text": "hi there", "split": "dev"}\n', ["--field", "text",
         "--where", "split=test"], "where.jsonl:1: no record of the 1 has split=test (--where)"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    data: bytes,
    args: list[str],
    message: str,
) -> None:
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / "rows.jsonl"
    assert _stress(str(src), *args, "--out", str(out)) == 2
    line = _error(capsys)
    assert line.startswith(f"stress: {tmp_path / message}"), line
    assert not out.exists()  # no half-written output


def test_missing_file_and_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _stress(str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o.jsonl")) == 2
    assert "no such file" in _error(capsys)
    # a directory exists: "no such file" sent people looking for a typo
    assert _stress(str(tmp_path), "--out", str(tmp_path / "o.jsonl")) == 2
    assert _error(capsys) == f"stress: {tmp_path}: is a directory, not a file"
    assert _stress("--audit-score", str(tmp_path)) == 2
    assert _error(capsys) == f"stress: {tmp_path}: is a directory, not a file"
    assert main(["verify", "--rows", str(tmp_path)]) == 2
    assert _error(capsys) == f"verify: error: {tmp_path}: is a directory, not a file"
    assert main(["import-pairs", str(tmp_path), "--domain", "qa_open", "--out", "x.jsonl"]) == 2
    assert _error(capsys) == f"import-pairs: {tmp_path}: is a directory, not a file"
    # an output that is a directory: one line naming it (--audit was a traceback)
    rows = tmp_path / "rows.jsonl"
    assert _stress(str(_prompts(tmp_path)), "--out", str(rows)) == 0
    capsys.readouterr()
    assert _stress(str(rows), "--audit", "3", "--out", str(tmp_path)) == 2
    assert _error(capsys) == f"stress: {tmp_path}: Is a directory"
    src = _prompts(tmp_path)
    assert _stress(str(src), "--out", str(tmp_path / "o.jsonl"), "--per-prompt", "0") == 2
    assert "--per-prompt" in _error(capsys)


def test_out_over_the_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `--out` naming the input replaced the prompts (or the rows, with --audit)
    # by the output
    src = _prompts(tmp_path)
    before = src.read_bytes()
    assert _stress(str(src), "--out", str(src)) == 2
    assert _error(capsys) == f"stress: {src}: is the input; write --out somewhere else"
    assert src.read_bytes() == before
    rows = tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(rows)) == 0
    made = rows.read_bytes()
    capsys.readouterr()
    assert _stress(str(rows), "--audit", "3", "--out", str(tmp_path / "." / "rows.jsonl")) == 2
    assert "is the input" in _error(capsys)
    key_clash = tmp_path / "x.key.jsonl"
    key_clash.write_bytes(made)
    assert _stress(str(key_clash), "--audit", "3", "--out", str(tmp_path / "x.jsonl")) == 2
    assert _error(capsys) == f"stress: {key_clash}: is the input; write --out somewhere else"
    assert rows.read_bytes() == made and key_clash.read_bytes() == made


def test_verify_rows_skips_hidden_test_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cacheeval.schema import HIDDEN_TEST_FIELDS

    src, out = _prompts(tmp_path, PROMPTS[:2]), tmp_path / "rows.jsonl"
    assert _stress(str(src), "--out", str(out)) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    hidden = {**rows[0], **dict.fromkeys(HIDDEN_TEST_FIELDS), "id": "cb-code-9999"}
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in [hidden, *rows[1:]]))
    capsys.readouterr()
    assert main(["verify", "--rows", str(mixed), "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    assert f"verified {len(rows) - 1} rows" in captured.out
    assert "1 hidden test rows skipped" in captured.err
    only_hidden = tmp_path / "hidden.jsonl"
    only_hidden.write_text(json.dumps(hidden) + "\n")
    assert main(["verify", "--rows", str(only_hidden), "--jobs", "1"]) == 2


def test_jsonl_tools_reach_the_never_cache_rules(tmp_path: Path) -> None:
    # "Send $50 to Ana" asks an offered money-moving tool to act: never served,
    # whatever the edit; the same request without tools is an ordinary one
    send = {"type": "function", "function": {"name": "send_money", "parameters": {}}}
    src = tmp_path / "calls.jsonl"
    records = [
        {"msg": "Send $50 to Ana from my checking account", "tools": [send]},
        {"msg": "Send $50 to Ana from my checking account", "tools": None},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    code = _stress(str(src), "--field", "msg", "--tools-field", "tools", "--out", str(out))
    assert code == 0
    rows = load_bench(out)
    tooled = [r for r in rows if r.source == "calls.jsonl:1"]
    plain = [r for r in rows if r.source == "calls.jsonl:2"]
    assert tooled and plain
    assert all(r.verification_method == "policy_no_cache" and r.binary_label == MISS
               for r in tooled)  # fmt: skip
    assert all((r.verification_payload or {})["policy"]["rule"] == "mutation" for r in tooled)
    assert all(r.tools_a == r.tools_b == (send,) for r in tooled)
    assert all(r.verification_method != "policy_no_cache" and not r.tools_a for r in plain)
    assert main(["verify", "--rows", str(out), "--jobs", "1"]) == 0


def test_a_declared_device_tool_makes_the_prompt_never_cached(tmp_path: Path) -> None:
    """A prompt that asks for an offered tool declaring ``"policy": "mutation"``
    gives MISS rows by policy (as the benchmark labels "Set a timer ..."), and
    ``cacheeval verify --rows`` derives the same; a question about the action
    beside the same tools stays an ordinary prompt."""
    timer = {"name": "set_timer", "description": "Start a countdown timer.", "policy": "mutation"}
    src = tmp_path / "calls.jsonl"
    records = [
        {"msg": "Set a timer for 45 minutes for the lasagna", "tools": [timer]},
        {"msg": "How do I set a timer on my phone?", "tools": [timer]},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert _stress(str(src), "--field", "msg", "--tools-field", "tools", "--out", str(out)) == 0
    rows = load_bench(out)
    asked = [r for r in rows if r.source == "calls.jsonl:1"]
    question = [r for r in rows if r.source == "calls.jsonl:2"]
    assert asked and question
    assert all(r.verification_method == "policy_no_cache" and r.binary_label == MISS
               for r in asked)  # fmt: skip
    assert {(r.verification_payload or {})["policy"]["rule"] for r in asked} == {"mutation"}
    assert all(r.verification_method != "policy_no_cache" for r in question)
    assert main(["verify", "--rows", str(out), "--jobs", "1"]) == 0


def test_tools_that_are_not_a_list_of_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "calls.jsonl"
    src.write_text(
        json.dumps({"msg": "hi", "tools": None}) + "\n"
        + json.dumps({"msg": "Send $5 to Bo", "tools": "send_money"}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    code = _stress(str(src), "--field", "msg", "--tools-field", "tools", "--out",
                   str(tmp_path / "rows.jsonl"))  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert f"{src}:2: tools must be a list of tool-definition objects" in err
    assert "Traceback" not in err
    assert not (tmp_path / "rows.jsonl").exists()


def test_workers_write_the_same_bytes_and_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--workers``: the rows are made in worker processes, chunk by chunk, and
    numbered in input order by the writer, so the file and the summary are those
    of one process (system prompts, turns and repeated prompts included)."""
    from cacheeval.benches.stress.edits import Prompt
    from cacheeval.benches.stress.generate import StressStats, stress_lines
    from cacheeval.benches.stress.parallel import stress_lines_parallel

    src = tmp_path / "chats.jsonl"
    turns = [{"role": "user", "content": "I'm flying to Rome on Monday."},
             {"role": "assistant", "content": "Nice! How can I help?"}]  # fmt: skip
    records = [
        {"msg": q, "sys": "You are a terse assistant." if i % 3 == 0 else None,
         "turns": turns if i % 4 == 1 else None}
        for i, q in enumerate(PROMPTS * 4)
    ]  # fmt: skip
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    fields = ["--field", "msg", "--system-field", "sys", "--turns-field", "turns"]
    outs, summaries = [], []
    for workers in ("0", "2"):
        out = tmp_path / f"rows{workers}.jsonl"
        assert _stress(str(src), *fields, "--out", str(out), "--workers", workers) == 0
        outs.append(out.read_bytes())
        summaries.append(capsys.readouterr().out.replace(str(out), "OUT"))
    assert outs[0] == outs[1] and outs[0].count(b"\n") >= 100
    assert summaries[0] == summaries[1]
    # many small chunks (the CLI's chunk holds this whole file): same lines, same counts
    prompts = [Prompt(r["msg"], r["sys"], None, "p.txt", i) for i, r in enumerate(records, 1)]
    one, two = StressStats(), StressStats()
    text = "".join(stress_lines(prompts, seed=4, per_prompt=3, stats=one))
    seen: list[int] = []
    made = stress_lines_parallel(
        prompts, seed=4, per_prompt=3, stats=two, workers=2, chunk=3,
        progress=lambda done, _: seen.append(done),
    )  # fmt: skip
    assert "".join(made) == text
    assert one == two and one.prompts == len(prompts)
    assert seen == sorted(seen) and seen[-1] == len(prompts) and len(seen) == -(-len(prompts) // 3)
    with pytest.raises(ValueError, match="workers"):
        next(stress_lines_parallel(prompts, seed=4, workers=0))


def test_workers_keep_the_readers_file_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "chats.jsonl"
    good = "".join(json.dumps({"msg": q}) + "\n" for q in PROMPTS[:5])
    src.write_text(good + "{not json\n", encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert _stress(str(src), "--field", "msg", "--out", str(out), "--workers", "2") == 2
    assert _error(capsys).startswith(f"stress: {src}:6:")
    assert not out.exists()
    assert _stress(str(src), "--field", "msg", "--out", str(out), "--workers", "-1") == 2
    assert "--workers" in _error(capsys)


def test_workers_beyond_the_cpus_are_refused_before_any_process_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `stress --workers 100000` once forked 100,000 processes on a 2-core
    # machine; `verify --jobs` had the same hole
    from cacheeval.benches.stress import parallel
    from cacheeval.support.cpus import WORKERS_PER_CPU, max_workers
    from cacheeval.verify import engine

    started: list[int] = []
    for module in (parallel, engine):
        monkeypatch.setattr(module, "ProcessPoolExecutor", lambda **kw: started.append(1))
    src, out = _prompts(tmp_path), tmp_path / "rows.jsonl"
    limit = max_workers()
    assert limit >= WORKERS_PER_CPU
    why = f"({WORKERS_PER_CPU} per CPU this process may use; the output is the same with fewer)"
    assert _stress(str(src), "--out", str(out), "--workers", str(limit + 1)) == 2
    assert _error(capsys) == f"stress: --workers must be at most {limit} {why}, got {limit + 1}"
    assert started == [] and not out.exists()
    assert _stress(str(src), "--out", str(out)) == 0
    capsys.readouterr()
    assert main(["verify", "--rows", str(out), "--jobs", str(limit + 1)]) == 2
    assert _error(capsys) == f"verify: --jobs must be at most {limit} {why}, got {limit + 1}"
    assert started == []


def _chat_file(tmp_path: Path, records: list[object]) -> Path:
    src = tmp_path / "requests.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return src


def test_chat_requests_by_messages_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--messages-field``: a chat request's last user message is the request
    (an answer logged after it is left out), its system and developer messages
    the system prompt, the messages before it the turns, and its ``tools`` the
    tools; a request that is not text is skipped and counted on stderr."""
    flights = {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Search flights.",
            "policy": "time_sensitive",
        },
    }
    src = _chat_file(tmp_path, [
        {"messages": [
            {"role": "system", "content": "You are a travel assistant for Acme Air."},
            {"role": "developer", "content": "Answer in one sentence."},
            {"role": "user", "content": "I'm flying to Rome next month."},
            {"role": "assistant", "content": "Lovely! How can I help?"},
            {"role": "user",
             "content": [{"type": "text", "text": "What should I pack for 5 days?"}]},
            {"role": "assistant", "content": "Light layers."}]},
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
        {"messages": [{"role": "user", "content": "Any flights from Chicago to Toronto tomorrow?"}],
         "tools": [flights]},
    ])  # fmt: skip
    out = tmp_path / "rows.jsonl"
    assert _stress(str(src), "--messages-field", "messages", "--out", str(out)) == 0
    err = capsys.readouterr().err
    assert (f"skipped 1 record(s): the request is not text (an image or audio part) "
            f"(first at {src}:2)") in err  # fmt: skip
    rows = load_bench(out)
    first = [r for r in rows if r.source == "requests.jsonl:1"]
    assert first and {r.query_a for r in first} == {"What should I pack for 5 days?"}
    assert {r.system_prompt_a for r in first} == {
        "You are a travel assistant for Acme Air. Answer in one sentence."  # spaces collapsed
    }
    assert all(r.context_a == ({"role": "user", "content": "I'm flying to Rome next month."},
                               {"role": "assistant", "content": "Lovely! How can I help?"})
               for r in first)  # fmt: skip
    # the travel assistant of a business is no user's profile: ordinary rows
    assert all(r.verification_method != "policy_no_cache" for r in first)
    third = [r for r in rows if r.source == "requests.jsonl:3"]
    assert third and all(r.verification_method == "policy_no_cache" for r in third)
    assert all(r.tools_a == (flights,) for r in third)
    assert not [r for r in rows if r.source == "requests.jsonl:2"]
    assert main(["verify", "--rows", str(out), "--jobs", "1"]) == 0


@pytest.mark.parametrize(
    ("records", "extra", "message"),
    [
        ([{"messages": "hi"}], [], "requests.jsonl:1: messages must be a list of {role, content}"),
        ([{"messages": [{"content": "hi"}]}], [], "messages must be a list of {role, content}"),
        ([{"text": "hi"}], [], "requests.jsonl:1: no field 'messages'"),
        ([{"messages": [{"role": "user", "content": "hi"}]}], ["--system-field", "s"],
         "--messages-field reads a JSONL file's chat requests whole"),
        ([{"messages": [{"role": "assistant", "content": "hi"}]}], [],
         "requests.jsonl:1: no prompts in the file"),
    ],
)  # fmt: skip
def test_chat_requests_bad_input(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    records: list[object],
    extra: list[str],
    message: str,
) -> None:
    src = _chat_file(tmp_path, records)
    out = tmp_path / "rows.jsonl"
    assert _stress(str(src), "--messages-field", "messages", *extra, "--out", str(out)) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
