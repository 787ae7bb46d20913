"""Numeric claims: the figures a text states, what each refers to, and the
arithmetic that links them.

A :class:`Figure` is one number with a unit (``bn``: US$ billion, ``%``)
and a metric (revenue, operating margin ...). :func:`figures_in` finds them
in any text (a filing, a call, an analyst's insight) with regular
expressions: a money amount (``$21.45 billion``, ``4.2 billion dollars``,
``$2,680 million``, ``$3.1bn``) or a percentage (``+12.3%``, ``8 percent``),
labelled by the nearest metric keyword before it (after it if none before)
whose unit fits. A number with neither unit (a date, a tone score) is not a
claim.

:data:`METRICS` names every metric with its unit; a *derived* metric has a
formula over stated ones (a growth rate, a margin, a difference), so the
calculation critic can recompute it in Python.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # "bn" or "%"
    label: str  # how a prompt names it
    #: derived metrics: the stated metrics they need, and the formula over them
    inputs: tuple[str, ...] = ()
    formula: Callable[..., float] | None = None
    how: str = ""  # the formula in words, for prompts

    @property
    def derived(self) -> bool:
        return self.formula is not None

    def compute(self, values: Mapping[str, float]) -> float | None:
        if self.formula is None or any(i not in values for i in self.inputs):
            return None
        try:
            return float(self.formula(*(values[i] for i in self.inputs)))
        except ZeroDivisionError:
            return None


def _m(name, unit, label, inputs=(), formula=None, how=""):
    return Metric(name, unit, label, tuple(inputs), formula, how)


#: a figure whose metric could not be told: checked by finding it anywhere in the source
UNLABELLED = "unlabelled"

METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        _m(UNLABELLED, "", "a figure (same unit as written)"),
        _m("revenue", "bn", "revenue ($bn)"),
        _m("revenue_growth", "%", "revenue change vs the prior-year period (%)"),
        _m(
            "operating_income",
            "bn",
            "operating income ($bn)",
            ("revenue", "operating_margin"),
            lambda r, m: r * m / 100.0,
            "revenue x operating margin / 100",
        ),
        _m(
            "operating_margin",
            "%",
            "operating margin (%)",
            ("operating_income", "revenue"),
            lambda oi, r: 100.0 * oi / r,
            "100 x operating income / revenue",
        ),
        _m("cash", "bn", "cash and equivalents ($bn)"),
        _m("capex", "bn", "capital expenditures ($bn)"),
        _m(
            "prior_revenue",
            "bn",
            "prior-year revenue ($bn)",
            ("revenue", "revenue_growth"),
            lambda r, g: r / (1 + g / 100.0),
            "revenue / (1 + growth / 100)",
        ),
        _m(
            "revenue_change",
            "bn",
            "revenue change vs the prior-year period ($bn)",
            ("revenue", "revenue_growth"),
            lambda r, g: r - r / (1 + g / 100.0),
            "revenue - revenue / (1 + growth / 100)",
        ),
        _m(
            "capex_share",
            "%",
            "capital expenditures as % of revenue",
            ("capex", "revenue"),
            lambda c, r: 100.0 * c / r,
            "100 x capex / revenue",
        ),
        _m(
            "income_after_capex",
            "bn",
            "operating income minus capital expenditures ($bn)",
            ("operating_income", "capex"),
            lambda oi, c: oi - c,
            "operating income - capex",
        ),
    )
}

#: words that name a metric (lower case, matched on word starts), most specific first
KEYWORDS: tuple[tuple[str, str], ...] = (
    (
        r"prior[- ]year revenue|revenue a year (?:earlier|ago)|year[- ]ago revenue|"
        r"revenue (?:in|for|of) the prior[- ]year period",
        "prior_revenue",
    ),
    (r"operating income (?:less|minus|after|net of) (?:capex|capital expenditures?)", "income_after_capex"),
    (
        r"(?:capex|capital expenditures?|capital spending) (?:as a share of|as a percentage of|as % of|to) revenue"
        r"|capex intensity|capex share",
        "capex_share",
    ),
    (r"revenue change|change in revenue", "revenue_change"),
    (r"operating margins?|margins?", "operating_margin"),
    (r"operating income|operating profit|ebit\b", "operating_income"),
    (r"capital expenditures?|capex|capital spending", "capex"),
    (r"cash and equivalents|cash", "cash"),
    (
        r"a change of|changed?|grew|growth|grow|rose|rise|increased?|up|fell|declined?|decrease[ds]?|down|drop(?:ped)?",
        "revenue_growth",
    ),
    (r"revenues?|sales|top line", "revenue"),
)
_KW = re.compile("|".join(f"(?P<k{n}>\\b(?:{p}))" for n, (p, _) in enumerate(KEYWORDS)), re.I)
_DOWN = re.compile(r"\b(?:fell|declined?|decrease[ds]?|down|drop(?:ped)?|lower)\b", re.I)

_NUM = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_MONEY = re.compile(
    r"(?P<sign>[-\u2212])?(?P<dollar>\$\s?)?"
    + _NUM
    + r"\s?(?P<scale>billion|bn\b|b\b|million|mn\b|m\b)(?P<dollars>\s+(?:US\s)?dollars)?",
    re.I,
)
_PCT = re.compile(r"(?P<sign>[-+\u2212])?" + _NUM + r"\s?(?P<pct>%|percent\b|per cent\b)", re.I)
WINDOW = 60  # characters before a number searched for its metric keyword
#: a number's lower neighbour in a range: "3-7%", "3%-7%", "3–7 %" (a masked bucket is one); "3% to 7%"
#: is no range here: "grew by 33% to $17.7 billion" reads so once a figure's unit is wrong
_RANGE = re.compile(r"\d\s?%?\s?[-\u2013\u2212]\s?$")


@dataclass(frozen=True)
class Figure:
    """One number of a text: value in its unit, decimals as written, the
    metric it refers to (None: could not tell), where it sits (``span``)."""

    value: float
    unit: str
    metric: str | None
    decimals: int = 2
    span: tuple[int, int] = (0, 0)
    text: str = ""

    def show(self) -> str:
        return format_value(self.value, self.unit, self.decimals)


def format_value(value: float, unit: str, decimals: int = 2) -> str:
    v = f"{value:.{max(decimals, 0)}f}"
    return f"${v} billion" if unit == "bn" else f"{v}%"


def _decimals(num: str) -> int:
    return len(num.split(".")[1]) if "." in num else 0


def _metric_for(text: str, start: int, end: int, unit: str) -> str | None:
    """What a number refers to: the nearest fitting keyword before it in its
    comma-clause; else the first fitting keyword after it (before any
    punctuation: "$2.25 billion of cash"); else the nearest before it in its
    sentence. A growth verb before a $ amount means a change only after
    "by" ("grew by $1.2 billion"); a capex keyword before a % is a share."""
    lo = max(0, start - WINDOW)
    sentence = max(text.rfind(". ", lo, start), text.rfind(";", lo, start), text.rfind("\n", lo, start))
    lo = sentence + 1 if sentence >= 0 else lo
    comma = text.rfind(",", lo, start)
    lead = text[max(lo, start - 4) : start].lower()
    after = text[end : end + 40]
    stop = re.search(r"[.;,()\n]", after)
    later = [_kw_metric(m) for m in _KW.finditer(after[: stop.start() if stop else None])]

    def before(a: int) -> str | None:
        return _fit([_kw_metric(m) for m in _KW.finditer(text, a, start)], unit, lead, backwards=True)

    return before(comma + 1 if comma >= 0 else lo) or _fit(later, unit, lead, backwards=False) or before(lo)


def _fit(metrics: list[str], unit: str, lead: str, backwards: bool) -> str | None:
    for metric in reversed(metrics) if backwards else metrics:
        if metric == "revenue_growth" and unit == "bn":
            if backwards and "by" in lead:
                return "revenue_change"
            continue
        if METRICS[metric].unit == unit:
            return metric
        if metric == "capex" and unit == "%" and backwards:
            return "capex_share"
    return None


def _kw_metric(m: re.Match) -> str:
    return KEYWORDS[int(m.lastgroup[1:])][1]


def figures_in(text: str) -> list[Figure]:
    """Every money amount and percentage of ``text``, in order, with its metric."""
    out: list[Figure] = []
    taken: list[tuple[int, int]] = []
    for m in _MONEY.finditer(text):
        scale = m.group("scale").lower()
        is_money = m.group("dollar") or m.group("dollars") or scale in ("billion", "million", "bn", "mn")
        if not is_money:
            continue
        v = float(m.group("num").replace(",", ""))
        d = _decimals(m.group("num"))
        if scale in ("million", "mn", "m"):
            v, d = v / 1000.0, d + 3
        if m.group("sign"):
            v = -v
        s, e = m.span()
        out.append(Figure(v, "bn", _metric_for(text, s, e, "bn"), d, (s, e), m.group(0)))
        taken.append((s, e))
    for m in _PCT.finditer(text):
        s, e = m.span()
        if any(a <= s < b for a, b in taken):
            continue
        if _RANGE.search(text[max(0, m.start("num") - 8) : m.start("num")]):
            continue  # a range's upper end ("3-7%", a masked bucket's too) is no figure: it read as -7 %
        v = float(m.group("num").replace(",", ""))
        metric = _metric_for(text, s, e, "%")
        sign = m.group("sign")
        if sign in ("-", "\u2212"):
            v = -v
        elif not sign and metric == "revenue_growth" and _DOWN.search(text[max(0, s - 30) : s]):
            v = -v  # "revenue fell 4.0%" is a change of -4.0%
        out.append(Figure(v, "%", metric, _decimals(m.group("num")), (s, e), m.group(0)))
    return sorted(out, key=lambda f: f.span)


def source_figures(text: str) -> dict[str, list[Figure]]:
    """Metric -> the figures a source states for it (in order)."""
    out: dict[str, list[Figure]] = {}
    for f in figures_in(text):
        if f.metric is not None:
            out.setdefault(f.metric, []).append(f)
    return out


def close(a: float, b: float, decimals: int) -> bool:
    """Equal up to rounding at ``decimals`` (``21.5`` matches ``21.45``)."""
    return abs(a - b) <= 0.5 * 10.0 ** (-decimals) + 1e-9


def stated_values(sources: Sequence[str]) -> dict[str, Figure]:
    """Metric -> the first figure stated for it across ``sources``."""
    out: dict[str, Figure] = {}
    for s in sources:
        for metric, figs in source_figures(s).items():
            out.setdefault(metric, figs[0])
    return out


@dataclass
class Claim:
    """A number an analyst asserts: its metric, value and unit, the figures
    it says it computed it from (``inputs``: metric -> value, may be empty),
    the cited source texts, and where it sits in the insight (``figure``)."""

    metric: str
    value: float
    unit: str
    decimals: int = 2
    inputs: dict[str, float] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    figure: Figure | None = None

    def show(self) -> str:
        return format_value(self.value, self.unit, self.decimals)


def claims_in(text: str, sources: Sequence[str]) -> list[Claim]:
    """The numeric claims of an insight: every money amount and percentage
    (metric :data:`UNLABELLED` when no keyword says what it is)."""
    return [Claim(f.metric or UNLABELLED, f.value, f.unit, f.decimals, {}, tuple(sources), f) for f in figures_in(text)]


def rounded(x: float, decimals: int) -> float:
    """Half away from zero on the decimal value (not the binary float)."""
    q = 10**decimals
    return math.copysign(math.floor(abs(x) * q + 0.5 + 1e-9) / q, x)


def metric_of_question(question: str) -> str:
    """The metric a question asks for, read from its words as an analyst
    reads them (the leftmost metric phrase, the most specific on a tie);
    :data:`UNLABELLED` when none is named. What the evaluations' critics
    check a result against, instead of the answer key's label."""
    m = _KW.search(question or "")
    if m is None:
        return UNLABELLED
    return KEYWORDS[int(m.lastgroup[1:])][1]
