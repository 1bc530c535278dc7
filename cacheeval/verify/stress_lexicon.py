"""The curated word lists behind ``cacheeval stress`` perturbations, shared by the
generator (:mod:`cacheeval.benches.stress`) and the checker that re-derives
each stress row's label (:mod:`cacheeval.verify.perturbation`).

Every list was written for CacheEval. Entity classes hold names of one type
that swap for one another without breaking a sentence; the curated operator
pairs say which neighbours forbid a swap (a particle after the word makes a
phrasal verb: "follow up", "pay down"), so "remove mold from" is never turned
into "add mold from".
"""

from __future__ import annotations

# --- identity: named entities of one type -------------------------------------------

#: Entity class -> its members as written. Matching is case-sensitive for the
#: capitalised classes (a city, a country, a month are proper nouns), so
#: "turkey" the bird or "may" the modal never match.
ENTITIES: dict[str, tuple[str, ...]] = {
    "city": (
        "Paris", "London", "Berlin", "Madrid", "Rome", "Lisbon", "Amsterdam", "Vienna",
        "Prague", "Dublin", "Barcelona", "Munich", "Tokyo", "Osaka", "Seoul", "Bangkok",
        "Sydney", "Melbourne", "Toronto", "Vancouver", "Montreal", "Chicago", "Boston",
        "Seattle", "Denver", "Miami", "Atlanta", "Dallas", "Houston", "Nairobi", "Cairo",
        "Mumbai", "Delhi", "Istanbul", "Athens", "Copenhagen", "Stockholm", "Oslo",
        "Helsinki", "Edinburgh", "Manchester", "New York", "Los Angeles", "San Francisco",
        "Mexico City", "Buenos Aires", "Cape Town", "Hong Kong", "Rio de Janeiro",
        "Canberra", "Ottawa", "Wellington", "Kyoto", "Florence", "Venice", "Geneva", "Zurich",
        "Lyon", "Marseille", "Porto", "Seville", "Krakow", "Budapest", "Warsaw", "Brussels",
        "Hamburg", "Milan", "Naples", "Shanghai", "Beijing", "Dubai", "Lima", "Bogota",
        "Havana", "Reykjavik", "Marrakech", "Hanoi", "Kuala Lumpur",
    ),
    "country": (
        "France", "Germany", "Spain", "Italy", "Portugal", "Japan", "Canada", "Mexico",
        "Brazil", "Argentina", "India", "Australia", "Egypt", "Kenya", "Nigeria", "Sweden",
        "Norway", "Poland", "Greece", "Ireland", "Vietnam", "Thailand", "Peru", "Chile",
        "Morocco", "Netherlands", "Belgium", "Switzerland", "Austria", "Denmark", "Finland",
        "South Korea", "New Zealand", "South Africa", "Indonesia", "Colombia", "Iceland",
        "Croatia", "Hungary", "Romania", "Ukraine", "Pakistan", "Bangladesh", "Philippines",
        "Malaysia", "Cuba", "Jamaica", "Ethiopia", "Ghana", "Tanzania", "Saudi Arabia", "Qatar",
        "Scotland", "Wales", "Singapore", "Nepal", "Sri Lanka",
    ),
    "cuisine": (
        "Thai", "Mexican", "Indian", "Chinese", "Japanese", "Italian", "French", "Greek",
        "Korean", "Vietnamese", "Ethiopian", "Lebanese", "Turkish", "Spanish",
    ),
    "company": (
        "Microsoft", "Apple", "Google", "Amazon", "Tesla", "Nvidia", "IBM", "Intel", "Samsung",
        "Sony", "Nike", "Adidas", "Toyota", "Ford", "Netflix", "Spotify", "Airbnb", "Uber",
    ),
    "landmark": (
        "the Eiffel Tower", "the Colosseum", "Stonehenge", "the Taj Mahal", "Machu Picchu",
        "the Grand Canyon", "Yellowstone", "Yosemite", "Denali", "Mount Rushmore",
        "Niagara Falls", "the Great Wall of China", "the Statue of Liberty", "Mount Everest",
        "Mount Fuji", "the Golden Gate Bridge", "Big Ben", "the Acropolis", "Angkor Wat",
        "the Berlin Wall",
    ),
    "language": (
        "English", "French", "Spanish", "German", "Italian", "Portuguese", "Japanese",
        "Korean", "Russian", "Arabic", "Hindi", "Dutch", "Swedish", "Polish", "Greek",
        "Turkish", "Mandarin", "Vietnamese",
    ),
    "proglang": (
        "Python", "JavaScript", "TypeScript", "Java", "Rust", "C++", "C#", "Ruby", "PHP",
        "Kotlin", "Scala", "Haskell", "Perl", "Lua", "Dart", "Elixir", "Bash", "PowerShell",
    ),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "month": (
        "January", "February", "March", "April", "June", "July", "August", "September",
        "October", "November", "December",
    ),
    "currency": (
        "dollars", "euros", "yen", "rupees", "pesos", "francs", "USD", "EUR", "GBP", "JPY",
        "INR", "CAD", "AUD", "CHF",
    ),
    "us_state": (
        "California", "Texas", "Florida", "Alaska", "Oregon", "Nevada", "Ohio", "Colorado",
        "Arizona", "Michigan", "Montana", "Utah", "Vermont", "Hawaii", "Illinois",
    ),
    "continent": ("Europe", "Asia", "Africa", "Antarctica", "South America", "North America"),
    "celestial": ("Sun", "Moon", "Earth", "Mars", "Venus", "Jupiter", "Saturn", "Neptune"),
    "software": (
        "Windows", "macOS", "Linux", "Ubuntu", "Android", "iOS", "Chrome", "Firefox", "Safari",
        "Excel", "Google Sheets", "Gmail", "Outlook", "Instagram", "Facebook", "TikTok",
        "LinkedIn", "YouTube", "WhatsApp", "Telegram", "Slack", "Discord", "PostgreSQL",
        "MySQL", "SQLite", "MongoDB", "Redis", "React", "Vue", "Angular", "Django", "Flask",
        "Photoshop",
    ),
    "first_name": (
        "Anna", "Maria", "John", "David", "Sarah", "James", "Emma", "Liam", "Olivia", "Noah",
        "Sofia", "Lucas", "Priya", "Omar", "Fatima", "Carlos", "Hannah", "Daniel", "Chloe",
        "Mateo", "Aisha", "Tom", "Laura", "Ben",
    ),
}  # fmt: skip

