"""Every feature extractor of the verified cache on hand-made pairs: the changes
that decide a cached answer's fate are flagged, surface variation is not."""

from __future__ import annotations

import pytest

from adapters.verified_cache.features import (
    EXTRACTORS,
    FEATURE_NAMES,
    Request,
    analyze,
    content_diff,
    context_features,
    critical_features,
    date_features,
    detect_language,
    difference_features,
    entity_features,
    feature_dict,
    identifier_features,
    language_features,
    number_features,
    operator_features,
    order_features,
    pair_features,
    substitution_spans,
    swap_features,
    tool_features,
    unit_features,
)


def run(extractor, a: str | Request, b: str | Request) -> dict[str, float]:
    sa, sb = analyze(a), analyze(b)
    return extractor(sa, sb, content_diff(sa, sb))


# --- the anchor examples of the benchmark -------------------------------------------


def test_variable_rename_is_flagged() -> None:
    f = run(identifier_features, "Solve x + 2 = 8", "Solve a + 2 = 8")
    assert f["var_diff"] == 2.0 and f["var_rename"] == 1.0
    same = run(identifier_features, "Solve x + 2 = 8", "solve x+2=8")
    assert same["var_diff"] == 0.0
    # "a" is an article here, not a variable
    assert analyze("Give me a recipe for bread").variables == ()


def test_direction_swap_is_flagged() -> None:
    assert run(order_features, "Drive NYC→FL", "Drive FL→NYC")["direction_swap"] > 0
    assert run(order_features, "Drive NYC->FL", "Drive FL->NYC")["direction_swap"] > 0
    assert (
        run(order_features, "Convert 250 euros to US dollars", "Convert 250 US dollars to euros")[
            "direction_swap"
        ]
        > 0
    )
    assert run(order_features, "Drive NYC→FL", "drive nyc → fl")["direction_swap"] == 0


def test_operand_change_is_flagged() -> None:
    f = run(number_features, "What is 25% of 80?", "What is 20% of 80?")
    assert f["num_any_diff"] == 1.0 and f["num_diff"] == 2.0
    assert run(number_features, "What is 25% of 80?", "what's 25 percent of 80")["num_diff"] == 0
    assert run(number_features, "at x = 2", "at x = -2")["num_any_diff"] == 1.0
    swap = run(number_features, "A price goes from $40 to $50", "A price goes from $50 to $40")
    assert swap["num_order_swap"] == 1.0 and swap["num_diff"] == 0.0


@pytest.mark.parametrize(
    ("a", "b", "swapped"),
    [
        ("What is 7 choose 3?", "What is 3 choose 7?", True),
        ("What is log base 1000 of 10?", "What is log base 10 of 1000?", True),
        ("Integrate x^2 from 3 to 0.", "Integrate x^2 from 0 to 3.", True),
        # a rewording moves the numbers and changes the words between them
        ("Calculate a 20% tip on an $86 bill", "The bill is $86: what is the tip at 20%?", False),
        ("Split $120 three ways with an 18% tip", "With an 18% tip, split $120 three ways", False),
        ("What is 7 choose 3?", "What is 7 choose 3?", False),
        ("whats 2**10", "whats 10**2", True),
        # two numbers side by side without an operator: a list, in any order
        ("mean of 4, 8, 15", "mean of 8, 4, 15", False),
    ],
)
def test_swapped_operands_are_a_critical_difference(a: str, b: str, swapped: bool) -> None:
    assert run(number_features, a, b)["num_order_swap"] == float(swapped)
    assert run(number_features, a, b)["num_diff"] == 0.0
    critical = run(critical_features, a, b)["critical_diff"]
    assert critical >= 1.0 if swapped else critical == 0.0


def test_a_word_and_its_prefixed_opposite_are_a_contrast_swap() -> None:
    for a, b in (
        ("What are the advantages of solar power?", "What are the disadvantages of solar power?"),
        ("Why is it unsafe to look at an eclipse?", "Why is it safe to look at an eclipse?"),
        ("Is it possible to divide by zero?", "Is it impossible to divide by zero?"),
    ):
        f = run(operator_features, a, b)
        assert f["contrast_swap"] == 1.0, (a, b)
        assert run(critical_features, a, b)["critical_diff"] >= 1.0
    # a word with a negating prefix that is not the other side's word is no swap
    assert (
        run(operator_features, "Is the index up to date?", "Is the dex up to date?")[
            "contrast_swap"
        ]
        == 0.0
    )
    assert run(operator_features, "Why is it unsafe?", "Why is it unsafe?")["contrast_swap"] == 0.0


def test_language_change_is_flagged() -> None:
    f = run(language_features, "Sort a list in Python", "Sort a list in JavaScript")
    assert f["prog_lang_conflict"] == 1.0
    assert (
        run(language_features, "Sort a list in Python", "sort a list in python")[
            "prog_lang_conflict"
        ]
        == 0.0
    )
    # a temperature scale after "degrees" is a unit, not the C language
    scale = analyze("f_to_c(fahrenheit) in Python, degrees F in, degrees C out")
    assert scale.prog_langs == ("python",) and "celsius" in scale.units
    assert analyze("Write it in C").prog_langs == ("c",)
    # syntax gives the language away without its name
    assert "rust" in analyze("Fix this: fn main() { let mut v = Vec::new(); }").prog_langs
    nat = run(language_features, "Tell me a joke in Spanish", "Tell me a joke in French")
    assert nat["nat_lang_conflict"] == 1.0
    assert (
        run(language_features, "What is the capital of France?", "¿Cuál es la capital de Francia?")[
            "text_lang_diff"
        ]
        == 1.0
    )
    assert detect_language("太阳系最大的行星是哪一颗？") == "zh"
    assert detect_language("Quelle est la capitale de la France ?") == "fr"
    # short questions: the question word tells the language, accents typed or not
    for text, lang in (
        ("Qui a écrit Don Quichotte ?", "fr"),
        ("Chi è l'autore del Don Chisciotte?", "it"),
        ("¿Quién pintó la Mona Lisa?", "es"),
        ("quien pinto la mona lisa?", "es"),
        ("Wer hat Faust geschrieben?", "de"),
        ("Quem escreveu Dom Casmurro?", "pt"),
        ("Who painted the Mona Lisa?", "en"),
    ):
        assert detect_language(text) == lang, text
    same = run(
        language_features, "Qui est l'auteur de Don Quichotte ?", "Qui a écrit Don Quichotte ?"
    )
    assert same["text_lang_diff"] == 0.0


