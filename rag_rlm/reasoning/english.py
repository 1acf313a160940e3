"""The English the rules know, in one place: every word list the reasoners use, and the word sets
that overlap scores compare. Another language is another module like this one."""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been being what which who whom whose "
    "when where why how did does do that this it its as i you we he she they me my your our their his her them "
    "us can could should would will shall may might must has have had not no yes there here than then so if "
    "about into over under up out any all some many much more most other such only also just very get gets got "
    "need needs there's what's it's between both either each same one ones s".split())


# Texts whose word sets are remembered: a sentence is scored by every step and question that
# reads it, and stemming its words again each time was a quarter of the answering interpreter's
# time. ~1.5 KB an entry: ~12 MB.
WORD_CACHE = 8192
QUESTION_CACHE = 1024  # questions, whose clause, words and names every sentence is scored against


@lru_cache(maxsize=WORD_CACHE)
def content_words(text: str) -> frozenset[str]:
    """Lower-case words that carry meaning, lightly stemmed (plural -s), for overlap scores.
    Frozen: the same set goes to every caller."""
    return words_of(text)


def words_of(text: str) -> frozenset[str]:
    """`content_words`, not remembered."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP and len(w) > 1)


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "al", "ly", "s", "e")


def _stem(word: str) -> str:
    """A light suffix stripper: "approves", "approved", "approval" and "approve" meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word




# Pairs of words that reverse what a question asks: the reader's training makes unanswerable
# questions by swapping one (rag_rlm.reader.perturb), as SQuAD 2.0's writers did.
ANTONYMS = dict(
    pair
    for a, b in (("first", "last"), ("largest", "smallest"), ("most", "least"), ("highest", "lowest"),
                 ("before", "after"), ("earliest", "latest"), ("north", "south"), ("east", "west"),
                 ("increase", "decrease"), ("increased", "decreased"), ("more", "less"), ("older", "younger"),
                 ("oldest", "youngest"), ("maximum", "minimum"), ("longest", "shortest"), ("won", "lost"),
                 ("larger", "smaller"), ("higher", "lower"), ("longer", "shorter"), ("above", "below"),
                 ("early", "late"), ("best", "worst"), ("major", "minor"), ("strongest", "weakest"),
                 ("biggest", "smallest"), ("upper", "lower"), ("northern", "southern"), ("eastern", "western"),
                 ("inside", "outside"), ("began", "ended"), ("start", "end"), ("rise", "fall"))
    for pair in ((a, b), (b, a))
)
# Words that open a question or a clause in capitals without being a name.
CAPITALISED_FUNCTION_WORDS = frozenset(
    "The A An In On At Of For By To From With What Which Who Whom Whose When Where Why How Is Are Was Were "
    "Do Does Did Has Have Had Can Could Should Would Will After Before During If It Its This That These "
    "Those Their His Her".split())


# Capitalised words that are no name: weekdays and months, function words, and words capitalised
# only because they open a sentence or a list item.
NOT_ENTITIES = frozenset({"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January",
                  "February", "March", "April", "May", "June", "July", "August", "September", "October",
                  "November", "December", "Owner", "Note", "See", "Also", "However", "Today", "Yes", "No","The", "A", "An", "It", "He", "She", "They", "This", "That", "In", "On", "At", "His", "Her",
                  "Its", "Their", "As", "After", "Are", "Is", "Was", "Were", "Do", "Does", "Did", "Has", "Have",
                  "Both", "Between", "Besides", "If", "Other", "Than", "Before", "During", "From", "By", "With", "For", "When", "While",
                  "There", "These", "Those", "Who", "What", "Which", "Where", "How", "Why", "But", "And", "Or",
                  # words that are capitalised only because they open a sentence or a list item
                  "Our", "Your", "You", "We", "Please", "Each", "Every", "All", "Any", "Some", "Most", "Many",
                  "New", "Only", "Then", "Once", "Until", "Since", "Because", "Although", "Use", "Ask", "Open",
                  "Run", "Book", "Request", "Submit", "Send", "Join", "Read", "Expenses", "Employees", "Up",
                  "Everyone", "Nobody", "None", "Not", "Never", "Always", "Here", "First",
                  "Second", "Third", "Next", "Last", "Finally", "Questions", "Step", "Steps",
                  # a conjunction, preposition or participle that opens a sentence ("Born in Salt
                  # Lake City, he ...", "Following the war", "Even so"): the name starts after it
                  "Even", "Though", "Despite", "Following", "Including", "According", "Unlike", "Among",
                  "Upon", "Born",
                  # a program's literals, capitalised in a manual's signatures ("strict=False")
                  "True", "False"})