#: Software swaps only inside its own group (an OS for an OS, a browser for a browser).
SOFTWARE_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"Windows", "macOS", "Linux", "Ubuntu"}),
    frozenset({"Android", "iOS"}),
    frozenset({"Chrome", "Firefox", "Safari"}),
    frozenset({"Excel", "Google Sheets"}),
    frozenset({"Gmail", "Outlook"}),
    frozenset({"Instagram", "Facebook", "TikTok", "LinkedIn", "YouTube"}),
    frozenset({"WhatsApp", "Telegram", "Slack", "Discord"}),
    frozenset({"PostgreSQL", "MySQL", "SQLite", "MongoDB", "Redis"}),
    frozenset({"React", "Vue", "Angular"}),
    frozenset({"Django", "Flask"}),
    frozenset({"Photoshop"}),
)

#: Entity names also matched in lower case, in a text typed all in lower case
#: ("what currency does sweden use"): every class but these ambiguous words.
LOWERCASE_AMBIGUOUS = frozenset(
    """nice reading chile china turkey jordan georgia rust ruby dart lua perl bash scala
    elixir go swift sun moon windows react vue angular flask chrome safari outlook slack
    discord redis excel may march august ben tom""".split()
)
LOWERCASE_CLASSES = frozenset(
    {"city", "country", "language", "proglang", "weekday", "month", "us_state", "continent",
     "landmark", "cuisine"}
)  # fmt: skip
#: A cuisine only before these words ("a Thai place", "Mexican food").
CUISINE_NEXT = frozenset(
    """restaurant restaurants place places food dish dishes cuisine curry takeout recipe
    recipes cooking meal meals""".split()
)

#: Famous works and who made them, by medium: a work swaps only for another of
#: its medium by someone else (two plays by one author share the answer to
#: "who wrote it?"), and only in a question about its author, date or maker.
WORKS: dict[str, tuple[tuple[str, str], ...]] = {
    "book": (
        ("Don Quixote", "Cervantes"), ("Don Quijote", "Cervantes"),
        ("Don Quichotte", "Cervantes"), ("Don Chisciotte", "Cervantes"),
        ("Hamlet", "Shakespeare"), ("Pride and Prejudice", "Austen"),
        ("War and Peace", "Tolstoy"), ("Moby-Dick", "Melville"), ("Moby Dick", "Melville"),
        ("Frankenstein", "Shelley"), ("Jane Eyre", "Bronte"), ("The Odyssey", "Homer"),
        ("Les Misérables", "Hugo"), ("The Great Gatsby", "Fitzgerald"),
        ("Crime and Punishment", "Dostoevsky"), ("Дон Кихота", "Cervantes"),
        ("Гамлета", "Shakespeare"), ("Евгения Онегина", "Pushkin"),
        ("One Hundred Years of Solitude", "Garcia Marquez"),
        ("Cien años de soledad", "Garcia Marquez"), ("Macbeth", "Shakespeare"),
        ("Madame Bovary", "Flaubert"), ("Faust", "Goethe"),
    ),
    "painting": (
        ("the Mona Lisa", "Leonardo"), ("The Starry Night", "van Gogh"),
        ("the Starry Night", "van Gogh"), ("the starry night", "van Gogh"),
        ("Guernica", "Picasso"), ("The Scream", "Munch"),
        ("the Sistine Chapel ceiling", "Michelangelo"),
        ("Girl with a Pearl Earring", "Vermeer"), ("The Night Watch", "Rembrandt"),
        ("The Persistence of Memory", "Dali"),
    ),
}  # fmt: skip
#: The languages whose questions use a title as written (default English): a
#: work swaps only for one the question's language writes so ("¿Quién escribió
#: Don Quijote?" -> "... Madame Bovary?", never "... Moby-Dick?"). A title takes
#: a language only where the article before it still fits ("il Macbeth").
WORK_LANGUAGES: dict[str, str] = {
    "Don Quijote": "es", "Don Quichotte": "fr", "Don Chisciotte": "it",
    "Дон Кихота": "ru", "Гамлета": "ru", "Евгения Онегина": "ru",
    "Cien años de soledad": "es", "Hamlet": "en es de", "Macbeth": "en es fr it de",
    "Frankenstein": "en es fr it de", "Madame Bovary": "en es fr", "Faust": "en fr it de",
}  # fmt: skip
#: Words that say which language a question about a work is in.
WORK_CUE_LANGUAGES: dict[str, str] = {
    "wrote": "en", "written": "en", "write": "en", "author": "en", "painted": "en",
    "who": "en", "escribió": "es", "escribio": "es", "escrito": "es", "quién": "es",
    "quien": "es", "écrit": "fr", "ecrit": "fr", "auteur": "fr", "qui": "fr",
    "scritto": "it", "autore": "it", "chi": "it", "wer": "de", "schrieb": "de",
    "geschrieben": "de",
}  # fmt: skip
#: Words that ask about one part of a work (not every work has parts).
WORK_PART_WORDS = frozenset(
    "part parts partie parte volume volumes tome chapter chapitre capítulo capitulo sequel".split()
)

#: Words that make a question about a work's maker or date.
WORK_CUES = frozenset(
    """wrote write written author authored painted paint painter artist composed published
    publish created work escribió escribio escrito autor pintó pinto écrit ecrit auteur
    publiée publiee publicada publicado scritto autore dipinto see displayed located hang
    hangs museum where language написал написала автор""".split()
)

#: Historical events and their identity: names of one event never swap for each other.
EVENTS: tuple[tuple[str, str], ...] = (
    ("World War I", "ww1"), ("World War One", "ww1"), ("WW1", "ww1"), ("WWI", "ww1"),
    ("ww1", "ww1"), ("World War II", "ww2"), ("World War Two", "ww2"), ("WW2", "ww2"),
    ("WWII", "ww2"), ("ww2", "ww2"), ("the Cold War", "cold"), ("the Vietnam War", "vietnam"),
    ("the Korean War", "korea"), ("the American Civil War", "civil"),
    ("the French Revolution", "french_rev"), ("the Russian Revolution", "russian_rev"),
    ("the Industrial Revolution", "industrial"), ("the Renaissance", "renaissance"),
)  # fmt: skip

#: Acronyms that swap within their group only (an interest rate for an interest rate).
ACRONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("APR", "APY"), ("CPU", "GPU"), ("RAM", "ROM"), ("TCP", "UDP"), ("SSD", "HDD"),
    ("GDP", "GNP"), ("LED", "LCD"), ("IPv4", "IPv6"), ("JPEG", "PNG"), ("MP3", "WAV"),
    ("HDMI", "DisplayPort"), ("REST", "GraphQL"), ("AC", "DC"), ("DNA", "RNA"),
)  # fmt: skip

#: File extensions: a glob or a file name's type decides which files a command reads.
FILE_EXTENSIONS: tuple[str, ...] = (
    "py", "js", "ts", "txt", "csv", "json", "md", "java", "rb", "html", "css", "log", "go",
    "c", "cpp", "sh", "yaml", "xml",
)  # fmt: skip

