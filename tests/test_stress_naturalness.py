"""The rules a blind audit of stress rows asked for: each edit the audit found
unnatural or answer-preserving, on an input written here, is never made again,
while the natural edits of the same kind still are. Then the new edits that
widen the yield on requests (a question's focus, ordinals of coats, works in
other languages, a side of the road)."""

from __future__ import annotations

import random

import pytest

from cacheeval.benches.stress.audit import draw
from cacheeval.benches.stress.edits import Prompt
from cacheeval.benches.stress.generate import _propose, stress_rows
from cacheeval.benches.stress.rows import stress_row
from cacheeval.schema import MISS, Row
from cacheeval.verify import check_row
from cacheeval.verify.never_cache import request_policy
from cacheeval.verify.perturbation import VALIDATORS
from cacheeval.verify.perturbation_text import asks_for_something, is_personal


def _results(kind: str, query: str, seeds: int = 60) -> set[str]:
    """Every side b the kind makes of ``query`` over a range of seeds."""
    prompt = Prompt(query, None, None, "t", 1)
    out = set()
    for seed in range(seeds):
        edit = _propose(kind, prompt, random.Random(seed))
        if edit is not None:
            out.add(edit.apply(query))
    return out


def _ok(kind: str, text: str, original: str, replacement: str) -> bool:
    start = text.index(original)
    return VALIDATORS[kind](text, start, start + len(original), original, replacement) is None


@pytest.mark.parametrize(
    ("kind", "query"),
    [
        # a statement of fact about the world: a swap makes it false, not another request
        ("year", "The first ferry to the island sailed in 1998 from the old harbour."),
        ("country", "Most trains in Norway run on time."),
        ("month", "The school year starts in September in most places."),
        ("celestial", "Yes, the Moon is about a quarter the width of the planet."),
        ("unit", "The tour lasts 29 weeks and ends where it starts."),
        # a kind that reverses what a statement says, even a personal one
        ("antonym", "I would say the best part for me was the long walk."),
        ("negation_add", "I keep the plants that are small on the windowsill."),
        # "Let me share ..." and "Any ... can ..." are statements, whatever their first word
        ("country", "Let me share my view as someone who grew up in Norway."),
        # the name again in a link, or a word of its family
        ("city", "Why does https://example.org/Lisbon_guide say Lisbon is cheap?"),
        ("country", "As a Norwegian abroad, how do I renew a passport from Norway?"),
        ("country", "What is the French word for bread in France?"),
        # fixed expressions and names the kind's own rule does not see
        ("number_word", "Is renting the lesser of two evils for a student?"),
        ("month", "Is Red October worth watching?"),
        ("weekday", "When does Black Friday start?"),
        ("company", "How do I clear my Google search history?"),
        ("celestial", "Can I look at the Sun during an eclipse?"),
        ("celestial", "What is the deepest ocean on Earth?"),
        ("negation_add", "Who is the author of this quote?"),
        ("negation_remove", "If the app isn't installed, then where are my files?"),
        ("with_without", "When renting a car make sure it's with a full tank."),
        ("companion", "What should I write in a card for my best friend?"),
        ("file_type", "Why does res.json() fail on an empty body?"),
        ("city", "when was the treaty of lisbon signed"),
        ("operator_frame", "Convert 2 cups of sugar to grams."),
        ("material", "I spilled a glass of juice on the rug, how do I clean it?"),
        # a question with two answers: another country may well give the same one
        ("country", "Do I need a visa for Japan, yes or no?"),
        # a question focus only where both sides ask a real question
        ("question_focus", "How often should I replace my toothbrush?"),
        ("question_focus", "What month is best to visit Japan?"),
        ("question_focus", "What year of university is the hardest?"),
        ("question_focus", "I wonder what year it was built."),
        # a work's part: not every work has one
        ("work", "When was the second part of Don Quixote published?"),
        # a statement naming other things by name, a place in a text about its history
        ("software", "I've tried Krita and GIMP on my Linux laptop."),
        ("country", "Why is Germany blamed for WW2?"),
        # a worked example's numbers go with the rest of it
        ("number", "Write f(n) so that f(2) is 5 for every caller."),
        ("number", "A quick search (1, 2) showed me the answer."),
        # a why-question takes its facts for granted; an event's own facts tie it
        ("year", "Why did prices rise so fast in 2021?"),
        ("city", "Why is Paris called the city of light?"),
        ("event", "Who led the axis powers in World War II?"),
        ("colour", "Why is the sky blue?"),
        ("city", "Is it cheaper to fly from Oslo to Rome or take the train?"),
        # the maker of the work is named; a donor that is no blood type
        ("work", "In which language did Cervantes write Don Quixote?"),
        ("antonym", "Which blood type do hospitals use as the universal donor?"),
        # code or an error of one language stays in it
        ("proglang", "My Python script fails:\n\nprint(1 + 'a')\n\nTypeError: bad operand"),
        # a swap one letter away reads as a typo; a hotel is never a gym
        ("venue", "Find a hotel in Lisbon for 2 guests."),
        # "have" that owns something does not contract
        ("contraction", "Honestly, I have no idea why it broke."),
        # "have to" never contracts; a count the text goes on to list
        ("contraction", "How long do I have to wait before painting?"),
        ("number_word", "I have two questions: one about tax and one about rent."),
        # second blind audit: a small change of a child's age keeps the answer; lunch
        # at a dinner hour reads wrong
        ("number_word", "My six-year-old asked how rainbows form - how do I explain it?"),
        ("meal", "Is it bad to eat dinner at 10 pm every night?"),
        ("meal", "Where can we get dinner around 9pm near the station?"),
        # a compound unit, a unit at another scale, a long count of weeks
        ("unit", "Is 300 km/s fast for a star?"),
    ],
)
def test_refused(kind: str, query: str) -> None:
    assert _results(kind, query) == set(), (kind, query)