# Endings of an adverb that opens a sentence capitalised ("Originally", "Otherwise").
ADVERB_ENDINGS = ("ally", "ously", "ively", "ently", "antly", "ately", "ably", "ibly", "ortly", "ingly")
DISCOURSE_WORDS = frozenset("Otherwise Hence Thus Therefore Moreover Furthermore Nevertheless Nonetheless Meanwhile "
                             "Instead Indeed Likewise Consequently Accordingly Alternatively Similarly Still Overall "
                             "Conversely Again Further Besides".split())


# Nationality words: "American" is what a person or a thing is (an adjective), not a thing itself.
DEMONYMS = frozenset(
    "American British English French German Italian Spanish Australian Canadian Indian Chinese Japanese "
    "Russian Irish Scottish Welsh European African Asian Mexican Swedish Dutch Korean Brazilian Polish Greek "
    "Turkish Israeli Jewish Christian Catholic Roman Norwegian Danish Finnish Portuguese Austrian Swiss "
    "Belgian Egyptian Persian Arab Arabic Latin Hindi Soviet Indonesian Filipino Argentine Chilean "
    "Pakistani Iranian Iraqi Ukrainian Hungarian Czech Romanian Serbian Croatian Nigerian Kenyan".split())


# Words that say what a comparison asks for: an earlier or later date, a larger or smaller figure.
EARLY = {"first", "earlier", "earliest", "older", "oldest", "before", "sooner"}
LATE = {"later", "latest", "newer", "newest", "younger", "youngest", "last", "after", "more recently", "recent"}
MORE = {"more", "most", "larger", "largest", "bigger", "biggest", "higher", "highest", "longer", "longest",
         "taller", "tallest", "greater", "greatest", "heavier", "faster", "wider", "coarser"}
LESS = {"less", "least", "fewer", "fewest", "smaller", "smallest", "lower", "lowest", "shorter", "shortest",
         "cheaper", "slower", "lighter", "finer"}


def comparison_words(text: str) -> list[str]:
    """The comparison words of `text`, in order."""
    return [w for w in re.findall(r"[a-z]+", text.lower()) if w in EARLY | LATE | MORE | LESS]


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec")

AUXILIARIES = frozenset("is are was were has have had does do did can could will would should may might must".split())

# What a unit measures: figures are compared only within one measure.
UNIT_MEASURES = {
    **dict.fromkeys(["%", "percent", "per cent", "pct"], "percent"),
    **dict.fromkeys(["dollars", "dollar", "euros", "euro", "usd", "eur", "gbp"], "money"),
    **dict.fromkeys(["second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks",
                     "month", "months", "year", "years", "ms", "millisecond", "milliseconds", "microsecond",
                     "microseconds", "nanosecond", "nanoseconds"], "duration"),
    **dict.fromkeys(["byte", "bytes", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "kilobytes",
                     "megabytes", "gigabytes", "terabytes", "bits"], "size"),
    **dict.fromkeys(["km", "kilometres", "kilometers", "miles", "mile", "m", "metres", "meters", "feet", "ft",
                     "inches", "cm", "mm"], "length"),
    **dict.fromkeys(["kg", "kilograms", "g", "grams", "tonnes", "tons", "pounds", "lb", "lbs"], "weight"),
}