#: Who an explanation is for: the answer is written for that reader.
AUDIENCES: tuple[str, ...] = (
    # readers far enough apart that the explanation differs; no two names of one
    # reader ("a five-year-old" / "a 5-year-old", "a child")
    "a five-year-old", "a child", "a beginner", "a medical student", "an expert",
    "a senior engineer",
    "my grandmother", "a high school student", "a physicist", "a lawyer",
)  # fmt: skip

#: Currency codes swap only with codes, words only with words.
CURRENCY_CODES = frozenset({"USD", "EUR", "GBP", "JPY", "INR", "CAD", "AUD", "CHF"})

#: Words after a language name that make a fixed expression, not a language
#: ("French fries", "German shepherd"): never swapped.
LANGUAGE_FIXED_NEXT = frozenset(
    """fries toast press horn kiss dressing bulldog shepherd doors braid manicure
    cuisine food restaurant""".split()
)

#: A language name names the language (not a people or its things: "the German
#: regulator") after these words or before these.
LANGUAGE_PREVIOUS = frozenset(
    """in speak speaks speaking learn learning study studying into to from know knows
    teach teaching practise practice understand read""".split()
)
LANGUAGE_NEXT = frozenset(
    """language speakers speaker translation translator lessons lesson class classes course
    courses grammar words word subtitles tutor teacher alphabet pronunciation keyboard
    dictionary version""".split()
)

#: First names are swapped only where the answer carries the name: the person
#: a message is written to or for (the line after "to"/"for"/"dear"...).
NAME_CUES = frozenset("to for dear tell ask invite thank congratulate remind".split())
#: ... in a request to write something.
WRITING_WORDS = frozenset(
    "email e-mail message letter note text reply invitation card toast speech apology".split()
)

# --- identity: common nouns of one kind -----------------------------------------------

#: Lower-case nouns of one kind, (singular, plural): a noun swaps for another of its
#: kind in the same grammatical number ("my dog" -> "my cat", "cows" -> "ducks").
NOUNS: dict[str, tuple[tuple[str, str], ...]] = {
    "animal": (
        ("dog", "dogs"), ("cat", "cats"), ("rabbit", "rabbits"), ("hamster", "hamsters"),
        ("horse", "horses"), ("parrot", "parrots"), ("cow", "cows"), ("duck", "ducks"),
        ("goat", "goats"), ("pig", "pigs"), ("turtle", "turtles"), ("puppy", "puppies"),
        ("kitten", "kittens"), ("guinea pig", "guinea pigs"),
    ),
    "food": (
        ("rice", "rice"), ("pasta", "pasta"), ("quinoa", "quinoa"), ("oatmeal", "oatmeal"),
        ("potato", "potatoes"), ("salmon", "salmon"), ("tofu", "tofu"), ("beef", "beef"),
        ("pork", "pork"), ("egg", "eggs"), ("broccoli", "broccoli"), ("spinach", "spinach"),
        ("carrot", "carrots"), ("banana", "bananas"), ("avocado", "avocados"),
        ("lentil", "lentils"), ("cheese", "cheese"), ("yogurt", "yogurt"),
        ("steak", "steaks"), ("shrimp", "shrimp"),
    ),
    "drink": (("tea", "teas"), ("coffee", "coffees"), ("espresso", "espressos"),
              ("hot chocolate", "hot chocolates"), ("beer", "beers"), ("wine", "wines"),
              ("alcohol", ""), ("caffeine", "")),
    # the part of blood a donor gives: the universal donor of red cells (O-) is not
    # the universal donor of plasma (AB)
    "blood_component": (("red cells", ""), ("red blood cells", ""), ("plasma", "")),
    # words people mix up: "the difference between affect and effect" (one order each,
    # so a pair never swaps for itself turned round)
    "confusable": (
        ("affect and effect", ""), ("fewer and less", ""), ("who and whom", ""),
        ("lay and lie", ""), ("then and than", ""), ("its and it's", ""),
        ("further and farther", ""), ("principal and principle", ""),
        ("complement and compliment", ""), ("ensure and insure", ""),
        ("discreet and discrete", ""), ("stationary and stationery", ""),
    ),
    "material": (
        ("cotton", "cotton"), ("silk", "silk"), ("wool", "wool"), ("linen", "linen"),
        ("polyester", "polyester"), ("denim", "denim"), ("leather", "leather"),
        ("suede", "suede"), ("wood", "wood"), ("plastic", "plastic"), ("glass", "glass"),
        ("marble", "marble"), ("granite", "granite"), ("stainless steel", "stainless steel"),
    ),
    "colour": (
        ("red", "red"), ("blue", "blue"), ("green", "green"), ("white", "white"),
        ("black", "black"), ("yellow", "yellow"), ("purple", "purple"), ("pink", "pink"),
        ("brown", "brown"), ("grey", "grey"),
    ),
    "element": (
        ("gold", "gold"), ("silver", "silver"), ("copper", "copper"), ("zinc", "zinc"),
        ("oxygen", "oxygen"), ("hydrogen", "hydrogen"), ("nitrogen", "nitrogen"),
        ("carbon", "carbon"), ("helium", "helium"), ("sodium", "sodium"),
        ("calcium", "calcium"), ("platinum", "platinum"), ("potassium", "potassium"),
        ("neon", "neon"), ("argon", "argon"), ("lithium", "lithium"),
        ("magnesium", "magnesium"), ("silicon", "silicon"), ("uranium", "uranium"),
        ("chlorine", "chlorine"), ("fluorine", "fluorine"), ("xenon", "xenon"),
        ("krypton", "krypton"), ("oro", "oro"), ("ouro", "ouro"), ("cobre", "cobre"),
        ("золота", "золота"),
        ("серебра", "серебра"), ("меди", "меди"), ("Gold", "Gold"), ("Silber", "Silber"),
        ("Kupfer", "Kupfer"), ("金", "金"), ("银", "银"), ("铜", "铜"), ("铁", "铁"),
    ),
    # who comes along: a friend, a toddler and a teenager are each let in (or not)
    # on their own terms; no pair where one is the other (a toddler is a child)
    "companion": (("friend", "friends"), ("toddler", "toddlers"), ("teenager", "teenagers")),
    "document": (
        ("invoice", "invoices"), ("receipt", "receipts"), ("payslip", "payslips"),
        ("tax return", "tax returns"), ("bank statement", "bank statements"),
    ),
    "energy": (
        ("solar power", "solar power"), ("wind power", "wind power"),
        ("nuclear power", "nuclear power"), ("hydroelectric power", "hydroelectric power"),
        ("geothermal power", "geothermal power"), ("coal power", "coal power"),
    ),
    "headphone_type": (
        ("noise-cancelling", "noise-cancelling"), ("bone-conduction", "bone-conduction"),
        ("open-back", "open-back"), ("closed-back", "closed-back"),
    ),
    "appliance": (
        ("microwave", "microwaves"), ("toaster", "toasters"), ("dishwasher", "dishwashers"),
        ("kettle", "kettles"), ("air fryer", "air fryers"), ("slow cooker", "slow cookers"),
        ("pressure cooker", "pressure cookers"), ("fridge", "fridges"),
        ("freezer", "freezers"), ("washing machine", "washing machines"),
        ("tumble dryer", "tumble dryers"), ("induction hob", "induction hobs"),
        ("gas hob", "gas hobs"), ("induction cooktop", "induction cooktops"),
        ("gas stove", "gas stoves"), ("microwave oven", "microwave ovens"),
        ("toaster oven", "toaster ovens"), ("convection oven", "convection ovens"),
    ),
    "finance_product": (
        ("mortgage", "mortgages"), ("car loan", "car loans"), ("student loan", "student loans"),
        ("credit card", "credit cards"), ("payday loan", "payday loans"),
        ("savings account", "savings accounts"), ("debit card", "debit cards"),
        ("index fund", "index funds"), ("annuity", "annuities"), ("home loan", "home loans"),
    ),
    "phenomenon": (
        ("acid rain", "acid rain"), ("smog", "smog"), ("ozone depletion", "ozone depletion"),
        ("ocean acidification", "ocean acidification"), ("deforestation", "deforestation"),
        ("soil erosion", "soil erosion"), ("coral bleaching", "coral bleaching"),
        ("light pollution", "light pollution"),
    ),
    "diet": (
        ("vegan", "vegan"), ("vegetarian", "vegetarian"), ("gluten-free", "gluten-free"),
        ("keto", "keto"), ("paleo", "paleo"), ("dairy-free", "dairy-free"),
        ("low-carb", "low-carb"), ("halal", "halal"), ("kosher", "kosher"),
    ),
    "venue": (
        ("gym", "gyms"), ("pool", "pools"), ("library", "libraries"), ("museum", "museums"),
        ("cinema", "cinemas"), ("hotel", "hotels"), ("zoo", "zoos"), ("beach", "beaches"),
        ("stadium", "stadiums"),
    ),
    "profession": (
        ("programmer", "programmers"), ("doctor", "doctors"), ("teacher", "teachers"),
        ("lawyer", "lawyers"), ("nurse", "nurses"), ("accountant", "accountants"),
        ("chef", "chefs"), ("pilot", "pilots"), ("dentist", "dentists"),
        ("electrician", "electricians"), ("plumber", "plumbers"), ("architect", "architects"),
    ),
    "occasion": (
        ("birthday", "birthdays"), ("anniversary", "anniversaries"),
        ("graduation", "graduations"), ("retirement", "retirements"),
    ),
    "furnishing": (
        ("carpet", "carpets"), ("mattress", "mattresses"), ("sofa", "sofas"),
        ("curtain", "curtains"), ("rug", "rugs"),
    ),
    "nature": (
        ("ocean", "oceans"), ("forest", "forests"), ("desert", "deserts"), ("river", "rivers"),
        ("mountain", "mountains"), ("lake", "lakes"), ("volcano", "volcanoes"),
        ("glacier", "glaciers"),
    ),
    "punctuation_mark": (
        ("semicolon", "semicolons"), ("colon", "colons"), ("apostrophe", "apostrophes"),
        ("hyphen", "hyphens"), ("em dash", "em dashes"), ("exclamation mark", "exclamation marks"),
        ("comma", "commas"), ("ellipsis", "ellipses"),
    ),
    "family_member": (
        # one has one mother: parents swap in the singular only (plural "")
        ("sister", "sisters"), ("brother", "brothers"), ("mother", ""), ("father", ""),
        ("mom", ""), ("dad", ""), ("aunt", "aunts"), ("uncle", "uncles"),
        ("grandmother", ""), ("grandfather", ""), ("son", "sons"), ("daughter", "daughters"),
        ("niece", "nieces"), ("nephew", "nephews"),
        ("grandma", ""), ("grandpa", ""),
    ),
    "season": (("summer", "summers"), ("winter", "winters"), ("autumn", "autumns"),
               ("spring", "springs")),
    "meal": (("breakfast", "breakfasts"), ("lunch", "lunches"), ("dinner", "dinners"),
             ("brunch", "brunches")),
    "subject": (
        ("chemistry", "chemistry"), ("physics", "physics"), ("biology", "biology"),
        ("geography", "geography"), ("algebra", "algebra"),
        ("geometry", "geometry"), ("calculus", "calculus"), ("economics", "economics"),
    ),
    "instrument": (
        ("piano", "pianos"), ("guitar", "guitars"), ("violin", "violins"), ("flute", "flutes"),
        ("cello", "cellos"), ("ukulele", "ukuleles"), ("saxophone", "saxophones"),
        ("trumpet", "trumpets"), ("drum kit", "drum kits"),
    ),
    "sport": (
        ("football", "football"), ("soccer", "soccer"), ("basketball", "basketball"),
        ("tennis", "tennis"), ("golf", "golf"), ("baseball", "baseball"), ("hockey", "hockey"),
        ("rugby", "rugby"), ("volleyball", "volleyball"), ("badminton", "badminton"),
    ),
}  # fmt: skip