def test_operator_and_function_words() -> None:
    assert (
        run(operator_features, "What is the derivative of x^2?", "What is the integral of x^2?")[
            "contrast_swap"
        ]
        == 1.0
    )
    assert (
        run(operator_features, "caesar() that encrypts text", "caesar() that decrypts text")[
            "contrast_swap"
        ]
        == 1.0
    )
    assert (
        run(operator_features, "Sort the list ascending", "Sort the list descending")[
            "contrast_swap"
        ]
        == 1.0
    )
    assert (
        run(operator_features, "Turn the porch light on", "Turn the porch light off")[
            "contrast_swap"
        ]
        == 1.0
    )
    assert run(operator_features, "Solve x + 3 = 5", "Solve x - 3 = 5")["op_diff"] == 2.0
    neg = run(operator_features, "i like spicy food", "i dont like spicy food")
    assert neg["neg_diff"] == 1.0
    # a typo of an operation word is not a change of operation
    assert run(difference_features, "Solve t^2 - 9 = 0", "Slove t^2 - 9 = 0")["content_equal"] == 1


def test_identifiers_and_codes() -> None:
    f = run(identifier_features, "def reverse_words(s):", "def reverse_chars(s):")
    assert f["ident_diff"] == 2.0
    code = run(identifier_features, "confirmation code K7QF2N", "confirmation code K7QF2M")
    assert code["ident_diff"] == 2.0
    assert run(identifier_features, "sortPrices(prices)", "sortPrices(prices)")["ident_diff"] == 0


def test_entities_and_typos() -> None:
    f = run(entity_features, "What is the capital of Iran?", "What is the capital of Iraq?")
    assert f["entity_diff"] == 2.0 and f["entity_both_changed"] == 1.0
    typo = run(
        entity_features, "What is the capital of Austira?", "What is the capital of Austria?"
    )
    assert typo["entity_diff"] == 0.0
    lex = run(
        difference_features, "What is the capital of Austira?", "What is the capital of Austria?"
    )
    assert lex["content_equal"] == 1.0
    assert (
        run(entity_features, "Translate 'good morning'", "Translate 'good night'")["quoted_diff"]
        == 1
    )


def test_units_and_currencies() -> None:
    assert run(unit_features, "Convert 10 km to feet", "Convert 10 miles to feet")["unit_diff"] == 1
    assert run(unit_features, "Set it to 68 degrees Fahrenheit", "set it to 68°F")["unit_diff"] == 0
    assert run(unit_features, "Convert 10 kilometres", "Convert 10 km")["unit_diff"] == 0
    assert run(unit_features, "Send 250 euros", "Send 250 dollars")["currency_diff"] == 1
    assert run(unit_features, "Send $50", "Send fifty dollars")["currency_diff"] == 0
    assert run(number_features, "Send $50", "Send fifty dollars")["num_diff"] == 0


def test_dates_and_times() -> None:
    assert run(date_features, "Flights on July 3", "Flights on July 4")["date_diff"] == 1
    assert run(date_features, "Remind me on 1 July", "Remind me on July 1st")["date_diff"] == 0
    assert run(date_features, "Set an alarm for 07:00", "Set an alarm for 7 am.")["time_diff"] == 0
    assert run(date_features, "Set an alarm for 7 am", "Set an alarm for 7 pm")["time_diff"] == 1
    # no am/pm: either half of the day
    assert run(date_features, "at 7:30 in the evening", "at 7:30 pm")["time_diff"] == 0
    assert run(date_features, "rain tomorrow?", "rain today?")["relative_diff"] == 1
    assert run(date_features, "on Monday", "on Tuesday")["weekday_diff"] == 1


def test_context_history_equality() -> None:
    turns_a = ({"role": "user", "content": "My last three commits went onto main."},)
    turns_b = ({"role": "user", "content": "My last two commits went onto main."},)
    q = "How do I move them off main?"
    same = run(context_features, Request(q, turns_a), Request(q, turns_a))
    assert same["ctx_equal"] == 1.0 and same["ctx_diff"] == 0.0
    diff = run(context_features, Request(q, turns_a), Request(q, turns_b))
    assert diff["ctx_equal"] == 0.0 and diff["ctx_num_diff"] == 2.0 and diff["ctx_critical"] >= 1
    extra = turns_a + ({"role": "user", "content": "Ha, my dog just walked in."},)
    added = run(context_features, Request(q, turns_a), Request(q, extra))
    assert added["ctx_added_only"] == 1.0 and added["ctx_turns_diff"] == 1.0
    system = run(context_features, Request(q, system_prompt="User: Ann"), Request(q))
    assert system["sys_equal"] == 0.0


def test_tool_canonical_forms() -> None:
    email = {"name": "send_email", "description": "Send an email to a contact."}
    text = {"name": "send_message", "description": "Send a text message to a contact."}
    a = Request("Email Dana that I'm late", tools=(email, text))
    b = Request("Text Dana that I'm late", tools=(email, text))
    f = run(tool_features, a, b)
    assert f["tools_equal"] == 1.0 and f["tool_intent_diff"] == 1.0
    assert analyze(a).tool_intent == "send_email" and analyze(b).tool_intent == "send_message"
    fewer = run(tool_features, a, Request("Email Dana that I'm late", tools=(email,)))
    assert fewer["tools_equal"] == 0.0 and fewer["tools_jaccard"] == 0.5


def test_what_differs_in_content() -> None:
    same = run(difference_features, "How do I reset my password?", "how do I reset my password")
    assert same == {"content_equal": 1.0}
    f = run(difference_features, "Reset my password", "Best hiking trails near Denver")
    assert f == {"content_equal": 0.0}
    assert run(difference_features, "Set a timer for ninety minutes",
               "Set a timer for 90 minutes")["content_equal"] == 1.0  # fmt: skip
    assert run(difference_features, "Set a timer", "Set a timer please")["content_equal"] == 1
    added = run(difference_features, "whats the largest mammal", "whats the largest land mammal")
    assert added == {"content_equal": 0.0}
    # inflections, interjections and "per cent" are no difference
    assert _no_content_diff(
        "a process for writing a constitution", "a process to write a constitution"
    )
    assert _no_content_diff("Ah ha, ha, ha!", "Ha, ha, ha!")
    assert _no_content_diff("rates rose 1 per cent", "rates rose 1 percent")
    # a list of numbers written without spaces is still a list
    assert analyze("mean of 4,8,15,16").numbers == ("4", "8", "15", "16")
    assert analyze("1,200,000 people").numbers == ("1200000",)