@pytest.mark.parametrize(
    ("kind", "query"),
    [
        # a statement about the writer's own life keeps its identity edits
        ("city", "I moved to Lisbon last year and I love the food."),
        ("number", "In my 200 litre tank the fish keep fighting."),
        # imperatives and requests typed as notes are requests
        ("number", "Select rows where amount is between 100 and 500."),
        ("file_type", "Shell one-liner to count lines in all .py files, recursively."),
        ("antonym", "Sort these names in ascending order, please."),
        # a why-question about the asker's own setup asks a new question
        ("software", "Why does my laptop battery drain so fast on Windows?"),
    ],
)
def test_still_made(kind: str, query: str) -> None:
    assert _results(kind, query), (kind, query)


def test_statement_and_person_tests() -> None:
    assert not asks_for_something("Let me share my opinion on the matter.")
    assert not asks_for_something("Any child that wants a pet can get one.")
    assert asks_for_something("Any tips for a first marathon?")
    assert asks_for_something("This recipe serves 4; scale it for 6: 300 g rice")
    assert is_personal("In my experience the bus is fine, and my kids like it.")
    assert not is_personal("I think the bus is fine.")
    assert not is_personal("The US is large.")  # "US" is not "us"


def test_a_thanks_follows_only_a_request_for_help() -> None:
    for text in (
        "Do you notice what you are saying?",
        "any child that wants a pet can get one.",
        "The shop opens at nine.",
        "What makes you think the cat did it?",
        "What if the bus is late?",
        "Buy a cheap lamp and put it by the door.",
    ):
        assert _results("closer", text) == set(), text
        assert _results("greeting", text) == set(), text
    assert _results("closer", "How do I reverse a list?")


def test_a_greeting_fits_what_follows() -> None:
    made = _results("greeting", "Write a haiku about rain.", seeds=120)
    assert made
    # no capital after a comma, no "Quick question:" before an instruction
    assert not any(", Write" in b or ": Write" in b or "question" in b for b in made)
    assert any(b.startswith("Quick question: how") for b in _results(
        "greeting", "How do I reverse a list?", seeds=200))  # fmt: skip


def test_the_sun_and_the_moon_keep_their_article() -> None:
    moon = "How far away is the Moon?"
    assert _results("celestial", moon) == {moon.replace("Moon", "Sun")}
    mars = "How long is a day on Mars?"
    made = _results("celestial", mars)
    assert made and not any(" on Sun" in b or " on Moon" in b for b in made)


def test_a_currency_already_named_by_its_symbol_is_never_the_target() -> None:
    text = "Convert $50 to euros"
    made = _results("currency", text)
    assert made and not any(b.endswith(("dollars", "USD")) for b in made)
    assert not _ok("currency", text, "euros", "dollars")