#: Kinds whose nouns swap only inside a group: a sister for an aunt (the answer's
#: pronouns stay right), a cooking appliance for another, a Spanish element name
#: for a Spanish one.
NOUN_GROUPS: dict[str, tuple[frozenset[str], ...]] = {
    "family_member": (
        frozenset("""sister mother mom aunt grandmother daughter niece grandma""".split()),
        frozenset("""brother father dad uncle grandfather son nephew grandpa""".split()),
    ),
    # brewed for brewed, a cup of one sweet drink for another
    "drink": (
        frozenset({"tea", "coffee"}),
        frozenset({"espresso", "hot chocolate"}),
        frozenset({"beer", "wine"}),
        frozenset({"alcohol", "caffeine"}),
    ),
    "appliance": (
        frozenset({"microwave", "toaster", "air fryer", "slow cooker", "pressure cooker",
                   "kettle"}),
        # a hob heats a pan; an air fryer does not
        frozenset({"induction hob", "gas hob", "induction cooktop", "gas stove"}),
        frozenset({"fridge", "freezer"}),
        frozenset({"microwave oven", "toaster oven", "convection oven"}),
        frozenset({"dishwasher", "washing machine", "tumble dryer"}),
    ),
    "finance_product": (
        frozenset({"credit card", "debit card"}),
        frozenset({"mortgage", "car loan", "student loan", "payday loan", "home loan"}),
        frozenset({"savings account", "index fund", "annuity"}),
    ),
    # a grain for a grain, a protein for a protein ("simmer 300 g of oatmeal in stock")
    "food": (
        frozenset({"rice", "pasta", "quinoa", "lentil"}),
        frozenset({"salmon", "tofu", "beef", "pork", "egg", "steak", "shrimp"}),
        frozenset({"potato", "broccoli", "spinach", "carrot"}),
        frozenset({"banana", "avocado"}),
        frozenset({"cheese", "yogurt", "oatmeal"}),
    ),
    # pets for pets (a goat is rarely scared of fireworks at home), farm animals
    # for farm animals; a horse is both
    "animal": (
        frozenset("""dog cat rabbit hamster parrot turtle puppy kitten horse""".split()
                  + ["guinea pig"]),
        frozenset({"horse", "cow", "duck", "goat", "pig"}),
    ),
    # a fabric for a fabric ("a white cotton shirt"), a hard surface for another
    "material": (
        frozenset("""cotton silk wool linen polyester denim leather suede""".split()),
        frozenset({"wood", "plastic", "glass", "marble", "granite", "stainless steel"}),
    ),
    "venue": (
        frozenset({"gym", "pool", "library", "museum", "cinema", "zoo", "beach", "stadium"}),
        frozenset({"hotel"}),  # a stay for guests; "hostel" reads as a typo of it
    ),
    # a day one forgets for a day one forgets, a milestone for a milestone
    "occasion": (frozenset({"birthday", "anniversary"}), frozenset({"graduation", "retirement"})),
    # something one spills a drink on (never "over on the curtain")
    "furnishing": (frozenset({"carpet", "rug", "sofa", "mattress"}), frozenset({"curtain"})),
    # a school's meal accounts know no brunch
    "meal": (frozenset({"breakfast", "lunch", "dinner"}),),
    "element": (
        # a gas for a gas ("the atmosphere is 78% nitrogen"), a solid for a solid
        frozenset("""oxygen hydrogen nitrogen helium neon argon xenon krypton chlorine
                  fluorine""".split()),
        frozenset("""gold silver copper zinc carbon sodium calcium platinum potassium lithium
                  magnesium silicon uranium""".split()),
        # one grammatical gender per language ("el oro" / "el cobre", never "el plata")
        frozenset({"oro", "cobre"}),
        frozenset({"ouro", "cobre"}),
        frozenset({"золота", "серебра", "меди"}),
        frozenset({"Gold", "Silber", "Kupfer"}),
        frozenset({"金", "银", "铜", "铁"}),
    ),
}  # fmt: skip
#: Chinese element names (one character each) and the words of a question about
#: an element's symbol or number.
CJK_ELEMENTS = frozenset("金银铜铁")
CJK_ELEMENT_CUES = ("化学符号", "原子序数", "元素")