def test_critical_diff_pools_the_answer_determining_kinds() -> None:
    assert run(critical_features, "Solve x + 2 = 8", "Solve a + 2 = 9")["critical_diff"] == 2.0
    assert run(critical_features, "Who wrote Hamlet?", "who wrote hamlet")["critical_diff"] == 0.0


def test_substitution_spans_are_short_swaps_only() -> None:
    a, b = (
        analyze("Write a Python function to sort a list"),
        analyze("Write a JavaScript function to sort a list"),
    )
    assert substitution_spans(content_diff(a, b)) == ("python", "javascript")
    assert substitution_spans(content_diff(a, a)) == ("", "")
    c = analyze("Play jazz in the kitchen")
    assert substitution_spans(content_diff(analyze("Play jazz"), c)) == ("", "")  # an addition
    long_a = analyze("The merger should be finished before the quarter ends")
    long_b = analyze("The takeover is due to wrap up ahead of the quarter's end")
    assert substitution_spans(content_diff(long_a, long_b)) == ("", "")  # a rewording


def test_cjk_is_compared_character_by_character() -> None:
    a, b = analyze("太阳系最大的行星是哪一颗？"), analyze("太阳系最小的行星是哪一颗？")
    assert substitution_spans(content_diff(a, b)) == ("大", "小")
    assert run(operator_features, "太阳系最大的行星", "太阳系最小的行星")["contrast_swap"] == 1


def test_feature_vector_shape_and_determinism() -> None:
    assert len(FEATURE_NAMES) == len(set(FEATURE_NAMES))
    names_from_extractors = {n for ex in EXTRACTORS for n in run(ex, "a b", "a c")}
    assert names_from_extractors <= set(FEATURE_NAMES)
    a = Request("Solve x + 2 = 8", ({"role": "user", "content": "hi"},), "sys", None)
    b = Request("Solve a + 2 = 8")
    align = (0.9, 0.8, 0.85, 0.7)
    v1 = pair_features(
        analyze(a), analyze(b), cos_query=0.9, cos_context=0.0, cos_diff=0.5, token_align=align
    )
    v2 = pair_features(
        analyze(a), analyze(b), cos_query=0.9, cos_context=0.0, cos_diff=0.5, token_align=align
    )
    assert v1 == v2 and len(v1) == len(FEATURE_NAMES)
    assert v1[-len(align) :] == align
    # no word-piece vectors: the alignment columns are NaN (missing to LightGBM)
    v3 = pair_features(analyze(a), analyze(b), cos_query=0.9, cos_context=0.0, cos_diff=0.5)
    assert all(x != x for x in v3[-len(align) :]) and v3[: -len(align)] == v1[: -len(align)]
    with pytest.raises(ValueError):
        pair_features(
            analyze(a),
            analyze(b),
            cos_query=0.9,
            cos_context=0.0,
            cos_diff=0.5,
            token_align=align[:-1],
        )
    assert feature_dict(v1)["cos_diff"] == 0.5
    with pytest.raises(ValueError):
        feature_dict(v1[:-1])


def test_request_coercion() -> None:
    assert Request.of("hi") == Request("hi")
    with pytest.raises(TypeError):
        Request.of(42)  # type: ignore[arg-type]


# --- notation variants are not content differences -----------------------------------


def _no_content_diff(a: str | Request, b: str | Request) -> bool:
    sa, sb = analyze(a), analyze(b)
    d = content_diff(sa, sb)
    return not d.a_only and not d.b_only


def test_math_notation_is_canonical() -> None:
    ops = run(operator_features, "Solve x**2 - 5*x + 6 = 0", "Solve x^2 - 5x + 6 = 0")
    assert ops["op_diff"] == 0.0
    ids = run(identifier_features, "Solve x**2 - 5*x + 6 = 0", "Solve x^2 - 5x + 6 = 0")
    assert ids["var_diff"] == 0.0
    nums = run(number_features, "Solve x**2 - 5*x + 6 = 0", "Solve x² − 5x + 6 = 0")
    assert nums["num_diff"] == 0.0
    crit = run(critical_features, "Solve x**2 - 5*x + 6 = 0", "Solve x^2 - 5x + 6 = 0")
    assert crit["critical_diff"] == 0.0
    # a real change of operator is still one
    assert run(operator_features, "Solve x**2 - 5*x + 6", "Solve x^2 + 5x + 6")["op_diff"] == 2.0
    # in code ** and ^ differ (power vs xor): code blocks are left alone
    assert analyze("```python\nx ** 2\n```").operators != analyze("```python\nx ^ 2\n```").operators
    # log notations; math function names are not code identifiers
    assert _no_content_diff("What is log base 10 of 1000?", "what is log10(1000)")
    assert analyze("What is ln(20)?").identifiers == ()
    # the variables of a system are not the Spanish "y"
    f = run(language_features, "Solve x + y = 10, x - y = 2.", "Solve x + y = 10 and x - y = 2")
    assert f["text_lang_diff"] == 0.0


def test_abbreviations_of_names_are_canonical() -> None:
    assert _no_content_diff("US president in 1955", "United States president in 1955")
    assert _no_content_diff("who was us president in 1955", "Who was the U.S. president in 1955?")
    ent = run(
        entity_features, "How does a bill become law in the UK?", "... in the United Kingdom?"
    )
    assert ent["entity_diff"] == 0.0
    assert _no_content_diff("causes of World War I", "causes of ww1")
    assert _no_content_diff("causes of WWI", "causes of the First World War")
    assert analyze("causes of ww1").identifiers == ()
    # the pronoun stays a pronoun; "US dollars" is the currency
    assert "usa" not in analyze("There are five of us at home").content
    assert "usa" not in analyze("tell us about yourself").content
    assert "usa" not in analyze("Convert 250 US dollars to euros").content
    assert not _no_content_diff("law in the UK", "law in the US")


