"""What the masker (fincon.llm.masking) looks for and what it puts in its place: the date, number
and name patterns, the distances and buckets that stand for them, the common-word table, and the
topics an item is reduced to."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

from fincon import data

MONTHS = {
    m.lower(): i
    for i, names in enumerate(
        [
            ("January", "Jan"),
            ("February", "Feb"),
            ("March", "Mar"),
            ("April", "Apr"),
            ("May",),
            ("June", "Jun"),
            ("July", "Jul"),
            ("August", "Aug"),
            ("September", "Sep", "Sept"),
            ("October", "Oct"),
            ("November", "Nov"),
            ("December", "Dec"),
        ],
        start=1,
    )
    for m in names
}
_MONTH = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
#: Every pattern below opens with a lookahead for the characters it can start
#: with: the same matches, but the regex engine rejects most positions on one
#: character instead of trying the whole pattern there (bench/masking.py).
#: A month name's first two letters:
_OPENS = "(?=[" + "".join(sorted({m[0] for m in MONTHS})) + "][" + "".join(sorted({m[1] for m in MONTHS})) + "])"
DIGIT = re.compile(r"\d")
#: white space within a line: no pattern matches across a line break, so a prompt is masked line by line
#: (each line memoised: most of a day's prompt repeats an earlier one's lines) with the same result as whole
SP = r"[^\S\n]"
_TIME = r"(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
ISO = re.compile(r"(?=[12])(?<![\d-])((?:19|20)\d{2})-(\d{2})-(\d{2})" + _TIME + r"(?![\d])")
MDY = re.compile(rf"{_OPENS}\b({_MONTH}){SP}+(\d{{1,2}})(?:st|nd|rd|th)?(?:,{SP}*|{SP}+)((?:19|20)\d{{2}})\b", re.I)
#: a day, month and year: "27 Oct 2020", "27th October, 2020", "27-Oct-2020" (a hyphenated one read as
#: none, found in review: the day stood whole in a masked prompt)
DMY = re.compile(
    rf"(?=\d)\b(\d{{1,2}})(?:(?:st|nd|rd|th)?{SP}+({_MONTH})(?:,{SP}*|{SP}+)|-({_MONTH})-)((?:19|20)\d{{2}})\b", re.I
)
#: a month and its year, "Sep 2020" or "Sep-2020" (the hyphen's stood whole: found in review)
MY = re.compile(rf"{_OPENS}\b({_MONTH})(?:{SP}+|-)((?:19|20)\d{{2}})\b", re.I)
MY_MD = re.compile(
    rf"{_OPENS}\b({_MONTH})(?:{SP}+(?:((?:19|20)\d{{2}})\b|(\d{{1,2}})(?:st|nd|rd|th)?\b(?!:\d))|-((?:19|20)\d{{2}})\b)",
    re.I,
)
SHORT_YEAR = re.compile(r"(?=')(?<![\w'])'(\d{2})(?![\w'])")
#: a date written as YYYYMMDD (inside an item's id): an opaque token per run, mapped back in answers
COMPACT = re.compile(r"(?=[12])(?<!\d)((?:19|20)\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?!\d)")
TOKEN_BACK = re.compile(r"\bD[0-9a-f]{6}\b")
YEAR = re.compile(
    rf"(?=[Ff'12])(?<![\w$.-])(?:FY|fiscal{SP}+)?'?((?:19|20)\d{{2}})(?:(?:{SP}?|-)([QH][1-4]))?(?![\w-])"
)
#: a span of years, "2020-2021", "2020-21", "2020/21" (the second year stood whole: found in review)
YEAR_RANGE = re.compile(r"(?=[Ff12])(?<![\w$.-])(FY|fiscal\s+)?((?:19|20)\d{2})([-–/])((?:19|20)\d{2}|\d{2})(?![\w-])")
#: a quarter or half and its year: "Q1 2021", "Q12021", "Q1-2021" (the hyphen's kept whole, found in review)
QUARTER_YEAR = re.compile(rf"(?=[QH1-4])\b([QH][1-4]|[1-4][QH])(?:{SP}?|-)((?:19|20)\d{{2}})\b")
DOLLARS = re.compile(
    r"(?=[U$])(?:US)?\$\s?(\d[\d,]*(?:\.\d+)?)\s*(trillion|billion|million|thousand|tn|bn|mn|[kKmMbBtT])?(?![\w])"
)
#: what marks a dollar amount as the stock's own price (fincon's texts: "the close that day was $212.50")
PRICE_WORDS = re.compile(
    r"\b(?:close|closed|closing|price|priced|shares? (?:at|traded|trading)|trading at)\b[^.$]{0,30}$", re.I
)
#: a percentage; not the upper end of a range ("3-7%": its lower end is read with it) nor a bucket the mask
#: wrote ("over 100%"), so that masking masked text leaves it as it is ("3-7%" read "3-7-15%" when a model
#: quoted it back)
PERCENT = re.compile(rf"(?<![\w.])(?<!\d[-–])([+-]?)(\d[\d,]*(?:\.\d+)?)({SP}?)(%|percent\b)")
#: a number glued to its unit ("115M", "7.57B", "1,000bps", "2.5x"): the number rule reads none of them
UNIT_NUMBER = re.compile(r"(?<![\w.\-\[$])(\d[\d,]*(?:\.\d+)?)(K|M|B|bn|mn|bps|x)(?![\w])")
#: a date in digits ("30.09.2020", "9/30/2020", "10-27-2020"): a slash or a hyphen reads month first, a dot
#: day first (a hyphenated one, and one written year first, "2020.10.27", were read as none: found in review)
NUMERIC_DATE = re.compile(r"(?<![\w./-])(\d{1,2})([./-])(\d{1,2})\2((?:19|20)\d{2})(?![\w/-]|\.\d)")
YMD = re.compile(r"(?=[12])(?<![\w./-])((?:19|20)\d{2})([./])(\d{1,2})\2(\d{1,2})(?![\w/-]|\.\d)")
#: a fiscal period with a two-digit year ("FY21", "3Q20", "1H21", "Q4'20"): its year, as "FY2021"'s
FISCAL_SHORT = re.compile(r"(?<![\w'])(?:(FY)['-]?|([1-4])Q['-]?|([12])H['-]?|(Q[1-4]|H[12])['-]?)(\d{2})(?![\w'-])")
_NUM = r"\d[\d,]*(?:\.\d+)?"
#: a range of percentages ("40-60%", "3-7 %"): one bucket from the lower end's to the upper end's
PERCENT_RANGE = re.compile(rf"(?<![\w.])([+-]?)({_NUM}){SP}?[-–]{SP}?({_NUM})({SP}?)(%|percent\b)")
#: numbers kept as they are: item labels (E1), spans ("20-day", "20 trading days"), values in [-1, 1]
#: (confidences, tones, weights), a single digit; anything else of two digits or more is "[n]"
NUMBER = re.compile(
    r"(?<![\w.\-\[])([+-]?\d(?:[\d,]*\d)?(?:\.\d+)?)(?![\w.]*\d)(?!-[A-Za-z])(?![\w%])"
    rf"(?!{SP}?(?:[-–]{SP}?{_NUM}{SP}?)?(?:%|percent\b))"  # a percentage ("14.2 percent"), a range's lower end
    # a span of time ("20 trading days") says nothing, nor a length fincon asks for ("at most 25 words")
    rf"(?!{SP}+(?:(?:trading{SP}+)?(?:days?|sessions?|weeks?|months?)|words|characters)\b)"
)
#: an ordinal of two digits or more ("its 45th anniversary", "the 117th Congress": a year); "[n]th"
ORDINAL = re.compile(r"(?<![\w.\-\[])\d{2,}(?:st|nd|rd|th)\b")
#: a span of time that is an offset from an event ("30 days until year-end", "8 months since ..."): the
#: spans fincon writes itself ("20 trading days after", "5 sessions from") are kept, an offset the mask
#: promised never to leave is not
OFFSET_SPAN = re.compile(
    rf"(?<![\w.\-\[])\d[\d,]*(?={SP}+(?:days?|weeks?|months?|years?){SP}+(?:before|after|until|since|ago|left)\b)"
)
#: words that name a day or a week of the calendar (holidays, shopping days, an election): "[event]"; and a
#: month that is also a word (March, May: kept as financial English where the other months became names)
CALENDAR = re.compile(
    r"\b(?:Thanksgiving|Christmas|Easter|Hanukkah|Halloween|Diwali|Black Friday|Cyber Monday|Prime Day|"
    r"Singles'? Day|Labou?r Day|Memorial Day|Veterans'? Day|Independence Day|Fourth of July|July 4th|"
    r"New Year'?s(?: Day| Eve)?|Presidents'? Day|Martin Luther King(?: Jr\.?)? Day|Columbus Day|Tax Day|"
    r"Election Day|(?:presidential|midterm) elections?|[Bb]ack-to-school|[Hh]oliday (?:season|shopping|quarter|sales))"
    r"(?!\w)"
)
MONTH_WORD = re.compile(r"(?<=[a-z,;:(-] )(?:March|May)\b|(?<=mid-)(?:March|May)\b|\b(?:Mar|Sept)\.(?= \w)")


def calendar(s: str) -> str:
    """Holidays, shopping days, an election: "[event]"; March and May mid-sentence: "[month]"."""
    return MONTH_WORD.sub("[month]", CALENDAR.sub("[event]", s))


#: how a prompt states the position ("Current position: {position}"): a line is not split after it (Masker._line)
POSITION_LEADS = ("Current position: ", "negative = short): ")
#: what the number and name rules leave alone: ids and labels in brackets, fincon's price indices, and
#: the position a prompt states ("Company A -1.10, Company B +0.50": a weight over 1 read "[n]", found in
#: review; a weight names no firm or day)
HELD = re.compile(
    r"\[[^\[\]\n]{1,80}\]|price index \d+(?:\.\d+)?|(?:(?<=Current position: )|(?<=negative = short\): ))"
    r"(?:Company [A-Z]{1,2} [+-]\d+\.\d\d(?:, (?=Company )|(?![^\n])))+"
)
#: a held span's stand-in: the first of Unicode's supplementary private-use characters (no rule matches one)
HOLD = 0xF0000
HELD_BACK = re.compile("\x00([\U000f0000-\U000ffffd])\x00")
#: a capitalised word, an acronym or a word with capitals inside (iPhone, LinkedIn)
PROPER = re.compile(r"(?<![\w\[-])([A-Za-z]*[A-Z][A-Za-z]*(?:[&'.-][A-Za-z]+)*)(?![\w\]])")
PSEUDO = re.compile(r"^(?:Company|Person)$|^[A-Z]{1,2}\d?$")
SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
#: an approximation before an open bucket ("about 120%" read "about over 100%"): the bucket says it
_NEAR_OVER = re.compile(r"\b(?:about|around|roughly|approximately|nearly|almost|some)\s+(?=over \d)", re.I)
#: percent buckets: (upper bound, label)
_BUCKETS = ((1.0, "0-1"), (3.0, "1-3"), (7.0, "3-7"), (15.0, "7-15"), (30.0, "15-30"), (60.0, "30-60"),
            (100.0, "60-100"), (float("inf"), "over 100"))  # fmt: skip
#: the bounds of the buckets, as an open one is written ("over 60%")
_BOUNDS = frozenset(f"{b:g}" for b, _ in _BUCKETS[:-1])
#: generic words in capitals that name no one (kept by the proper-name rule)
KEEP = frozenset(
    """CEO CFO COO CTO CIO US USA UK EU AI API IT GDP EPS IPO ETF ESG FDA SEC COVID COVID-19 Q1 Q2 Q3 Q4 H1 H2 FY
    YoY QoQ R&D M&A EBITDA EBIT SaaS B2B B2C OK TV PC PCs CVaR VaR JSON ETFs IPOs CEOs EV EVs LLC Inc Corp Ltd
    AM PM GAAP ROE ROI ROA LTM TTM NYSE Nasdaq NASDAQ Dow S&P PnL P&L""".split()
)
#: abbreviations of financial English a single firm's corpus can use in most of its items (market
#: research releases: "a CAGR of 5 % to USD 4 billion"): never taken for the firm's name
FINANCE_ABBREVIATIONS = frozenset(
    """CAGR USD EUR GBP JPY CNY RMB INR CHF CAD AUD HKD KRW YTD MoM AUM NAV FCF ROIC WACC DCF NPV IRR ARPU ARR MRR
    KPI KPIs OTC PLC CAPEX OPEX EBITA IoT B2G SME SMEs APAC EMEA LATAM MEA""".split()
)
#: what a word's share of financial documents must reach to count as common English (fincon.data.lexicon)
COMMON_SHARE = 0.001
#: the recency a distance in days reads as: never an exact offset
_RECENCY = ((0, "the decision day"), (7, "this week"), (31, "this month"), (92, "this quarter"), (365, "this year"))


#: an exchange prefix ("NASDAQ: MSFT"): the one name the entity rule reads across ": "
EXCHANGE = re.compile(r"NASDAQ|NYSE|Nasdaq")


def recency(n: int) -> str:
    """A distance from the decision day (days; negative: before it) as coarse recency."""
    if n > 0:
        return "days later" if n <= 7 else "weeks later" if n <= 31 else "months later"
    for limit, phrase in _RECENCY:
        if -n <= limit:
            return phrase
    return "over a year ago"


#: a rules insight's reading with its score ("-> reads bearish (-0.69)", fincon.agents.brains): the word alone,
#: as an item's tone is (two decimals narrowed a firm's day to ~2 days of a rules replay: found in review);
#: its score cut by a prompt's clip ("(-0." before a label, held or not, " | " or the line's end) goes too
READS = re.compile(
    rf"(-> reads (?:bullish|bearish|neutral)) \((?:[+-]\d\.\d\d\)|[+-]?\d?\.?\d?(?={SP}*(?:\[|\x00|\| |$)))"
)


def numbers(s: str) -> str:
    """Percentages bucketed, other numbers of two digits or more "[n]"; bracketed ids and labels kept."""
    if not DIGIT.search(s):
        return s
    if "-> reads " in s:
        s = READS.sub(r"\1", s)
    s = s.replace("COVID-19", "\x01")

    def pct(m: re.Match) -> str:
        try:
            v = float(m.group(2).replace(",", ""))
        except ValueError:
            return m.group(0)
        label = bucket(v)
        if m.string[max(0, m.start() - 5) : m.start()] == "over ":  # "over 537%" was kept as it was
            if m.group(2) in _BOUNDS:  # a bucket the mask wrote ("over 100%", a range's "over 60%")
                return m.group(0)
            label = label.removeprefix("over ")
        return f"{m.group(1)}{label}{m.group(3)}{m.group(4)}"

    def unit(m: re.Match) -> str:
        text = m.group(1)
        try:
            v = float(text.replace(",", ""))
        except ValueError:
            return m.group(0)
        return m.group(0) if abs(v) <= 1.0 or len(text) == 1 else f"[n]{m.group(2)}"

    def num(m: re.Match) -> str:
        text = m.group(1)
        try:
            v = float(text.replace(",", ""))
        except ValueError:
            return text
        if abs(v) <= 1.0 or (len(text.lstrip("+-")) == 1):
            return text
        return "[n]"

    def span(m: re.Match) -> str:
        try:
            a, b = float(m.group(2).replace(",", "")), float(m.group(3).replace(",", ""))
        except ValueError:
            return m.group(0)
        return f"{m.group(1)}{bucket_range(a, b)}{m.group(4)}{m.group(5)}"

    s = OFFSET_SPAN.sub("[n]", ORDINAL.sub("[n]th", s))
    s = NUMBER.sub(num, UNIT_NUMBER.sub(unit, s))
    # after the numbers: a bucket's bounds are not numbers to mask; a range before its upper end
    s = PERCENT.sub(pct, PERCENT_RANGE.sub(span, s) if "-" in s or "–" in s else s)
    return _NEAR_OVER.sub("", s).replace("\x01", "COVID-19")


def bucket(value: float) -> str:
    v = abs(value)
    return next(label for hi, label in _BUCKETS if v < hi)


def bucket_range(a: float, b: float) -> str:
    """A range of percentages as one bucket: from the bucket of its lower end to the one its upper end
    closes ("3-7" stays "3-7", "40-60" reads "30-60", "12-18" "7-30", "60-150" "over 60")."""
    lo, hi = sorted((abs(a), abs(b)))
    first = bucket(lo)
    last = next(label for top, label in _BUCKETS if hi <= top)
    if first == last:
        return first
    low = first.split("-")[0] if not first.startswith("over") else "100"
    return f"over {low}" if last.startswith("over") else f"{low}-{last.split('-')[1]}"


def offset(y: int, mo: int, d: int, day: dt.date) -> str:
    """An exact date as its recency from the decision day ("[date]" if no such date)."""
    try:
        return recency((dt.date(y, mo, d) - day).days)
    except ValueError:
        return "[date]"


def month_day(month_name: str, day_of_month: str, day: dt.date) -> str:
    """ "Oct 4" with no year: the latest such date not a week past the decision
    day (items are dated before it; a December item read in January is last year's)."""
    month, d = MONTHS[month_name.lower().rstrip(".")], int(day_of_month)
    year = day.year
    try:
        if dt.date(year, month, d) > day + dt.timedelta(days=7):
            year -= 1
    except ValueError:
        return "[date]"
    return offset(year, month, d, day)


#: a date that reads against the decision day, in a template made once for all days (Masker._dated):
#: one lower-case word, as the recency phrases are words, numbered in letters (a digit would be a number)
MARK_OPEN = "qzjx"
MARK = re.compile(MARK_OPEN + "([a-p]+)xjzq")


_TO_LETTERS = str.maketrans("0123456789abcdef", "abcdefghijklmnop")
_FROM_LETTERS = str.maketrans("abcdefghijklmnop", "0123456789abcdef")


def mark(i: int) -> str:
    return f"{MARK_OPEN}{format(i, 'x').translate(_TO_LETTERS)}xjzq"


def mark_index(letters: str) -> int:
    return int(letters.translate(_FROM_LETTERS), 16)


@lru_cache(maxsize=1)
def prompt_words() -> frozenset[str]:
    """The capitalised words of fincon's own prompt templates (``*.txt`` of the agents, the memory and
    the model layer): never masked as names (the summariser was told "[name] the item below")."""
    root = Path(__file__).resolve().parents[1]
    words: set[str] = set()
    for f in (f for part in ("agents", "memory", "llm") for f in (root / part).rglob("*.txt")):
        words.update(m.group(1) for m in PROPER.finditer(f.read_text(encoding="utf-8")))
    return frozenset(words)


@lru_cache(maxsize=1)
def common() -> Mapping[str, float]:
    """Words of financial English with their document share; empty when the
    dictionary is not installed (then only the tables' names are masked)."""
    try:
        return data.document_shares()
    except Exception:  # the info extra missing: said in masking.json's rules
        return {}


#: the agent name of the paraphrase model's calls (another model than the one under test, which reads only
#: what it writes, masked again): the leakage audit leaves them out
PARAPHRASE_AGENT = "paraphrase"
#: an item as a prompt lists it: "[E1] this week: text (tone +0.50)", "[E3] (cited by earnings, market,
#: sentiment, valuation): text"; its text becomes its topic, its tone a word ("(tone positive)")
ITEM_LINE = re.compile(
    r"(?m)^(\[[^\]\n]{1,80}\][^:\n]{0,120}: )(.+?)((?: \(tone (?:[+-]?\d\.\d+|positive|neutral|negative)\))?)$"
)
#: a line under a bare label ("[E1]: ...") is fincon's own figure (an indicator: never dated, never of the
#: corpus), kept when it has fewer words than this; any other item line, dated or a passage with its
#: section, is given as its topics at any length (a sentence of a call, whole, named the call to the
#: leakage audit's corpus adversary)
ITEM_WORDS = 12
#: a level an indicator states, as the mask buckets it ("about 30-60%", "-3-7%", "over 100%"): under
#: ``mask_items`` "tone" it goes ("[level]"): volatility, drawdown and CVaR buckets together placed 13 % of
#: InvestorBench's firm-days (a firm's risk regime lasts; momentum and trend alone, 1.4 %)
LEVEL = re.compile(r"(?:over |under )?[+-]?\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?%")
#: the topics an item keeps: the first this many it touches, in its own order, then sorted. With two,
#: 4-15 % of InvestorBench's Oct-Dec 2020 items (MSFT 4 %, JNJ 9 %, HON 15 %) have a pair no other week
#: of their corpus has, which one who applies this mask to the corpus finds; with one, 1 item of 1,173
TOPICS_KEEP = 1
#: what an item may be said to be about: a fixed list, the same for every firm, each topic with the
#: words that mark it. An item's own words, even sorted and even only its common ones, name it to one
#: who read the corpus (30 content words: 92 % of InvestorBench's MSFT items found by a bag-of-words
#: match; 8 common ones: 31 %); its topics, 1 of 253 (docs/notes, 2026-11-29)
TOPICS: dict[str, str] = {
    "acquisition": r"acqui\w*|mergers?|takeovers?|buyouts?",
    "partnership": r"partner\w*|collaborat\w*|alliances?|joint ventures?",
    "contract": r"contracts?|deals?|agreements?",
    "lawsuit": r"lawsuits?|sued|sues|suing|litigation|courts?|settle\w*",
    "regulation": r"regulat\w*|antitrust|probes?|investigat\w*|fined|fines|penalt\w*|sanction\w*",
    "approval": r"approv\w*|clearance",
    "dividend": r"dividends?",
    "buyback": r"buybacks?|repurchas\w*",
    "guidance": r"guidance|forecast\w*|outlook",
    "upgrade": r"upgrad\w*",
    "downgrade": r"downgrad\w*",
    "analysts": r"analysts?|price targets?|ratings?",
    "earnings": r"earnings|eps|quarterly results",
    "revenue": r"revenues?|sales",
    "profit": r"profit\w*|net income",
    "loss": r"loss|losses",
    "margin": r"margins?",
    "beat": r"beat|beats|exceed\w*",
    "miss": r"missed|misses|shortfall",
    "growth": r"grow\w*|grew|growth|expan\w*",
    "decline": r"declin\w*|fell|falls?|falling|drops?|dropped|slump\w*|plung\w*",
    "rise": r"rises?|rising|rose|surg\w*|jump\w*|soar\w*|rall(?:y|ied|ies)",
    "cost cuts": r"layoffs?|job cuts|restructur\w*",
    "hiring": r"hiring|hires|recruit\w*",
    "leadership": r"ceo|cfo|executives?|chairman|resign\w*|appoint\w*",
    "product": r"products?|launch\w*|unveil\w*",
    "recall": r"recalls?|recalled|defects?",
    "delay": r"delay\w*|postpon\w*",
    "supply": r"supply|suppliers?|shortages?|inventor(?:y|ies)",
    "demand": r"demand",
    "customers": r"customers?|clients?|subscri\w*",
    "investment": r"invest\w*|funding|capex",
    "debt": r"debt|bonds?|loans?|borrow\w*",
    "offering": r"offerings?|ipo",
    "competition": r"compet\w*|rivals?",
    "technology": r"cloud|software|chips?|semiconductor\w*|artificial intelligence",
    "cybersecurity": r"breach\w*|hack\w*|cyber\w*",
    "trade": r"tariffs?|exports?|trade war",
    "tax": r"tax|taxes",
    "macro": r"inflation|interest rates?|recession|pandemic|covid\w*",
    "healthcare": r"clinical|drugs?|vaccin\w*|fda",
    "energy": r"oil|natural gas|energy|batter(?:y|ies)",
    "vehicles": r"vehicles?|cars?|deliveries",
}
#: every topic's words in one pattern, the topics in alphabetical order: a search finds the leftmost word
#: of any topic (at one place, the topic first by name), one pass over the text instead of 43
_TOPICS = re.compile(r"\b(?:" + "|".join(f"(?P<t{i}>{TOPICS[n]})" for i, n in enumerate(sorted(TOPICS))) + r")\b", re.I)
_TOPIC_NAMES = sorted(TOPICS)


@lru_cache(maxsize=65536)  # an item is reduced again on every day that lists it under a new recency
def topics(text: str) -> str:
    """An item as the first :data:`TOPICS_KEEP` topics of :data:`TOPICS` it touches, sorted ("topics:
    growth"), or "topics: none of the list": what kind of news it is, with its tone beside
    it, and nothing of its own words (the leakage audit's bag-of-words adversary finds an item from
    them, fincon.llm.leakage.bag_guess)."""
    found: list[str] = []
    for m in _TOPICS.finditer(text):
        name = _TOPIC_NAMES[int(m.lastgroup[1:])]  # type: ignore[index]
        if name not in found:
            found.append(name)
        if len(found) == TOPICS_KEEP:
            break
    return "topics: " + (", ".join(sorted(found)) or "none of the list")


def tone_word(tone: str) -> str:
    """An item line's tone (" (tone +0.71)") as a word (" (tone positive)"): with two decimals, beside
    its topic, it named one item of InvestorBench's Oct-Dec 2020 corpora for 8-14 % of a masked run's
    prompts (a word: 0-2 %; docs/notes, 2026-11-30); "" stays "" and a word stays a word."""
    value = tone[len(" (tone ") : -1]
    return tone if not value or value[-1].isalpha() else f" (tone {data.tone_label(float(value))})"


def reword(sentence: str) -> str:
    """A sentence as its content words, unique, in alphabetical order: what it
    is about, without a run of its words that could be found elsewhere."""
    stop = data.STOP  # once: a name read through the package's face costs a lookup each time
    words = sorted({w.lower() for w in _WORD.findall(sentence) if len(w) > 3 and w.lower() not in stop})
    return KEY_WORDS + ", ".join(words[:10]) if words else "[text]"


KEY_WORDS = "key words: "  # how a model's sentence is reworded (reword)


def numeric_date(m: re.Match, offset: Callable[[int, int, int], str]) -> str:
    """A date in digits as the date rules read one: month first with a slash, day first with a dot
    (either way round when the first could be no month)."""
    a, b, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
    first, second = (a, b) if m.group(2) in "/-" else (b, a)  # the month's place, the day's
    month, day = (first, second) if first <= 12 else (second, first)
    try:
        return offset(year, month, day)
    except ValueError:
        return "[date]"


def fiscal(m: re.Match) -> str:
    """A fiscal period with a two-digit year: its period kept, its year "[year]" ("3Q20": "Q3 [year]")."""
    fy, q, h, named = m.group(1), m.group(2), m.group(3), m.group(4)
    return "FY [year]" if fy else f"{named or ('Q' + q if q else 'H' + h)} [year]"


def year_first(m: re.Match, offset: Callable[[int, int, int], str]) -> str:
    """A date in digits written year first ("2020.10.27", "2020/10/27"): year, month, day."""
    try:
        return offset(int(m.group(1)), int(m.group(3)), int(m.group(4)))
    except ValueError:
        return "[date]"


def proper_word(w: str) -> str:
    """A capitalised word as the mask writes it: itself when it is common, generic or fincon's own, else "[name]"."""
    if w in KEEP or w in prompt_words() or PSEUDO.match(w) or w.isupper() and len(w) == 1:
        return w
    share = common()
    parts = [p for p in re.split(r"[&'.-]", w.lower()) if p]
    if parts and all(share.get(p, 0.0) >= COMMON_SHARE for p in parts) and not inner_capital(w):
        return w
    return "[name]"


def inner_capital(w: str) -> bool:
    """A capital inside a word (iPhone, LinkedIn, DevSecOps): a name, however common its parts."""
    return any(c.isupper() for c in w[1:]) and not w.isupper()