#: Comparison operators turned round ("x > 5" asks the opposite of "x < 5").
COMPARISONS: tuple[tuple[str, str], ...] = (("<", ">"), ("<=", ">="), ("≤", "≥"))

#: Nouns written with a capital wherever they stand (German nouns).
CAPITALISED_NOUNS = frozenset({"Gold", "Silber", "Kupfer"})
#: Members of one kind that name the same thing: never swapped for each other.
NOUN_SYNONYMS: tuple[frozenset[str], ...] = (
    frozenset({"mortgage", "home loan"}),
    frozenset({"mother", "mom"}),
    frozenset({"father", "dad"}),
    frozenset({"grandmother", "grandma"}),
    frozenset({"grandfather", "grandpa"}),
    frozenset({"child", "children", "kid", "kids"}),
    frozenset({"carpet", "rug"}),  # one cleaning answer
    frozenset({"induction hob", "induction cooktop"}),
    frozenset({"gas hob", "gas stove"}),
    frozenset({"red cells", "red blood cells"}),
)
#: Audiences that name one reader: never swapped for each other.
AUDIENCE_SYNONYMS: tuple[frozenset[str], ...] = (frozenset({"a five-year-old", "a child"}),)
#: Kinds swapped only before these words.
NOUN_REQUIRED_NEXT: dict[str, frozenset[str]] = {
    "headphone_type": frozenset({"headphones", "earbuds", "headphone", "earphones"}),
}
#: An element swaps only in a question about the element itself.
ELEMENT_CUES = frozenset(
    """symbol atomic element elements protons neutrons electrons periodic isotope isotopes
    atom atoms melting boiling density valence símbolo simbolo tabla químico quimico
    químico atómico atomico atmosphere symbol химический символ chemische""".split()
)

#: Words after a noun of a kind that make a fixed expression or change the word's
#: sense ("white house", "green card", "spring onion", "the history of").
NOUN_BLOCKED_NEXT: dict[str, frozenset[str]] = {
    "colour": frozenset("""house friday card belt hole market sheep swan magic mirror paper
        cells cell blood giant dwarf tape carpet
        noise box list lie collar widow flag light man woman men women people person leaders
        leader voters students families family community communities americans democrats
        republicans residents children kids neighborhood neighborhoods""".split()),
    # "microwave oven", "microwave-safe", "microwave popcorn": compounds of the word
    "appliance": frozenset(
        """something it them the a an my your this that food oven ovens safe proof popcorn
        meal meals dinner dinners door settings setting mode""".split()
    ),
    "season": frozenset("onion onions roll rolls water cleaning break".split()),
    "nature": frozenset({"spray"}),
    "venue": frozenset({"table", "party"}),
    "material": frozenset({"of"}),  # "a glass of red"
    "subject": frozenset({"of", "teacher", "teachers"}),
    "food": frozenset({"cake", "pudding"}),
    "animal": frozenset({"food", "breed", "breeds"}),
    "drink": frozenset({"wipes", "wipe", "swab", "swabs", "gel", "ink", "stove", "burner",
                        "content", "free"}),
    # "the difference between affect and effect in psychology" is another question
    "confusable": frozenset({"in", "for", "when"}),
}  # fmt: skip
#: Words before a noun that make it part of a fixed expression ("hot dog", "sea lion").
NOUN_BLOCKED_PREVIOUS: dict[str, frozenset[str]] = {
    "animal": frozenset({"hot", "sea", "top", "lucky", "fat", "copy", "guinea"}),
    "colour": frozenset({"the", "of", "in", "and", "or"}),
    "drink": frozenset({"green", "black", "iced", "red", "white", "rubbing", "isopropyl",
                        "ethyl", "methyl", "denatured", "surgical"}),
    "element": frozenset({"olympic", "with"}),
    "family_member": frozenset({"big", "little", "step", "half"}),
    # "my best friend", "a childhood friend": a bond, not a kind of companion
    "companion": frozenset({"best", "childhood", "close", "old", "girl", "boy", "pen",
                            "school", "family", "dear", "true", "imaginary"}),
}  # fmt: skip
#: A programming language swaps only in a text about code ("central Java" is an island).
CODE_CUES = frozenset(
    """code coding program programming programmer function functions script scripts compiler
    developer developers language languages library libraries framework api class method loop
    array list string variable syntax install version write run regex dict json error
    exception bug debug snippet one-liner implement implementation file files folder shell
    terminal command bash""".split()
)