def test_programming_language_aliases() -> None:
    assert _no_content_diff("Write a JavaScript function f(x)", "Write a JS function f(x)")
    assert _no_content_diff("Write a Go function f()", "Write a Go func f()")
    # a named language is not overridden by syntax in prose ("function f(" is not JS here)
    f = run(language_features, "a Go function rev(s []int)", "a Go func rev(s []int)")
    assert f["prog_lang_conflict"] == 0.0
    # dialects stay different
    assert not _no_content_diff("a PostgreSQL upsert", "a MySQL upsert")


def test_spelling_variants() -> None:
    assert _no_content_diff("Shell one-liner to count lines", "Shell one liner to count lines")
    assert _no_content_diff("the nth Fibonacci number", "the n'th Fibonacci number")
    assert (
        run(number_features, "Who wrote 1984?", "Who wrote Nineteen Eighty-Four?")["num_diff"]
        == 0.0
    )
    assert analyze("twenty twenty-five").numbers == ("2025",)
    assert analyze("one hundred twenty five").numbers == ("125",)
    # a misspelt number word is a typo, not another number
    typo = run(
        number_features,
        "Who was the fisrt person on the Moon?",
        "Who was the first person on the Moon?",
    )
    assert typo["num_diff"] == 0.0 and typo["ordinal_diff"] == 0.0


def test_transliteration_variants() -> None:
    assert _no_content_diff("das chemische Symbol für Gold", "das chemische symbol fuer gold")
    assert _no_content_diff("das chemische Symbol für Gold", "das chemische Symbol fur Gold")
    assert _no_content_diff("Straße", "Strasse")
    assert _no_content_diff("Кто написал «Звёздную ночь»?", "Кто написал «Звездную ночь»?")
    # Chinese numerals before a measure word are numbers; elsewhere part of a word
    assert run(number_features, "3小时是多少分钟", "三个小时是多少分钟")["num_diff"] == 0.0
    assert analyze("一公里等于多少英里").numbers == ("1",)
    assert analyze("二十三个苹果").numbers == ("23",)
    assert analyze("太陽系で一番大きい惑星").numbers == ()


def test_request_frames() -> None:
    assert _no_content_diff(
        "Give me the speed of light in mi/s.", "What is the speed of light in mi/s?"
    )
    assert _no_content_diff("Give me the speed of light.", "What is the speed of light?")
    assert _no_content_diff("Name the capital of Iran.", "What is the capital of Iran?")
    # a different question word is still a difference
    assert not _no_content_diff("Name the capital of Iran.", "Why is Tehran the capital?")


def _tool(name: str, description: str, **props: object) -> dict[str, object]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props},
    }


def test_needed_tool_missing_or_changed() -> None:
    lights = _tool("set_lights", "Turn the lights of a room on or off.", room={"enum": ["kitchen"]})
    lights2 = _tool(
        "set_lights", "Turn the lights of a room on or off.", room={"enum": ["kitchen", "porch"]}
    )
    timer = _tool("set_timer", "Start a countdown timer.", duration={"type": "number"})
    music = _tool("play_music", "Play music.", kind={"enum": ["song", "playlist"]})
    q = "Turn off the kitchen lights"
    # only an irrelevant tool differs: the call is the same
    same = run(tool_features, Request(q, tools=(lights, timer)), Request(q, tools=(lights, music)))
    assert same["tool_needed_changed"] == 0.0 and same["tools_equal"] == 0.0
    # the needed tool is gone on one side
    gone = run(tool_features, Request(q, tools=(lights, timer)), Request(q, tools=(timer, music)))
    assert gone["tool_needed_changed"] == 1.0
    # the needed tool's schema changed
    schema = run(tool_features, Request(q, tools=(lights,)), Request(q, tools=(lights2,)))
    assert schema["tool_needed_changed"] == 1.0
    crit = run(critical_features, Request(q, tools=(lights,)), Request(q, tools=(lights2,)))
    assert crit["critical_diff"] == 1.0
    # parameter enums count when finding the needed tool
    assert analyze(Request("Put my Focus playlist on", tools=(timer, music))).tool_intent == (
        "play_music"
    )


def test_critical_diff_in_pair_features_matches_the_extractor() -> None:
    pairs = [
        ("Solve x + 2 = 8", "Solve a + 2 = 9"),
        ("Flights on July 3 at 7 am", "Flights on July 4 at 7 pm"),
        ("Drive NYC->FL", "Drive FL->NYC"),
    ]
    idx = FEATURE_NAMES.index("critical_diff")
    for x, y in pairs:
        a, b = analyze(x), analyze(y)
        v = pair_features(a, b, cos_query=0.5, cos_context=1.0, cos_diff=0.5)
        assert v[idx] == critical_features(a, b, content_diff(a, b))["critical_diff"]


# --- contrast classes, preference order, unit roles, negation scope -------------------


def test_cause_versus_effect_is_a_contrast_swap() -> None:
    f = run(
        operator_features,
        "Why do volcanoes erupt - what causes it?",
        "What are the effects of volcanoes erupting?",
    )
    assert f["contrast_swap"] == 1.0
    f = run(
        operator_features, "What is causing inflation?", "What are the consequences of inflation?"
    )
    assert f["contrast_swap"] == 1.0
    # synonyms within a group are not a swap
    same = run(operator_features, "What are the effects of noise?", "What is the impact of noise?")
    assert same["contrast_swap"] == 0.0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Why are mortgage rates higher than last year?",
            "Why are mortgage rates lower than last year?",
        ),
        ("What counts as high blood pressure?", "What counts as low blood pressure?"),
        (
            "Is a bigger batch size better for training?",
            "Is a smaller batch size better for training?",
        ),
        ("Why is my laptop faster on battery?", "Why is my laptop slower on battery?"),
        ("Do older dogs need more sleep?", "Do younger dogs need more sleep?"),
        ("Which foods have more fibre than oats?", "Which foods have less fibre than oats?"),
        ("Is tea better than coffee for focus?", "Is tea worse than coffee for focus?"),
    ],
)
def test_comparatives_and_gradable_opposites_are_a_contrast_swap(a: str, b: str) -> None:
    assert run(operator_features, a, b)["contrast_swap"] == 1.0, (a, b)
    assert run(critical_features, a, b)["critical_diff"] >= 1.0