def test_swaps_stay_in_their_group() -> None:
    cases = {
        ("appliance", "How does a microwave oven heat food?", "microwave oven"): {
            "toaster oven", "convection oven",
        },
        ("nature", "What is the highest mountain in Europe?", "mountain"): {"volcano"},
        ("drink", "How do I brew a good cup of tea?", "tea"): {"coffee"},
        ("meal", "How much is left on my kid's lunch account?", "lunch"): {"breakfast", "dinner"},
        ("occasion", "I forgot my sister's birthday, what should I do?", "birthday"): {
            "anniversary",
        },
        ("landmark", "Which US state is Yosemite in?", "Yosemite"): {
            "the Grand Canyon", "Yellowstone", "Denali", "Mount Rushmore", "Niagara Falls",
            "the Statue of Liberty", "the Golden Gate Bridge",
        },
    }  # fmt: skip
    for (kind, text, span), allowed in cases.items():
        made = _results(kind, text, seeds=120)
        assert made and made <= {text.replace(span, a, 1) for a in allowed}, (kind, made)
    atmosphere = "What percentage of the atmosphere is nitrogen?"
    assert _ok("element", atmosphere, "nitrogen", "argon")
    assert not _ok("element", atmosphere, "nitrogen", "platinum")
    shirt = "How do I wash a white cotton shirt?"
    assert _ok("material", shirt, "cotton", "silk")
    assert not _ok("material", shirt, "cotton", "plastic")
    pet = "My dog is scared of fireworks, how can I help him?"
    assert _ok("animal", pet, "dog", "cat") and not _ok("animal", pet, "dog", "goat")


def test_fractions_stay_in_lowest_terms() -> None:
    assert _ok("number", "Write 3/8 as a decimal.", "3/8", "5/8")
    assert not _ok("number", "Write 3/8 as a decimal.", "3/8", "4/8")


def test_ordinals_move_one_place_and_world_wars_stay_two() -> None:
    coat = "When can I put the second coat on?"
    assert _results("ordinal", coat) == {coat.replace("second", "third")}
    assert _results("ordinal", "When can I put the 2nd coat on?") == {
        "When can I put the 3rd coat on?"
    }
    war = "When did the First World War end?"
    assert _results("ordinal", war) == {war.replace("First", "Second")}
    assert _ok("ordinal", "What is the second largest lake?", "second", "third")
    assert not _ok("ordinal", "What is the second largest lake?", "second", "sixth")


def test_question_focus() -> None:
    assert _results("question_focus", "What year did the bridge open?") == {
        "What month did the bridge open?"
    }
    assert _results("question_focus", "How often can I take them?") == {"How long can I take them?"}
    assert _results("question_focus", "How many points do I have?") == {
        "How many points do I need?"
    }
    assert _results("question_focus", "In welchem Jahr wurde die Brücke gebaut?") == {
        "In welchem Monat wurde die Brücke gebaut?"
    }
    assert _results("question_focus", "What time is it in Lima?") == {"What day is it in Lima?"}


def test_works_swap_within_the_question_language() -> None:
    spanish = _results("work", "¿Quién escribió Hamlet?", seeds=120)
    assert "¿Quién escribió Don Quijote?" in spanish
    assert not any("Moby" in b or "Pride" in b for b in spanish)
    french = _results("work", "Qui a écrit Don Quichotte ?", seeds=120)
    assert french and all(
        t in ("Madame Bovary", "Frankenstein", "Macbeth", "Faust")
        for t in (b.removeprefix("Qui a écrit ").removesuffix(" ?") for b in french)
    )
    italian = _results("work", "Chi ha scritto il Don Chisciotte?", seeds=120)
    assert italian and not any("Hamlet" in b or "Bovary" in b for b in italian)


def test_the_side_of_the_road_always_changes() -> None:
    from cacheeval.verify.stress_guard_words import LEFT_DRIVING

    made = _results("country", "Which side of the road do they drive on in Japan?", seeds=120)
    assert made
    for b in made:
        country = b.removeprefix("Which side of the road do they drive on in ").rstrip("?")
        assert country not in LEFT_DRIVING, b