#: School work of a subject: swapped only in a short request that asks about the
#: work itself ("What's my next chemistry assignment?"); in a longer one the work
#: is usually pasted in, and stays the old subject's ("my chemistry homework: ...").
SUBJECT_WORK_NEXT = frozenset(
    """homework class classes exam exams test tests lesson lessons assignment assignments
    project projects grade grades quiz""".split()
)
#: A season only where it names a time ("this summer", "in winter").
SEASON_PREVIOUS = frozenset("this next last in the during every early late for of".split())
SEASON_NEXT = frozenset(
    "evening evenings night nights vacation holiday trip day days wedding".split()
)

#: Ordinals, swapped where they pick a thing ("the Second World War", "second largest").
#: Ordinals in words, then the same six in digits (the rules rank them by position).
ORDINALS: tuple[str, ...] = (
    "first", "second", "third", "fourth", "fifth", "sixth", "1st", "2nd", "3rd", "4th", "5th",
    "6th",
)  # fmt: skip
ORDINAL_NEXT = frozenset(
    """largest biggest smallest highest longest tallest most least president amendment
    world century element planet letter closest oldest
    coat coats""".split()
)

# --- identity: units ------------------------------------------------------------------

#: Units of one dimension: (singular, plural) per unit; a unit swaps for another
#: of its dimension in the same grammatical number.
UNITS: dict[str, tuple[tuple[str, str], ...]] = {
    "length": (
        ("kilometer", "kilometers"), ("mile", "miles"), ("meter", "meters"), ("foot", "feet"),
        ("centimeter", "centimeters"), ("inch", "inches"), ("kilometre", "kilometres"),
        ("metre", "metres"), ("yard", "yards"),
    ),
    "mass": (
        ("kilogram", "kilograms"), ("pound", "pounds"), ("gram", "grams"),
        ("ounce", "ounces"),
    ),
    "volume": (("liter", "liters"), ("gallon", "gallons"), ("litre", "litres")),
    "temperature": (("Celsius", "Celsius"), ("Fahrenheit", "Fahrenheit"), ("Kelvin", "Kelvin")),
    "data": (("megabyte", "megabytes"), ("gigabyte", "gigabytes"), ("terabyte", "terabytes")),
    "time": (("day", "days"), ("week", "weeks"), ("month", "months")),
}  # fmt: skip

#: Spellings of one unit: never swapped for each other.
UNIT_SYNONYMS: tuple[frozenset[str], ...] = (
    frozenset({"kilometer", "kilometre", "kilometers", "kilometres", "km"}),
    frozenset({"meter", "metre", "meters", "metres", "m"}),
    frozenset({"liter", "litre", "liters", "litres"}),
    frozenset({"mile", "miles", "mi"}),
    frozenset({"pound", "pounds", "lb", "lbs"}),
    frozenset({"kilogram", "kilograms", "kg"}),
    frozenset({"foot", "feet", "ft"}),
    frozenset({"megabyte", "megabytes", "MB"}),
    frozenset({"gigabyte", "gigabytes", "GB"}),
    frozenset({"terabyte", "terabytes", "TB"}),
    frozenset({"centimeter", "centimeters", "centimetre", "centimetres", "cm"}),
    frozenset({"gram", "grams"}),
    frozenset({"ounce", "ounces", "oz"}),
    frozenset({"inch", "inches"}),
    frozenset({"yard", "yards"}),
    frozenset({"gallon", "gallons"}),
)

#: Words before a unit that make it part of a fixed expression ("leap day", "the
#: day before", "day off").
UNIT_BLOCKED_PREVIOUS = frozenset("leap every per a one each same all some this that which".split())
UNIT_BLOCKED_NEXT = frozenset("off out before after ago".split())

#: Unit abbreviations of one dimension (case-sensitive).
UNIT_ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "length": ("km", "mi", "cm", "mm", "ft"),
    "mass": ("kg", "lb", "lbs", "oz"),
    "data": ("MB", "GB", "TB", "KB"),
}

# --- identity: numbers written as words ---------------------------------------------

#: Cardinal words above one (all take a plural noun, so a swap keeps the grammar).
NUMBER_WORDS: tuple[str, ...] = (
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "fifteen", "twenty", "thirty", "fifty",
)  # fmt: skip

# --- identity: curated operator and antonym pairs -----------------------------------

#: One-word swaps, each pair read both ways. The checker accepts exactly these.
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("increase", "decrease"), ("increasing", "decreasing"), ("ascending", "descending"),
    ("encode", "decode"), ("encoding", "decoding"), ("encrypt", "decrypt"),
    ("encryption", "decryption"), ("compress", "decompress"), ("minimum", "maximum"),
    ("largest", "smallest"), ("highest", "lowest"), ("longest", "shortest"),
    ("fastest", "slowest"), ("earliest", "latest"), ("oldest", "youngest"),
    ("above", "below"), ("upload", "download"), ("uploading", "downloading"),
    ("enable", "disable"), ("enabling", "disabling"), ("enabled", "disabled"),
    ("install", "uninstall"), ("lock", "unlock"), ("north", "south"), ("east", "west"),
    ("northern", "southern"), ("eastern", "western"), ("positive", "negative"),
    ("horizontal", "vertical"), ("horizontally", "vertically"), ("uppercase", "lowercase"),
    ("inner", "outer"), ("before", "after"), ("better", "worse"), ("buy", "sell"),
    ("buying", "selling"), ("advantages", "disadvantages"), ("hide", "show"),
    ("first", "last"), ("warmest", "coldest"),
    ("odd", "even"), ("push", "pull"), ("import", "export"),
    ("deepest", "shallowest"), ("closest", "farthest"), ("nearest", "farthest"),
    ("hottest", "coldest"), ("biggest", "smallest"), ("tallest", "shortest"),
    ("heaviest", "lightest"), ("richest", "poorest"), ("most", "least"), ("best", "worst"),
    ("drawbacks", "benefits"), ("downsides", "upsides"), ("cheapest", "most expensive"),
    ("start", "end"), ("beginning", "end"), ("pros", "cons"), ("disadvantages", "benefits"),
    ("solar", "lunar"), ("happy", "sad"), ("cheap", "expensive"), ("donor", "recipient"),
    ("inclusive", "exclusive"), ("checking", "savings"), ("short", "long"),
    ("sum", "product"), ("melancholy", "cheerful"), ("axis powers", "allied powers"),
    ("working from home", "working in the office"), ("work from home", "work in the office"),
)  # fmt: skip