def test_a_comparative_said_once_on_one_side_is_no_swap() -> None:
    # a comparative on one side only is rewording, as for every contrast group
    for a, b in (
        ("How can I make my laptop faster?", "How do I speed up my laptop?"),
        ("Tell me more about black holes", "Explain black holes"),
        ("Why are rates higher this year?", "Why did rates go up this year?"),
    ):
        assert run(operator_features, a, b)["contrast_swap"] == 0.0, (a, b)
    # "quicker" and "faster" are one class
    assert (
        run(
            operator_features,
            "Is the train quicker than the bus?",
            "Is the train faster than the bus?",
        )["contrast_swap"]
        == 0.0
    )


def test_synonyms_in_a_contrast_group_are_not_a_swap() -> None:
    assert (
        run(operator_features, "Which lake is the biggest?", "Which lake is the largest?")[
            "contrast_swap"
        ]
        == 0.0
    )
    assert (
        run(operator_features, "Find the derivative of y = x^4", "Differentiate y = x^4")[
            "contrast_swap"
        ]
        == 0.0
    )
    assert (
        run(operator_features, "Why do leaves fall in autumn?", "Why do leaves drop in the fall?")[
            "contrast_swap"
        ]
        == 0.0
    )
    # different classes of one group still are
    assert (
        run(operator_features, "Which lake is the biggest?", "Which lake is the smallest?")[
            "contrast_swap"
        ]
        == 1.0
    )


def test_preference_order_swap_is_flagged() -> None:
    pairs = [
        (
            "Why choose tea over coffee in the morning?",
            "Why choose coffee over tea in the morning?",
        ),
        (
            "Is it better to walk rather than cycle to work?",
            "Is it better to cycle rather than walk to work?",
        ),
        ("Reasons to rent instead of buy a car", "Reasons to buy instead of rent a car"),
    ]
    for a, b in pairs:
        assert run(order_features, a, b)["direction_swap"] > 0, (a, b)
    assert (
        run(order_features, pairs[0][0], "why pick tea over coffee in the morning")[
            "direction_swap"
        ]
        == 0
    )


def test_given_versus_asked_unit_is_a_direction_swap() -> None:
    assert (
        run(order_features, "How many km are in a mile?", "How many miles are in a km?")[
            "direction_swap"
        ]
        > 0
    )
    assert (
        run(
            order_features,
            "Wie viele Kilometer hat eine Meile?",
            "Wie viele Meilen hat ein Kilometer?",
        )["direction_swap"]
        > 0
    )
    assert (
        run(order_features, "¿Cuántos litros tiene un galón?", "¿Cuántos galones tiene un litro?")[
            "direction_swap"
        ]
        > 0
    )
    # the same conversion, worded differently
    for a, b in [
        ("Convert 5 miles to km", "How many kilometres is 5 miles?"),
        ("Set a timer for twenty minutes", "start a 20-minute timer"),
        ("How much coffee for 1 litre?", "How much coffee for a full litre?"),
        ("What is 68°F in Celsius?", "68 degrees Fahrenheit in celsius"),
        ("¿A cuántos kilómetros equivale una milla?", "¿Cuántos kilómetros tiene una milla?"),
    ]:
        assert run(order_features, a, b)["direction_swap"] == 0, (a, b)


def test_unit_words_in_other_languages() -> None:
    assert analyze("Wie viele Meilen sind 10 Kilometer?").units == ("mile", "km")
    assert analyze("¿Cuántos kilómetros tiene una milla?").units == ("km", "mile")
    assert analyze("Quanti grammi in 2 chilogrammi?").units == ("g", "kg")
    # the asked-for currency differs: a percentage vs an amount of dollars
    f = run(
        order_features,
        "It went from $40 to $50. What is the percentage change?",
        "It went from $40 to $50. How many dollars is the change?",
    )
    assert f["direction_swap"] > 0


def test_negation_scope_flip() -> None:
    f = run(
        operator_features,
        "Explain recursion with code examples.",
        "Explain recursion without any code examples.",
    )
    assert f["neg_scope_flip"] >= 1.0
    f = run(
        operator_features,
        "Why does sugar dissolve in tea?",
        "Why does sugar stop dissolving in iced tea?",
    )
    assert f["neg_scope_flip"] >= 1.0
    same = run(
        operator_features,
        "Explain gravity without formulas or numbers",
        "Explain gravity without numbers or formulas",
    )
    assert same["neg_scope_flip"] == 0.0
    # a negator's scope ends where the next clause begins
    for a, b in (
        (
            "How do I stop procrastinating when I work from home?",
            "Working from home, I waste the morning. Tips?",
        ),
        (
            "My dog won't stop barking when I leave the house.",
            "How do I keep my dog quiet when I leave the house?",
        ),
    ):
        assert run(operator_features, a, b)["neg_scope_flip"] == 0.0, (a, b)
    assert (
        critical_features(
            analyze("Explain recursion with code examples."),
            analyze("Explain recursion without any code examples."),
            content_diff(
                analyze("Explain recursion with code examples."),
                analyze("Explain recursion without any code examples."),
            ),
        )["critical_diff"]
        >= 1.0
    )


def test_a_changed_date_is_no_typo() -> None:
    # both dates read "march" on the surface; their values differ
    a = "I'm on leave until March 14 and Dana is covering."
    b = "I'm on leave until March 24 and Dana is covering."
    assert not _no_content_diff(a, b)
    assert run(difference_features, a, b)["content_equal"] == 0.0
    assert run(date_features, a, b)["date_diff"] == 1.0
    # the same date in another notation is still the same
    assert _no_content_diff("on leave until March 14", "on leave until 14 March")


def test_quoting_the_same_words_is_no_change() -> None:
    same = run(
        entity_features,
        "What does 'je voudrais l'addition' mean in English?",
        "What does “je voudrais l’addition” mean in English",
    )
    assert same["quoted_diff"] == 0.0
    unquoted = run(
        entity_features,
        'convert snake_case to camelCase, e.g. "user_id" -> "userId"',
        "convert snake_case to camelCase (user_id becomes userId)",
    )
    assert unquoted["quoted_diff"] == 0.0
    changed = run(entity_features, "Translate 'good morning'", "Translate good night")
    assert changed["quoted_diff"] == 1.0
    # reported speech is not a string the answer repeats
    speech = run(
        entity_features,
        "'We have no plans to cut interest rates again this year,' the chairman said.",
        "The chairman said there were no plans for another rate cut this year.",
    )
    assert speech["quoted_diff"] == 0.0