def test_units_stay_at_their_scale_and_synonyms_never_swap() -> None:
    text = "Convert 180 centimetres to feet"
    assert _ok("unit", text, "feet", "inches")
    assert not _ok("unit", text, "feet", "miles")
    rug = "How do I get a wine stain out of my carpet?"
    assert not _ok("furnishing", rug, "carpet", "rug") and _ok("furnishing", rug, "carpet", "sofa")
    food = "How long do I simmer 300 g of rice in stock?"
    assert _ok("food", food, "rice", "quinoa") and not _ok("food", food, "rice", "oatmeal")
    # a product of factors may change one factor; a sum that repeats a number may not
    assert _ok("number", "Multiply out (x + 3)(x + 3).", "3", "7")
    assert _results("number", "What is 4 + 4?") == set()


def test_a_conversion_never_becomes_one_to_itself() -> None:
    made = _results("unit", "Convert 180 cm to feet", seeds=120)
    assert made and not any("centimet" in b for b in made)
    assert _results("unit", "Convert 10 kilometers into miles.") == set()
    assert not _ok("unit", "How many kilograms is 150 pounds?", "kilograms", "pounds")
    assert not _ok("unit", "Convert 10 km to miles", "km", "mi")
    # a number with its unit against it is still a number
    assert _ok("number", "how many miles is 10km", "10", "20")


def test_new_pairs() -> None:
    assert _ok("antonym", "Who were the main axis powers in 1941?", "axis powers", "allied powers")
    assert _ok("blood_component", "Which blood type can receive red cells from anyone?",
               "red cells", "plasma")  # fmt: skip
    assert not _ok("blood_component", "Which blood type can receive red cells from anyone?",
                   "red cells", "red blood cells")  # fmt: skip
    assert not _ok("appliance", "How does an induction hob heat a pan?", "induction hob",
                   "induction cooktop")  # fmt: skip
    assert _ok("question_focus", "In which language did Cervantes first publish it?",
               "In which language", "In which year")  # fmt: skip
    assert not _ok("question_focus", "In which language should I study law?",
                   "In which language", "In which year")  # fmt: skip


def test_long_counts_of_time_keep_their_unit() -> None:
    assert _results("unit", "Is 3 weeks enough to see Japan?")
    assert _results("unit", "Is 20 weeks enough to learn Spanish?") == set()


TURNS = (
    {"role": "user", "content": "I'm driving from Porto to Madrid and it takes 6 hours."},
    {"role": "assistant", "content": "Got it - 6 hours to Madrid."},
)


def test_lookalikes_are_never_swapped() -> None:
    from cacheeval.verify.perturbation_guards import lookalike_problem

    assert lookalike_problem("hotel", "hostel") and lookalike_problem("Austria", "Austrian")
    assert lookalike_problem("APR", "APY") is None  # short codes differ by design
    assert lookalike_problem("Austria", "Australia") is None


def test_another_conversation_only_before_a_self_contained_query() -> None:
    own = Prompt("How do I move them to a new branch?", None, TURNS, "t", 1)
    definite = Prompt("How much will I pay with the code?", None, TURNS, "t", 1)
    assert all(_propose("turns_other", definite, random.Random(s)) is None for s in range(20))
    alone = Prompt("What should I pack for a road trip?", None, TURNS, "t", 1)
    assert all(_propose("turns_other", own, random.Random(s)) is None for s in range(20))
    assert any(_propose("turns_other", alone, random.Random(s)) for s in range(20))


def test_a_prior_turn_is_not_edited_where_the_query_names_the_detail() -> None:
    turns = (
        {"role": "user", "content": "The first coat of paint went on at noon."},
        {"role": "assistant", "content": "Nice progress."},
    )
    prompt = Prompt("When can I put the second coat on?", None, turns, "t", 1)
    for seed in range(60):
        edit = _propose("turns_edit", prompt, random.Random(seed))
        assert edit is None or "second" not in (edit.original, edit.replacement), edit


def test_a_prior_turn_is_not_edited_where_a_later_turn_repeats_it() -> None:
    prompt = Prompt("When will I arrive if I leave at 9?", None, TURNS, "t", 1)
    for seed in range(60):
        edit = _propose("turns_edit", prompt, random.Random(seed))
        if edit is not None:
            assert edit.original not in ("6", "Madrid"), edit
    # the checker refuses such a row even when its payload is otherwise right
    row = Row.from_dict(
        {
            **stress_row(prompt, _forged_turn_edit(), request_policy(prompt.query),
                         "cb-multi_turn-0001", "multi_turn", "test"),
        }
    )  # fmt: skip
    assert check_row(row).binary is None