#: Words after which the swapped word is part of a phrase we leave alone.
PARTICLES = frozenset("up down out off over away back through along around on in".split())
#: Pairs whose swap needs a condition on the next word (word -> next words allowed).
ANTONYM_NEXT: dict[str, frozenset[str]] = {
    # "even" is an adverb ("even if") except before these nouns
    "even": frozenset({"number", "numbers", "integers", "rows", "indices", "days"}),
    "odd": frozenset({"number", "numbers", "integers", "rows", "indices", "days"}),
    # "show me/us/all" is a request, not the opposite of hide
    "show": frozenset({"a", "the", "my", "hidden", "all", "rows", "columns", "files"}),
    "hide": frozenset({"a", "the", "my", "rows", "columns", "files", "all"}),
    # "first" and "last" as ordinals of a thing, not "at first" / "last night"
    "first": frozenset({"element", "item", "line", "row", "character", "word", "letter",
                        "occurrence", "n", "index", "column", "value", "entry", "page"}),
    "last": frozenset({"element", "item", "line", "row", "character", "word", "letter",
                       "occurrence", "n", "index", "column", "value", "entry", "page"}),
    "better": frozenset({"than"}),
    "worse": frozenset({"than"}),
    # a preposition of time or place, before a noun phrase
    "before": frozenset({"the", "a", "my", "noon", "midnight", "dinner", "lunch", "breakfast",
                         "bed", "work", "school", "sunrise", "sunset", "christmas", "surgery"}),
    "after": frozenset({"the", "a", "my", "noon", "midnight", "dinner", "lunch", "breakfast",
                        "bed", "work", "school", "sunrise", "sunset", "christmas", "surgery"}),
    "push": frozenset({"to", "changes", "a", "my", "the", "commits"}),
    "pull": frozenset({"from", "changes", "a", "my", "the", "request", "requests"}),
    "import": frozenset({"a", "the", "my", "data", "contacts", "bookmarks", "passwords"}),
    "export": frozenset({"a", "the", "my", "data", "contacts", "bookmarks", "passwords"}),
    "buy": frozenset({"a", "an", "the", "my", "used", "new", "shares", "stock", "gold"}),
    "start": frozenset({"of", ""}),
    "solar": frozenset({"eclipse", "eclipses"}),
    "checking": frozenset({"account", "balance"}),
    "short": frozenset(
        "apology text message email poem story essay summary answer paragraph speech note".split()
    ),
    "long": frozenset(
        "apology text message email poem story essay summary answer paragraph speech note".split()
    ),
    "savings": frozenset({"account", "balance"}),
    "lunar": frozenset({"eclipse", "eclipses"}),
    "end": frozenset({"of", ""}),
    "beginning": frozenset({"of", ""}),
    "sell": frozenset({"a", "an", "the", "my", "used", "new", "shares", "stock", "gold"}),
    # "the sum of 3 and 4", never "in sum" or "a lump sum"
    "sum": frozenset({"of"}),
    "product": frozenset({"of"}),
    # the mood of a piece of writing
    "melancholy": frozenset("poem song story tune letter piece verse haiku".split()),
    "cheerful": frozenset("poem song story tune letter piece verse haiku".split()),
}  # fmt: skip
#: Words before the swapped word that make a fixed expression.
ANTONYM_BLOCKED_PREVIOUS: dict[str, frozenset[str]] = {
    "before": frozenset({"day", "night", "week", "ever", "never", "long"}),
    "lowest": frozenset({"her", "his", "its", "their", "an", "my"}),
    "below": frozenset({"from"}),
    "above": frozenset({"from"}),
    "after": frozenset({"day", "night", "week", "ever", "look", "looking", "take", "takes",
                        "named", "soon", "shortly"}),
    "last": frozenset({"at", "the"}),
    "best": frozenset({"do", "my", "your", "our", "all", "at"}),
    "most": frozenset({"at", "for"}),
}  # fmt: skip
#: Words before any swapped word that make the swap unnatural ("renting over buying").
ANTONYM_BLOCKED_ANY_PREVIOUS = frozenset({"over", "versus", "vs", "or", "and", "nor"})

#: Words that must come right before the swapped word (a superlative after "the").
ANTONYM_REQUIRED_PREVIOUS: dict[str, frozenset[str]] = {
    "most": frozenset({"the"}),
    "least": frozenset({"the"}),
    "best": frozenset({"the"}),
    "worst": frozenset({"the"}),
    "start": frozenset({"the"}),
    "end": frozenset({"the"}),
    "beginning": frozenset({"the"}),
    # "is the universal donor": a blood type, never "use as the universal recipient"
    "donor": frozenset({"universal"}),
    "recipient": frozenset({"universal"}),
}
#: Words after which "best"/"worst" is a fixed expression ("the best way to").
BEST_BLOCKED_NEXT = frozenset("way ways practice practices friend friends regards bet".split())
#: Lines with both words of a pair ("buy or sell", "pros and cons") are left alone.

#: Two-sided patterns: (a, b) read both ways; ``{X}`` is one to four words kept.
FRAME_SWAPS: tuple[tuple[str, str], ...] = (
    ("remove {X} from", "add {X} to"),
    ("delete {X} from", "add {X} to"),
)

# --- identity: negation -------------------------------------------------------------

#: Negated auxiliaries and their positive forms (removed in questions).
NEGATIONS: tuple[tuple[str, str], ...] = (
    ("doesn't", "does"), ("does not", "does"), ("don't", "do"), ("do not", "do"),
    ("isn't", "is"), ("is not", "is"), ("aren't", "are"), ("are not", "are"),
    ("can't", "can"), ("cannot", "can"), ("won't", "will"), ("will not", "will"),
    ("shouldn't", "should"), ("didn't", "did"), ("wasn't", "was"), ("hasn't", "has"),
    ("haven't", "have"), ("wouldn't", "would"), ("couldn't", "could"),
)  # fmt: skip
#: Negated preferences of the speaker, removed in a statement ("I don't like spicy
#: food, what should I order?" -> "I like spicy food, ...").
NEGATED_PREFERENCES: tuple[tuple[str, str], ...] = (
    ("don't like", "like"), ("dont like", "like"), ("do not like", "like"),
    ("don't want", "want"), ("dont want", "want"), ("don't eat", "eat"),
    ("dont eat", "eat"), ("can't eat", "can eat"), ("cant eat", "can eat"),
    ("don't drink", "drink"), ("don't have", "have"), ("dont have", "have"),
)  # fmt: skip

#: Relative clauses that take a "not" ("numbers that are" -> "numbers that are not").
#: Words after "that have"/"that are" showing an auxiliary, not a verb to negate.
NEGATABLE_BLOCKED_NEXT = frozenset("not never been already also just only".split())
NEGATABLE: tuple[tuple[str, str], ...] = (
    ("that are", "that are not"), ("which are", "which are not"), ("who are", "who are not"),
    ("that is", "that is not"), ("which is", "which is not"), ("who is", "who is not"),
    ("that contain", "that do not contain"), ("that have", "that do not have"),
    ("that start with", "that do not start with"), ("that end with", "that do not end with"),
    ("that match", "that do not match"), ("that include", "that do not include"),
)  # fmt: skip
#: "using X" <-> "without using X"; "with a" <-> "without a".
WITH_WITHOUT: tuple[tuple[str, str], ...] = (
    ("using", "without using"), ("with a", "without a"), ("with an", "without an"),
    ("with the", "without the"), ("with some", "without any"), ("w/ the", "w/o the"),
)  # fmt: skip
#: Words before "using"/"with" where the swap breaks the grammar or the sense.
WITH_BLOCKED_PREVIOUS = frozenset(
    """by of when while about from for on stop start avoid recommend without is are am was
    were be been help deal cope problem problems issue issues trouble wrong experience
    familiar comfortable happy done me you him her them us it this that it's its that's
    there's what's sure laugh""".split()
)