def test_math_written_in_words_reads_as_symbols() -> None:
    pairs = [
        ("Solve t^2 - 9 = 0 for t", "Which values of t make t squared minus 9 equal to zero?"),
        ("What value of x makes 3x - 7 equal to 11?", "Solve 3x - 7 = 11"),
        ("For which values of k is 2k + 5 less than 17?", "Solve 2k + 5 < 17"),
        ("What is x plus 4 when x is 3?", "What is x + 4 when x is 3?"),
    ]
    for a, b in pairs:
        assert run(operator_features, a, b)["op_diff"] == 0.0, (a, b)
        assert run(number_features, a, b)["num_diff"] == 0.0, (a, b)
    # a changed operator written in words is still a change
    assert run(operator_features, "Solve x plus 3 = 5", "Solve x - 3 = 5")["op_diff"] == 2.0
    # not between two operands: ordinary words
    assert analyze("Take it three times a day").operators == ()
    assert analyze("It costs less than a pizza").operators == ()


def test_negation_inside_a_rewording_is_not_a_negation_change() -> None:
    assert run(operator_features, "i like spicy food", "i dont like spicy food")["neg_diff"] == 1.0
    assert run(operator_features, "Can I eat eggs?", "What can't I eat?")["neg_diff"] == 1.0
    reworded = run(operator_features, "How come frozen water doesn't sink?", "Why does ice float?")
    assert reworded["neg_diff"] == 0.0


def test_honorifics_company_suffixes_and_demonyms_are_no_entity_change() -> None:
    same = [
        (
            "Ms. Varga said the recall is behind Lumora Inc.",
            "Varga said the recall is behind Lumora.",
        ),
        (
            "the U.S. trade envoy said on Tuesday",
            "the American trade envoy said on Tuesday",
        ),
        ("What is the capital of France?", "What is the French capital?"),
        ("Shares of Kestrel AG rose", "Kestrel shares rose"),
        # military and political titles, abbreviated as news copy writes them
        ("Gen. Petraeus told reporters", "Petraeus told reporters"),
        ("Sen. Kerry and Gov. Davis spoke", "Kerry and Davis spoke"),
    ]
    for a, b in same:
        f = run(entity_features, a, b)
        assert f["entity_diff"] == 0.0 and f["entity_both_changed"] == 0.0, (a, b)
    changed = [
        ("What is the capital of Iran?", "What is the capital of Iraq?"),
        ("Who is the American president?", "Who is the Canadian president?"),
        ("What did Mr. Smith say?", "What did Mr. Jones say?"),
        ("What did Gen. Smith say?", "What did Gen. Jones say?"),
    ]
    for a, b in changed:
        assert run(entity_features, a, b)["entity_both_changed"] == 1.0, (a, b)


def test_a_title_ends_no_sentence_so_the_name_after_it_is_a_name() -> None:
    # "Adm." and "Rev." are abbreviations like "Mr.": the capitalised word after
    # them is a first name, not the first word of a new sentence
    assert analyze("the chairman, retired Adm. Harold Gehman, said").entities == (
        "adm",
        "harold",
        "gehman",
    )
    assert "gene" in analyze("the Rev. Gene Robinson was confirmed").entities


def test_an_acronym_and_its_words_are_one_name() -> None:
    same = [
        ("Did the ECB raise rates?", "Did the European Central Bank raise rates?"),
        (
            "Is UCLA a public school?",
            "Is the University of California, Los Angeles a public school?",
        ),
        ("Where is the U.N. headquartered?", "Where is the United Nations headquartered?"),
    ]
    for a, b in same:
        f = run(entity_features, a, b)
        assert f["entity_diff"] == 0.0 and f["entity_both_changed"] == 0.0, (a, b)
    # other words with other initials stay a change of name
    for a, b in (
        ("Did the ECB raise rates?", "Did the Federal Reserve raise rates?"),
        ("Is UCLA a public school?", "Is the University of Chicago a public school?"),
    ):
        assert run(entity_features, a, b)["entity_both_changed"] == 1.0, (a, b)


def test_exchanged_roles_are_a_direction_swap() -> None:
    for a, b in (
        (
            "What time will it be in London when it's 9 am here in Chicago tomorrow?",
            "What time will it be in Chicago when it's 9 am in London tomorrow?",
        ),
        (
            'Sort a list of dicts with "name" and "age" keys by age, descending.',
            'Sort a list of dicts with "name" and "age" keys by name, descending.',
        ),
    ):
        assert run(order_features, a, b)["direction_swap"] > 0, (a, b)
        assert run(critical_features, a, b)["critical_diff"] >= 1.0, (a, b)
    for a, b in (
        # a phrase moved to the front is a rewording, not an exchange
        ("How do I reverse a list in Python?", "In Python, how do I reverse a list?"),
        ("Sort the users by age.", "Sort the users by name."),
    ):
        assert run(order_features, a, b)["direction_swap"] == 0.0, (a, b)


def test_variables_compare_as_sets_and_a_glued_k_in_math_is_a_variable() -> None:
    f = run(identifier_features, "What value of x makes 3x - 7 equal to 11?", "Solve 3x - 7 = 11")
    assert f["var_diff"] == 0.0 and f["var_rename"] == 0.0
    renamed = run(identifier_features, "Solve x + 2 = 8", "Solve a + 2 = 8")
    assert renamed["var_diff"] == 2.0 and renamed["var_rename"] == 1.0
    # "2k + 5 < 17": a coefficient and a variable, not 2,000
    assert analyze("Solve 2k + 5 < 17").variables == ("k",)
    assert analyze("Solve 2k + 5 < 17").numbers == ("2", "5", "17")
    # outside math a glued k is a thousand
    assert analyze("I ran 5k today").numbers == ("5000",)


