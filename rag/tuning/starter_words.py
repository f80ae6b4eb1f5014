"""Word lists the starter-set templates (starter_rules) judge sentences by: which first words
cannot start a term, which words make a definition vague, which labels name a quantity, which
titles name no thing. Plain data, kept apart so the templates read as templates."""

from __future__ import annotations

STOP_WORDS = frozenset(
    "a an the of and or to in on at by for with from as is are was were be been it its this "
    "that these those there here than then so but if not no yes can could may might will would "
    "should must do does did has have had which who whom whose what when where why how all any "
    "each every some such very more most less least one two also only just into over under "
    "about per via".split())

NOT_SUBJECTS = {
    "this", "that", "these", "those", "it", "its", "they", "their", "there", "here", "such",
    "every", "one", "another", "we", "you", "he", "she", "what", "which", "who", "how", "why",
    "when", "where", "some", "all", "both", "either", "neither", "no", "none", "other", "if",
    "for", "in", "on", "at", "with", "without", "by", "after", "before", "while", "because",
    "so", "but", "and", "or", "then", "than", "also", "even", "only", "as", "to", "of", "from",
    "each", "many", "few", "more", "less", "our", "your", "my", "his", "her", "let", "note",
    # a clause opening a sentence ("Since AdaGrad is a stochastic gradient descent algorithm,
    # we will see ..."): its subject is no term the sentence defines
    "since", "although", "though", "unless", "whereas", "once", "until", "whether", "given",
    "suppose", "assuming", "unlike", "like",
}
GENERIC_HEADS = {
    "result", "problem", "answer", "reason", "goal", "idea", "point", "key", "trick", "difference",
    "cost", "price", "advantage", "disadvantage", "benefit", "downside", "catch", "rule",
    "solution", "question", "aim", "purpose", "challenge", "risk", "effect", "outcome", "lesson",
    "consequence", "first", "second", "third", "last", "next", "same", "main", "best", "step",
    "approach", "method", "way", "option", "choice", "case", "example", "name", "thing", "part",
    "output", "input", "process", "task", "work", "job", "role", "use", "focus", "default",
    "good", "bad", "rest", "latter", "former", "simplest", "easiest", "hardest", "sum", "value",
}
FUNCTION_WORDS = {
    "of", "that", "which", "who", "whose", "with", "for", "in", "on", "at", "by", "from", "to",
    "and", "or", "but", "as", "when", "where", "because", "so", "than", "into", "between",
    "through", "used", "over", "under", "while", "if", "about", "like", "per", "via",
}
# words that point outside the sentence: a subject holding one names nothing on its own
POINTING = {"this", "these", "those", "here", "above", "below", "following", "first", "second",
            "third", "last", "next", "previous", "other", "former", "latter", "your", "our",
            "my", "same", "such", "said"}
SMALL_WORDS = {"of", "and", "the", "for", "to", "in", "on", "a", "an", "with", "de"}
STOPPERS = FUNCTION_WORDS | {"containing", "concerned", "called", "known", "made", "based",
                             "consisting", "designed", "responsible", "able", "too", "also",
                             "such", "then", "is", "are", "can", "will", "must", "has", "have",
                             "inside", "within", "across", "without", "where", "whereas",
                             "we", "you", "they", "it", "i", "our", "your", "their"}
EVALUATIVE = {
    "only", "main", "key", "simplest", "most", "best", "first", "second", "classic", "newer",
    "older", "hard", "easy", "open", "critical", "important", "useful", "common", "standard",
    "natural", "good", "great", "major", "big", "small", "large", "heavy", "cheapest", "cheap",
    "central", "core", "crucial", "typical", "usual", "single", "whole", "same", "other", "real",
    "true", "basic", "simple", "general", "particular", "specific", "popular", "powerful",
    "abundant", "fundamental", "primary", "obvious", "practical", "measured", "familiar", "very",
    "more", "less", "new", "old", "modern", "traditional", "current", "various", "different",
    "efficient", "effective", "ideal", "perfect", "greatest", "biggest", "largest",
    "smallest", "fastest", "slowest", "highest", "lowest", "cheaper", "better", "worse",
    "latest", "recent", "newest", "earliest", "last",
}
GENERIC_FACTS = {
    "part", "family", "form", "kind", "type", "set", "property", "art", "gift", "sum", "factor",
    "question", "test", "source", "component", "example", "tool", "thing", "piece", "means",
    "method", "approach", "technique", "concept", "idea", "term", "name", "number", "quantity",
    "matter", "case", "problem", "issue", "area", "field", "topic", "subject", "discipline",
    "step", "stage", "alternative", "way", "choice", "option", "trade-off", "burden", "result",
    "process", "function", "system", "collection", "combination", "class", "group", "list",
    "machine", "device", "sense", "sensor", "network", "directory", "version", "series",
    "sequence", "variant", "mix", "balance", "challenge", "goal", "amount", "place",
    "consideration", "location", "bit", "lot",
}
QUANTITY_WORDS = {
    "rate", "rates", "frequency", "time", "latency", "range", "size", "speed", "resolution",
    "accuracy", "weight", "mass", "power", "ram", "memory", "storage", "vram", "cost", "price",
    "count", "length", "height", "width", "duration", "bandwidth", "fov", "consumption",
    "voltage", "capacity", "temperature", "delay", "period", "torque", "force", "stiffness",
    "payload", "budget", "distance", "radius", "diameter", "depth", "error", "precision",
    "throughput", "runtime", "battery", "lifetime", "horizon", "gain", "limit", "threshold",
    "tolerance", "percentage", "share", "dof", "fps", "step", "steps",
}
MASS_NOUNS = {"control", "planning", "learning", "estimation", "perception", "sensing",
              "localization", "localisation", "mapping", "navigation", "safety", "stereo",
              "light", "detection", "tracking", "manipulation", "locomotion", "simulation",
              "software", "hardware", "data", "storage", "memory", "fusion"}
GENERIC_TITLES = {"overview", "introduction", "instructions", "key components", "deliverables",
                  "lesson overview", "summary", "requirements", "specifications", "details",
                  "example", "examples", "setup", "notes", "background", "components"}
TRAILING_TITLE_WORDS = {"specifications", "specs", "requirements", "overview", "setup",
                        "configuration", "details", "summary"}
