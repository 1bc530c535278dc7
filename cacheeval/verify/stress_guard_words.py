"""Word lists of the context guards of stress edits
(:mod:`cacheeval.verify.perturbation_guards` and the entity and noun rules of
:mod:`cacheeval.verify.perturbation_rules`): the facts and neighbours that decide
whether a swap still reads as a person's request and still changes the answer.
Every list was written for CacheEval, from the failures of a blind audit.
"""

from __future__ import annotations

import re

#: Countries that drive on the left: a question of which side of the road swaps
#: a country only for one that drives on the other side, so the answer changes.
LEFT_DRIVING = frozenset(
    """Ireland Japan Australia India Kenya Tanzania Jamaica Thailand Malaysia Indonesia
    Singapore Pakistan Bangladesh Nepal Scotland Wales""".split()
    + ["New Zealand", "South Africa", "Sri Lanka"]
)
#: Fixed expressions with a word of a curated antonym pair ("prove a negative").
ANTONYM_FIXED = re.compile(
    r"\b(?:prove a negative|at the end of the day|best of both worlds|in the long run|"
    r"in the short run|long story short|first come,? first served|last but not least|"
    r"better late than never|better safe than sorry|the sooner the better|sooner or later|"
    r"before long|after all|first of all|at first|at last|at least|at most|at best|"
    r"at worst|most of all|for better or worse|the best thing since|worst case|best case|"
    r"in short|short of|long time no see|happy hour|cheap shot|short notice|short cut)\b",
    re.IGNORECASE,
)
#: After a bought thing, words that presuppose the purchase ("Buy a screen and use
#: it to ..." never becomes "Sell a screen and use it to ...").
ANTONYM_PRESUPPOSED = re.compile(
    r"[^.?!]*\band (?:use|put|place|keep|hang|install|set up|plug in) (?:it|them)\b",
    re.IGNORECASE,
)
#: Units of one dimension at a scale far from the others': a swap stays inside
#: its scale ("Convert 180 centimetres to feet" never asks for miles).
UNIT_SCALES: tuple[frozenset[str], ...] = (
    frozenset("""kilometer kilometers kilometre kilometres mile miles km mi""".split()),
    frozenset("""kilogram kilograms pound pounds kg lb lbs""".split()),
)
#: Words that tie an event to its own facts ("the axis powers in WW2").
EVENT_TIES = frozenset(
    """axis allies allied nazi nazis holocaust trenches blitz d-day pearl harbor iron curtain
    vietcong guillotine bastille""".split()
)
#: Words that tie a country to its history in the text ("the stupidity of WW").
HISTORY_TIES = frozenset(
    """war wars ww ww1 ww2 wwi wwii invasion invaded occupation regime empire colony colonies
    reich nazi nazis soviet punished sanctions""".split()
)
#: Words after "I have" showing an auxiliary ("I have been"), where "I've" reads
#: naturally; before anything else "have" owns something ("I have little proof").
PARTICIPLES = frozenset(
    """been got had made heard read seen done tried never always just already ever found
    lost bought brought thought taught said put set run come become left kept met felt
    spent sent built paid told sold won understood""".split()
)
#: Words before a language name that make it a nationality ("I'm English").
NATIONALITY_PREVIOUS = frozenset("i'm im am we're they're he's she's half fellow".split())
#: Landmarks in the United States: only these answer "which US state is X in?".
US_LANDMARKS = frozenset(
    {"the Grand Canyon", "Yellowstone", "Yosemite", "Denali", "Mount Rushmore", "Niagara Falls",
     "the Statue of Liberty", "the Golden Gate Bridge"}
)  # fmt: skip
#: Superlatives of height, depth and length: the nature nouns each fits.
NATURE_SUPERLATIVES: dict[str, frozenset[str]] = {
    "highest": frozenset({"mountain", "volcano"}), "tallest": frozenset({"mountain", "volcano"}),
    "deepest": frozenset({"ocean", "lake"}), "longest": frozenset({"river", "glacier"}),
    "widest": frozenset({"river"}), "lowest": frozenset(),
}  # fmt: skip
#: Bodies named with "the" ("the Sun"); the planets take none (Earth both ways).
CELESTIAL_WITH_ARTICLE = frozenset({"Sun", "Moon"})
#: Words that tie a body to its role in the text: an eclipse is of the Sun or the
#: Moon, an orbit is around another body.
CELESTIAL_TIED = frozenset(
    """eclipse eclipses solar lunar sunlight moonlight sunrise sunset sunburn sunscreen orbit
    orbits orbiting revolve revolves tide tides ocean oceans sea seas continent continents
    country countries mountain mountains river rivers""".split()
)
#: Words after a company that make it one of its products ("Google search").
COMPANY_PRODUCT_NEXT = frozenset(
    """search maps drive docs sheets slides translate play store music tv pay prime watch
    cloud assistant account phone pixel glasses card earth home photos ads analytics fonts
    scholar books news shopping flights meet classroom forms calendar keep lens buds galaxy
    office word teams xbox surface kindle echo alexa fire""".split()
)
#: Words of a place's family its first four letters do not show ("French" for
#: France): a text that uses one is tied to the place.
DEMONYMS: dict[str, tuple[str, ...]] = {
    "France": ("French",), "Spain": ("Spanish", "Spaniard"), "Netherlands": ("Dutch",),
    "Switzerland": ("Swiss",), "Greece": ("Greek",), "Ireland": ("Irish",),
    "Scotland": ("Scottish", "Scots"), "Wales": ("Welsh",), "Denmark": ("Danish", "Dane"),
    "Finland": ("Finnish", "Finn"), "Poland": ("Polish", "Pole"), "Thailand": ("Thai",),
    "Philippines": ("Filipino", "Filipina"), "Peru": ("Peruvian",), "Cuba": ("Cuban",),
    "Iceland": ("Icelandic",), "Norway": ("Norwegian",), "Sweden": ("Swedish", "Swede"),
    "Turkey": ("Turkish",), "Wellington": ("Kiwi",), "Manchester": ("Mancunian",),
}  # fmt: skip

#: Words before "that"/"which"/"who" showing it does not open a relative clause
#: after a noun ("I know that is ...", "so that are", "and who is").
NOT_BEFORE_RELATIVE = frozenset(
    """know knew think thought say says said believe sure so is are was were be mean means
    show shows prove claim claims hope realize realise notice agree doubt heard read see
    tell told feel guess assume suppose understand find found note and but or if because
    than like such all what how why now just only it this of to in on for with from by
    about at as ask asked wonder""".split()
)

#: Noise kinds: the rest are identity edits, which the statement and repeat guards
#: of :mod:`cacheeval.verify.perturbation_guards` also check
#: (:mod:`cacheeval.verify.perturbation_rules` wraps them).
NOISE_KINDS = frozenset(
    """case_lower case_upper spacing punct_end punct_comma typo_transpose typo_drop
    typo_double typo_adjacent greeting closer contraction expansion spelling_variant
    modal_swap""".split()
)