@pytest.mark.parametrize(
    ("a", "b", "swapped"),
    [
        ("My dog is terrified of fireworks", "My cat is terrified of fireworks", True),
        ("Write a short apology text", "Write a long apology text", True),
        ("What time will it be there when I land?", "What day will it be there when I land?", True),
        ("How much will I pay w/ the code?", "How much will I pay w/o the code?", True),
        ("Why do cats purr?", "How do cats purr?", True),
        ("银的化学符号是什么?", "铜的化学符号是什么?", True),
        # typos, inflections, filler and reworded pairs are no swap
        ("My dog is terrified of fireworks", "My dgo is terrified of fireworks", False),
        ("Where were the games held?", "Were were the games held?", False),
        ("so it doesnt taste bitter", "so it dosnt taste bitter", False),
        ("Can you fix my laptop?", "Could you fix my laptop?", False),
        ("How do I reset my password?", "How can I change my password quickly?", False),
        ("My dog is terrified of fireworks", "My dog is terrified of fireworks", False),
        # a long word cut short is the same word; a short word inside a longer one is not
        ("Show the temp in the lab", "Show the temperature in the lab", False),
        ("Bake a pie for the hen", "Bake a pie for the heron", True),
    ],
)
def test_an_in_place_replacement_is_a_word_swap(a: str, b: str, swapped: bool) -> None:
    assert run(swap_features, a, b) == {"word_swap": float(swapped)}


def test_number_words_with_and_after_a_scale_and_halves_read_as_one_number() -> None:
    assert analyze("two hundred and forty").numbers == ("240",)
    assert analyze("a hundred and twenty kilometres").numbers == ("120",)
    assert analyze("two and a half hours").numbers == ("2.5",)
    assert analyze("one and a half cups").numbers == ("1.5",)
    # "and" between two plain numbers still joins nothing
    assert analyze("twenty and thirty").numbers == ("20", "30")
    f = run(number_features, "How many grams are in 2.5 kilograms?",
            "How many grams are in two and a half kilograms?")  # fmt: skip
    assert f["num_diff"] == 0.0


def test_fractions_and_powers_in_words_read_as_the_symbols() -> None:
    # "one third" was the ordinal 4th (1 + 3rd); now it is 1/3, as typed in digits
    assert analyze("one third").numbers == ("1", "3")
    assert analyze("one third").ordinals == ()
    assert analyze("seven eighths of the cake").numbers == ("7", "8")
    assert analyze("the third lap").ordinals == ("3",)
    assert analyze("twenty third").ordinals == ("23",)
    for extractor in (number_features, operator_features):
        f = run(extractor, "What is 2/5 + 1/3?", "What is two fifths plus one third?")
        assert not any(f.values()), f
        f = run(extractor, "Compute 4^6", "Compute four raised to the sixth power")
        assert not any(f.values()), f
        f = run(extractor, "What is 10 to the power of 3?", "What is 10^3?")
        assert not any(f.values()), f
    assert run(number_features, "one fifth of 60", "one third of 60")["num_diff"] > 0


def test_quantities_in_their_own_units_listed_in_another_order_are_no_swap() -> None:
    f = run(order_features, "I'm 160 cm and 55 kg: what is my BMI?",
            "Work out my BMI: I weigh 55 kg and I'm 160 cm tall")  # fmt: skip
    assert f == {"direction_swap": 0.0}
    f = run(order_features, "Convert 5 km to miles", "Convert 5 miles to km")
    assert f["direction_swap"] > 0


def test_french_question_words_tell_the_language() -> None:
    assert detect_language("Combien coûte un billet ?") == "fr"
    assert detect_language("Pourquoi le ciel est bleu ?") == "fr"


def test_a_request_to_answer_in_a_language_sets_the_answer_language() -> None:
    # the answer language is what the request asks for, not the language it is typed in
    assert analyze("¿Cuántos años tiene la Tierra? Answer in English, please.").text_lang == "en"
    assert analyze("How old is the Earth? Réponds en français, s'il te plaît.").text_lang == "fr"
    f = run(language_features, "Wie alt ist die Erde? Please answer in English.",
            "How old is the Earth?")  # fmt: skip
    assert f["text_lang_diff"] == 0.0
    f = run(language_features, "How old is the Earth?",
            "How old is the Earth? Please answer in German.")  # fmt: skip
    assert f["text_lang_diff"] == 1.0
    # naming a language without asking for the answer in it changes nothing
    assert analyze("Do people in Brazil speak Portuguese?").text_lang == "en"


# --- detector precision (issue 29): rewordings that keep the answer stay silent ------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How many minutes are in a day?", "How many minutes are in 24 hours?"),
        ("Plan my meals for a week", "Plan my meals for seven days"),
        ("Bake it for 90 minutes?", "Bake it for an hour and a half?"),
        ("How many grams is one kilogram?", "How many grams is a kilogram?"),
        ("Rest the dough for a quarter of an hour", "Rest the dough for 15 minutes"),
    ],
)
def test_a_quantity_restated_in_other_units_is_no_number_change(a: str, b: str) -> None:
    assert run(number_features, a, b)["num_diff"] == 0.0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How many minutes are in a day?", "How many minutes are in 2 days?"),
        ("Plan my meals for a week", "Plan my meals for 10 days"),
        ("Bake it for 90 minutes?", "Bake it for an hour?"),
    ],
)
def test_a_quantity_with_another_value_is_still_a_number_change(a: str, b: str) -> None:
    assert run(number_features, a, b)["num_diff"] > 0


def test_latex_reads_as_the_words_for_it() -> None:
    latex, words = r"Compute \int_0^2 x^3 \, dx", "Compute the integral of x^3 from 0 to 2"
    for extractor, name in (
        (number_features, "num_diff"),
        (operator_features, "op_diff"),
        (identifier_features, "ident_diff"),
    ):
        assert run(extractor, latex, words)[name] == 0.0, name
    assert run(number_features, latex, "Compute the integral of x^3 from 0 to 5")["num_diff"] > 0
    frac = run(operator_features, r"What is $\frac{3}{4} \cdot 8$?", "What is (3)/(4) * 8?")
    assert frac["op_diff"] == 0.0


def test_unit_powers_and_comparison_signs() -> None:
    area = run(number_features, "Tiles for 12 m² of floor", "Tiles for 12 square metres of floor")
    assert area["num_diff"] == 0.0
    assert (
        run(unit_features, "Tiles for 12 m² of floor", "Tiles for 12 sq metres of floor")[
            "unit_diff"
        ]
        == 0.0
    )
    assert run(unit_features, "Tiles for 12 m² of floor", "Tiles for 12 m of floor")["unit_diff"]
    assert run(operator_features, "Solve 2y + 1 ≤ 9", "Solve 2y + 1 <= 9")["op_diff"] == 0.0
    assert run(operator_features, "Solve 2y + 1 ≤ 9", "Solve 2y + 1 >= 9")["op_diff"] > 0