# Words of a comparison question that name the measure compared ("a larger share", "cheaper").
COMPARED_MEASURES = {
    **dict.fromkeys(["share", "percent", "percentage", "proportion", "fraction"], {"percent"}),
    **dict.fromkeys(["cost", "costs", "price", "expensive", "cheaper", "cheapest", "pay", "pays", "paid",
                     "salary", "fee", "fees"], {"money"}),
    **dict.fromkeys(["long", "longer", "longest", "shorter", "shortest"], {"duration", "length"}),
    **dict.fromkeys(["resolution", "precision", "finer", "coarser"], {"duration", "length"}),
    **dict.fromkeys(["storage", "bytes", "memory", "disk"], {"size"}),
    **dict.fromkeys(["taller", "tallest", "height", "distance", "wider"], {"length"}),
    **dict.fromkeys(["heavier", "heaviest", "lighter", "weight"], {"weight"}),
    **dict.fromkeys(["populous", "population", "people", "employees", "members", "inhabitants"], {"count"}),
}

# Kinds of named things a "which city / which actress" question asks for: the answer is a name.
NAMED_THINGS = ("city", "country", "town", "company", "person", "team", "band", "state", "river", "film", "movie",
                "book", "school", "university", "actor", "actress", "singer", "senator", "politician", "president",
                "player", "author", "writer", "director", "network", "station", "label", "magazine", "album", "song",
                "county", "province", "island", "club", "league", "party", "family", "tribes?", "tool", "product",
                "team", "department", "person", "manager", "office")


# The function words a follow-up is parsed with (rag_rlm.reasoning.followup): no tagger, so a noun
# phrase is a run of the words that are none of these.
WH_WORDS = set("what which who whom whose when where why how".split())
AUX_WORDS = set(
    "is are was were be been being am do does did have has had can could should would will shall may "
    "might must isn't aren't wasn't weren't don't doesn't didn't haven't hasn't can't couldn't "
    "shouldn't won't wouldn't 's".split()
)
BE_WORDS = set("is are was were be been am isn't aren't wasn't weren't 's".split())
SUBJECT_PRONOUNS = set("i you we they he she it".split())
PRONOUNS = SUBJECT_PRONOUNS | set(
    "me my mine myself your yours us our ours them their theirs him his her hers its this that these "
    "those there someone anyone anybody somebody everyone everybody something anything everything one".split()
)
DETERMINERS = set("a an the my our your their his her its this that these those any some each every all no".split())
QUANTIFIERS = set("many much more most few other another such same both either neither own".split())
PREPOSITIONS = set(
    "of in on at for to from by with about over under above below into onto after before during between "
    "within without per through via than across around against among since until upon like as".split()
)
CONJUNCTIONS = set("and or but if so then also too else not nor because while whether".split())
CHAT_WORDS = set("thanks thank ok okay great yes yeah sure cool hi hello perfect awesome nice huh hmm um oh ah".split())
ADVERBS = set("please still just only usually really actually currently already again ever even later now "
           "today here up out off long often soon yet very always never sometimes instead back".split())
LIGHT_VERBS = set(
    "get gets getting got make makes made need needs needed offer offers offered cover covers covered "
    "take takes took give gives go goes going want wants know find see tell let become becomes provide "
    "provides allow allowed apply applies happen happens".split()
)
FUNCTION_WORDS = WH_WORDS | AUX_WORDS | PRONOUNS | DETERMINERS | QUANTIFIERS | PREPOSITIONS | CONJUNCTIONS | ADVERBS | LIGHT_VERBS | CHAT_WORDS
GENERIC_NOUNS = set(
    "company companies employee employees staff people person team rule rules policy policies process "
    "thing things way information info details question work".split()
)
# what a question asks for by its kind when it does not know the name ("Which option ...?", "Is there a
# setting that ...?"): the answer names it, and a follow-up's "it" is that name
THING_KINDS = set("option setting parameter flag switch command function method variable directive module class "
                  "property attribute field key macro hook signal constant tool utility program operator".split())
MEASURE_NOUNS = set("share percentage percent amount number rate limit total kind type part".split())
TIME_PREPOSITIONS = {"after", "before", "during", "within", "until", "since", "without", "once"}
ATTACHING_PREPOSITIONS = {"of", "over", "under", "above", "below"}  # "expenses over $500" is one subject
TIME_NOUNS = set("year month week quarter time day morning afternoon evening weekend".split())
EXTRAPOSED_WORDS = set(  # "is it possible to ...", "how long does it take to ...": no referent
    "possible ok okay allowed necessary required mandatory true normal fine acceptable legal permitted "
    "common important better best easy hard worth safe appropriate take takes took cost costs".split()
)