# --- noise ------------------------------------------------------------------------------

#: Greeting and politeness openers put before a request.
GREETINGS: tuple[str, ...] = (
    "hey, quick one: ", "Hi! ", "Hello, ", "Hey there, ", "Quick question: ", "hi, ",
    "Hi there! ", "Hey! ", "Good morning! ", "Hello! I have a question. ",
)  # fmt: skip
#: Greetings that announce a question: only before one.
QUESTION_GREETINGS = frozenset({"Quick question: ", "Hello! I have a question. "})
#: Closers appended after a request.
CLOSERS: tuple[str, ...] = (
    " Thanks!", " Thank you.", " Thanks in advance.", " thx", " Thanks a lot!",
    " Any help appreciated.", " Thank you so much!",
)  # fmt: skip

#: Contractions: (expanded, contracted); lower case, matched with the case kept.
CONTRACTIONS: tuple[tuple[str, str], ...] = (
    ("do not", "don't"), ("does not", "doesn't"), ("did not", "didn't"), ("is not", "isn't"),
    ("are not", "aren't"), ("can not", "can't"), ("cannot", "can't"), ("will not", "won't"),
    ("should not", "shouldn't"), ("would not", "wouldn't"), ("could not", "couldn't"),
    ("I am", "I'm"), ("it is", "it's"), ("what is", "what's"), ("that is", "that's"),
    ("there is", "there's"), ("I have", "I've"), ("I would", "I'd"), ("you are", "you're"),
    ("they are", "they're"), ("we are", "we're"), ("let us", "let's"), ("how is", "how's"),
    ("where is", "where's"), ("who is", "who's"), ("I will", "I'll"), ("was not", "wasn't"),
    ("has not", "hasn't"), ("have not", "haven't"),
)  # fmt: skip
#: Words after which a contraction of "is"/"have" would be wrong or change the
#: sense ("what is it" keeps; "it is" at the end of a clause: "I know what it is").
CONTRACTION_BLOCKED_NEXT = frozenset({"", "?", ".", "!", ",", "not", "n't"})

#: Wordings of the same request (each pair read both ways).
MODAL_SWAPS: tuple[tuple[str, str], ...] = (
    ("Can you", "Could you"), ("can you", "could you"), ("How do I", "How can I"),
    ("how do I", "how can I"), ("What is the best way to", "What's the best way to"),
    ("Is there a way to", "Is it possible to"), ("I want to", "I'd like to"),
    ("Tell me", "Please tell me"), ("Explain", "Please explain"), ("Help me", "Please help me"),
)  # fmt: skip

#: American and British spellings of one word (each pair read both ways).
SPELLINGS: tuple[tuple[str, str], ...] = (
    ("color", "colour"), ("colors", "colours"), ("favorite", "favourite"),
    ("organize", "organise"), ("organized", "organised"), ("organizing", "organising"),
    ("optimize", "optimise"), ("optimizing", "optimising"), ("analyze", "analyse"),
    ("analyzing", "analysing"), ("center", "centre"), ("behavior", "behaviour"),
    ("license", "licence"), ("apologize", "apologise"), ("realize", "realise"),
    ("neighbor", "neighbour"), ("neighbors", "neighbours"), ("traveling", "travelling"),
    ("canceled", "cancelled"), ("gray", "grey"), ("recognize", "recognise"),
    ("summarize", "summarise"), ("customize", "customise"), ("prioritize", "prioritise"),
    ("flavor", "flavour"), ("labor", "labour"), ("defense", "defence"), ("catalog", "catalogue"),
)  # fmt: skip

#: QWERTY neighbours of each letter (a keyboard slip lands on one of them).
KEY_NEIGHBOURS: dict[str, str] = {
    "q": "wa", "w": "qes", "e": "wrd", "r": "etf", "t": "ryg", "y": "tuh", "u": "yij",
    "i": "uok", "o": "ipl", "p": "ol", "a": "qsz", "s": "adw", "d": "sfe", "f": "dgr",
    "g": "fht", "h": "gjy", "j": "hku", "k": "jli", "l": "ko", "z": "xa", "x": "zcs",
    "c": "xvd", "v": "cbf", "b": "vng", "n": "bmh", "m": "nj",
}  # fmt: skip

#: Words a typo never touches: they decide the answer on their own.
TYPO_PROTECTED = frozenset(
    """not never without with more less most least only all none every each before after
    above below between first last next previous same different other without under over
    minimum maximum true false yes cannot should would could might must than then""".split()
)

# --- context -----------------------------------------------------------------------------

#: System prompts of other users and applications: an answer written under one
#: never serves a request under another.
OTHER_SYSTEM_PROMPTS: tuple[str, ...] = (
    "You are a helpful assistant. Always answer in French.",
    "You are a tutor for ten-year-old children: explain everything in very simple words.",
    "You are the support assistant of Larkspur Telecom. Only answer questions about "
    "Larkspur plans and devices.",
    "You are a terse assistant for senior engineers: answer in one sentence, no examples.",
    "You are a pirate-themed assistant for a children's game. Stay in character.",
    "You are the assistant of a vegan recipe site: every suggestion must be plant-based.",
    "Answer only with a numbered list of at most three items.",
    "You are a legal-information assistant for users in Germany; cite German law.",
    "You are a customer assistant for Brightwater Bank. The user is on the Basic plan.",
    "Respond in the voice of a Shakespearean actor.",
)

#: Prior turns of other conversations (user, assistant), for a request after
#: different prior turns.
OTHER_TURNS: tuple[tuple[str, str], ...] = (
    ("I'm planning a week in Lisbon next spring.", "Lovely - Lisbon is mild in spring."),
    ("I'm working on a Django project with PostgreSQL.", "Great, what do you need?"),
    ("My daughter is seven and just started piano.", "How exciting! How can I help?"),
    ("I'm on a strict budget this month.", "Understood, I'll keep costs low."),
    ("Let's talk about my thesis on coral reefs.", "Sure - what part are you working on?"),
    ("I only have a microwave and a kettle.", "Noted, I'll stick to those."),
    ("We're using Java 8 at work and can't upgrade.", "Okay, I'll stay within Java 8."),
    ("I live in Canada.", "Thanks, I'll keep that in mind."),
)