def test_numbers_glued_into_a_name_are_no_operation() -> None:
    a, b = "Explain the 70/20/10 learning model", "Explain the 70-20-10 learning model"
    assert run(operator_features, a, b)["op_diff"] == 0.0
    assert run(number_features, a, b)["num_diff"] == 0.0
    assert run(operator_features, "Compute 100/5/2", "Compute 100-5-2")["op_diff"] > 0


def test_identifiers_compare_as_sets_and_units_are_none() -> None:
    assert (
        run(identifier_features, "Convert 3 cups to mL", "Convert 3 cups to milliliters")[
            "ident_diff"
        ]
        == 0.0
    )
    once = "SQL: the summed price per product_id in sales"
    twice = "For each product_id in sales, give product_id and its summed price"
    assert run(identifier_features, once, twice)["ident_diff"] == 0.0
    other = "For each order_id in sales, give order_id and its summed price"
    assert run(identifier_features, once, other)["ident_diff"] == 2.0


def test_german_common_nouns_are_no_names() -> None:
    a, b = "In welchem Jahr starb Goethe?", "Wann ist Goethe gestorben?"
    assert analyze(a).entities == ("goethe",)
    assert run(entity_features, a, b)["entity_diff"] == 0.0
    assert run(entity_features, a, "In welchem Jahr starb Schiller?")["entity_diff"] == 2.0
    # outside German a capital after an article may well be a name
    assert analyze("Where is the Louvre?").entities == ("louvre",)


def test_text_typed_without_accents_keeps_its_language() -> None:
    a, b = "donde esta la estacion de tren", "¿Dónde está la estación de tren?"
    assert run(language_features, a, b)["text_lang_diff"] == 0.0
    assert run(language_features, b, "Onde fica a estação de trem?")["text_lang_diff"] == 1.0


def test_informal_spelling_is_no_swap() -> None:
    a = "snack ideas with veggies for a 3 yr old"
    assert run(swap_features, a, "snack ideas with vegetables for a 3-year-old")["word_swap"] == 0
    assert run(swap_features, a, "snack ideas with fruit for a 3 yr old")["word_swap"] == 1.0


def test_a_worked_example_one_side_adds_is_no_change() -> None:
    plain = "Write a Python function count_vowels(s) that returns how many vowels s has."
    example = (
        "Python: count_vowels(s) -> number of vowels in s, e.g. count_vowels('queue') == 4 "
        "and a word like 'rhythm' gives 0."
    )
    assert run(number_features, plain, example)["num_diff"] == 0.0
    assert run(entity_features, plain, example)["quoted_diff"] == 0.0
    # both sides give the same input with another output: another function
    other = example.replace("== 4", "== 2")
    assert run(number_features, example, other)["num_diff"] == 2.0
    out_a = "Write rle(s) in Python, e.g. 'xxyz' becomes 'x2y1z1'."
    out_b = "Write rle(s) in Python, e.g. 'xxyz' becomes '2x1y1z'."
    assert run(entity_features, out_a, out_b)["quoted_diff"] == 1.0
    # no function named: a number after "like" is no example
    assert run(number_features, "I have 5 apples", "I have 5 apples, like 3 pears")["num_diff"]


def test_an_adjective_of_a_name_and_an_acronym_spelled_out_are_the_same_name() -> None:
    a, b = "Explain Newtonian mechanics simply", "Explain Newton's mechanics simply"
    assert run(entity_features, a, b)["entity_diff"] == 0.0
    assert run(entity_features, a, "Explain Einstein's mechanics simply")["entity_diff"] == 2.0
    mfa, words = (
        "How does MFA protect an account?",
        "how does multi factor authentication protect an account?",
    )
    assert run(entity_features, mfa, words)["entity_diff"] == 0.0
    assert run(swap_features, mfa, words)["word_swap"] == 0.0
    digit = run(
        entity_features, "Should I turn on 2FA?", "Should I turn on two-factor authentication?"
    )
    assert digit["entity_diff"] == 0.0
    assert run(entity_features, mfa, "How does SSO protect an account?")["entity_diff"] == 2.0


def test_an_operation_named_in_words_is_no_operator_change() -> None:
    a = "What is 3/8 + 1/4?"
    assert run(operator_features, a, "Add one quarter to three eighths")["op_diff"] == 0.0
    assert run(operator_features, "What is 40 - 15?", "Take 15 away from 40")["op_diff"] == 0.0
    assert run(operator_features, a, "What is 3/8 - 1/4?")["op_diff"] == 2.0
    # a square root is no power
    assert (
        run(operator_features, "What is 81 squared?", "What is the square root of 81?")["op_diff"]
        == 1.0
    )


def test_a_number_base_by_name_and_one_of_a_pair_are_no_numbers() -> None:
    a = "Write 200 in base 16"
    assert run(number_features, a, "Convert 200 to hexadecimal")["num_diff"] == 0.0
    assert run(number_features, a, "Write 200 in base 3")["num_diff"] > 0
    # a logarithm's base stays a number
    assert run(number_features, "log base 2 of 32", "log base 8 of 32")["num_diff"] == 2.0
    pair = "Why is it warm on one side of the wall and cold on the other?"
    assert (
        run(number_features, "Why is one wall side warm and the other cold?", pair)["num_diff"]
        == 0.0
    )
    assert run(number_features, "Why is one wall warm?", "Why are two walls warm?")["num_diff"]


def test_one_said_with_an_article_is_no_number() -> None:
    a = "Summarise the plot of Hamlet in a single sentence"
    assert run(number_features, a, "Summarise the plot of Hamlet in one sentence")["num_diff"] == 0
    assert (
        run(number_features, "How many feet are in a mile?", "1 mile is how many feet?")["num_diff"]
        == 0.0
    )
    assert run(number_features, a, "Summarise the plot of Hamlet in two sentences")["num_diff"]
    assert run(number_features, "Give me a tip", "Give me 1 tip and 1 example")["num_diff"] == 1.0


def test_a_repeated_operation_word_is_named_once() -> None:
    a = "Write mode(xs) that returns the mode of a list"
    b = "Python mode(xs): the most common value, like a mean would be the average"
    assert run(operator_features, a, b)["contrast_swap"] == 0.0
    assert (
        run(
            operator_features,
            "Write a function for the mode of xs",
            "Write a function for the mean of xs",
        )["contrast_swap"]
        == 1.0
    )