def _forged_turn_edit():  # type: ignore[no-untyped-def]
    from cacheeval.benches.stress.edits import Edit

    content = TURNS[0]["content"]
    start = content.index("6")
    turns = (
        {**TURNS[0], "content": content[:start] + "8" + content[start + 1 :]},
        TURNS[1],
    )
    return Edit("turns_edit", start, start + 1, "6", "8", field="context", turn=0,
                inner="number", turns_b=turns)  # fmt: skip


def test_the_audit_leaves_out_never_cache_rows() -> None:
    prompts = [
        Prompt("Write a haiku about autumn rain.", None, None, "t", 1),
        Prompt("How do I reverse a list in Python?", None, None, "t", 2),
    ]
    rows = list(stress_rows(prompts, seed=1))
    assert any(r["verification_method"] == "policy_no_cache" for r in rows)
    picked = draw(rows, 50, seed=1)
    assert picked and all(r["verification_method"] != "policy_no_cache" for r in picked)
    assert all(r["binary_label"] in ("HIT", MISS) for r in picked)


def test_an_example_given_in_passing_is_not_the_question() -> None:
    text = "Why do clocks show 12 hours and not, for instance, 10 or 20?"
    assert not _ok("number", text, "10", "30")
    assert _ok("number", text, "12", "24")
    opening = "For example, what is 15% of 80?"
    assert _ok("number", opening, "80", "90")
    assert not _ok("number", "Pick a small step, e.g. 5, and halve it.", "5", "7")


def test_another_conversation_shares_the_query_topic() -> None:
    painting = (
        {"role": "user", "content": "The first coat of emulsion went on at 9 this morning."},
        {"role": "assistant", "content": "Keep a window open while it dries."},
    )
    recoat = Prompt("How long do I have to wait before recoating?", None, painting, "t", 1)
    assert all(_propose("turns_other", recoat, random.Random(s)) is None for s in range(20))
    trip = Prompt("What should I pack for a road trip?", None, painting, "t", 1)
    made = [_propose("turns_other", trip, random.Random(s)) for s in range(20)]
    assert all(e is not None and e.turns_b for e in made)
    assert {e.turns_b[0]["content"] for e in made if e is not None and e.turns_b} == {
        "I'm planning a week in Lisbon next spring."
    }


def test_a_clock_time_changes_only_where_the_answer_repeats_it() -> None:
    message = _results("number", "Text Marco that dinner is at 8 pm")
    assert message and all(m.startswith("Text Marco that dinner is at ") for m in message)
    hours = {int(m.split(" at ")[1].split()[0]) for m in message}
    assert hours and all(h != 8 and abs(h - 8) <= 2 for h in hours)
    assert _results("number", "Remind me at 7pm to call the bank") <= {
        f"Remind me at {h}pm to call the bank" for h in (5, 6, 8, 9)
    }
    assert _results("number", "Remind me at 7pm to call the bank")
    assert _results("number", "Is 9 pm too late to eat a big meal?") == set()
    assert _results("number", "Is 9pm too late to eat a big meal?") == set()


def test_a_comma_between_list_items_stays() -> None:
    listed = "Rotate through squats, lunges and calf raises until it burns."
    assert not _ok("punct_comma", listed, ",", "")
    assert not _ok("punct_comma", "I need eggs, flour, milk and sugar.", ",", "")
    assert _ok("punct_comma", "Hi, how do I reset my router?", ",", "")
    assert _ok("punct_comma", "Well, should I buy apples or pears?", ",", "")


def test_an_application_assistant_only_for_a_query_on_its_topic() -> None:
    def others(query: str) -> set[str]:
        prompt = Prompt(query, None, None, "t", 1)
        made = (_propose("system_prompt_other", prompt, random.Random(s)) for s in range(80))
        return {e.system_prompt_b or "" for e in made if e is not None}

    off_topic = others("Which fish is in season all year round?")
    assert off_topic and not any("Bank" in s or "Germany" in s or "Telecom" in s for s in off_topic)
    assert any("French" in s for s in off_topic)
    assert any("Brightwater Bank" in s for s in others("How do I dispute a card payment?"))
