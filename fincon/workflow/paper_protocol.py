"""``fincon experiment --preset fincon-paper``: both of the FinCon paper's tasks in one command.

The paper (section 4, Tables 2 and 3; :mod:`fincon.workflow.paper` holds its
figures) compares the team with single-agent LLM traders, DRL agents and
buy-and-hold on eight stocks, and with Markowitz, FinRL-A2C and an equal
weighting on two portfolios; training 2022-01-03..2022-10-04, test
2022-10-05..2023-06-10, the median of five repeats. Here that protocol is a
list of ordinary experiments (:func:`plan`), one per stock and one per
portfolio, each in its own sub-directory of the run (resumable on its own,
as every experiment is), and their figures laid beside the paper's
(:func:`tables`).

What each block runs: the full team, five repeats, its median run by CR
(the paper's rule); the baselines once each, on the same test window
(buy-and-hold, ``finsent``, ``finmem``, ``a2c``, ``ppo``, ``dqn`` for a
stock; ``equal-weight``, ``markowitz``, ``finrl-a2c`` for a portfolio). The
brain is the rules brain unless ``--brain llm`` is given; the single-agent
baselines follow the team's brain, so the paper's claim (a hierarchy beats
one agent given the same sources) is a like-for-like ablation.

Which tickers: the paper's eight and its two portfolios; with ``--tickers``
or ``--data DIR``, the chosen (or the dataset's) tickers one by one, and one
portfolio of all of them when there are two or more. Flags win over every
value here, as with every preset.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from fincon import data, workflow
from fincon.engine.rundir import check_out_path
from fincon.errors import ConfigError
from fincon.files import json_text, write_atomic
from fincon.workflow import paper
from fincon.workflow.experiment_config import TEST_WINDOW
from fincon.workflow.status import default_dir
from fincon.workflow.tables import identical_flags, median_optimizer_flags

PRESET = "fincon-paper"
SINGLE_BASELINES = ["buy-and-hold", "finsent", "finmem", "a2c", "ppo", "dqn"]
PORTFOLIO_BASELINES = ["equal-weight", "markowitz", "finrl-a2c"]
#: the single-agent LLM baselines: they think with the team's brain
LLM_BASELINES = ("finsent", "finmem")
#: the paper's test end (2023-06-10) is a Saturday: the experiment's own default test window ends on
#: the bundled sample's last session before it (fincon.workflow.experiment_config.TEST_WINDOW)
TEST_END = str(TEST_WINDOW[1])
BASE: dict[str, Any] = {
    "train.start": paper.TRAIN_WINDOW[0],
    "train.end": paper.TRAIN_WINDOW[1],
    "test.start": paper.TEST_WINDOW[0],
    "test.end": TEST_END,
    "repeats": 5,
    "ablations": ["full"],
    "team.brain": "rules",
}
WINDOW_KEYS = ("train.start", "train.end", "test.start", "test.end")


@dataclass(frozen=True)
class Block:
    """One experiment of the protocol: a stock (Table 2) or a portfolio (Table 3)."""

    tickers: tuple[str, ...]
    overrides: dict[str, Any]

    @property
    def portfolio(self) -> bool:
        return len(self.tickers) > 1

    @property
    def key(self) -> str:
        """The block's sub-directory and its name in paper.json."""
        return "portfolio-" + "-".join(self.tickers) if self.portfolio else self.tickers[0]

    @property
    def paper_key(self) -> str | tuple[str, ...]:
        return self.tickers if self.portfolio else self.tickers[0]


def plan(given: Mapping[str, Any], data_tickers: list[str] | None = None,
         data_span: tuple[dt.date, dt.date] | None = None) -> list[Block]:  # fmt: skip
    """The experiments of the protocol: ``given`` (the command line's dotted
    overrides, None for a flag not given) over :data:`BASE`, one block per
    stock and per portfolio. ``data_tickers`` / ``data_span``: an imported
    dataset's tickers and dates (``--data DIR``)."""
    flags = {k: v for k, v in given.items() if v is not None}
    if data_span is not None and not any(k in flags for k in WINDOW_KEYS):
        lo, hi = data_span
        if lo > dt.date.fromisoformat(BASE["train.start"]) or hi < dt.date.fromisoformat(BASE["test.end"]):
            raise ConfigError(
                f"the dataset covers {lo}..{hi}, not the paper's windows ({BASE['train.start']}.."
                f"{BASE['test.end']}): give --train-start, --train-end, --test-start and --test-end inside it"
            )
    chosen = flags.pop("tickers", None) or data_tickers
    if chosen:
        singles = [(t,) for t in chosen]
        portfolios = [tuple(chosen)] if len(chosen) > 1 else []
    else:
        singles = [(t,) for t in paper.SINGLE_TICKERS]
        portfolios = list(paper.PORTFOLIOS)
    brain = flags.get("team.brain", BASE["team.brain"])
    blocks = []
    for tickers in singles + portfolios:
        baselines = PORTFOLIO_BASELINES if len(tickers) > 1 else SINGLE_BASELINES
        over = {**BASE, "baselines": list(baselines)}
        # the brain of the LLM baselines the block runs: the user's --baselines when given, never a
        # parameter of a baseline it dropped (which the experiment would refuse as the user's)
        for name in LLM_BASELINES:
            if name in (flags.get("baselines") or baselines):
                over[f"strategy_params.{name}.brain"] = brain
        # a parameter of the other task's baseline (--param finrl-a2c.timesteps=...) is that task's alone
        other = set(SINGLE_BASELINES + PORTFOLIO_BASELINES) - set(baselines)
        over.update({k: v for k, v in flags.items() if not (k.startswith("strategy_params.")
                                                             and k.split(".")[1] in other)})  # fmt: skip
        over["tickers"] = list(tickers)
        blocks.append(Block(tuple(tickers), over))
    return blocks


def figures(results: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """An experiment's results.json as the table's rows: strategy -> CR %,
    SR, MDD % (the team: its median run of the full ablation, with the
    repeats' CR range; each baseline: its one run). A stock's rows keep the
    paper's eq. 5 CR too (``cr_paper_pct``): Table 2 prints that CR, not the
    book's, and the two differ by much when the book is not all in."""
    keep = ("cr_pct", "sharpe", "mdd_pct") + (("cr_paper_pct",) if len(results.get("tickers") or ()) == 1 else ())
    out = {name: {k: m.get(k) for k in keep} for name, m in results["baselines"].items()}
    full = results["median"].get("full")
    if full is not None:
        out["fincon"] = {
            **{k: full.get(k) for k in keep},
            "repeat": full.get("repeat"),
            "cr_pct_min": full.get("cr_pct_min"),
            "cr_pct_max": full.get("cr_pct_max"),
        }
    return out


def corpus_read(exp) -> str:
    """The corpus the team read, as the line under the tables names it: the sample, the dataset's own, or
    the one ``--events`` gave, and a look-ahead planted in it (found in review: a planted corpus given
    with --events was called "fincon's synthetic sample", the name the dataset's section gave)."""
    events = exp.team.events
    corpus = (
        "fincon's synthetic sample" if events == "sample"
        else f"the dataset {exp.data.dir.name}"
        if exp.data.dir is not None and Path(events).is_relative_to(Path(exp.data.dir).absolute())
        else f"the corpus {Path(events).name}"
    )  # fmt: skip
    planted = data.open_events(events, tuple(exp.tickers)).planted if events != "sample" else ()
    return corpus + (f", with a PLANTED look-ahead ({', '.join(planted)}): never evidence of skill" if planted else "")


def differs(exp, corpus: str, stocks: bool = True) -> str:
    """The line under each table: what is not the paper's setting (the model, the corpus, the DRL agents'
    actions, and any of the training window, the repeats, the episodes and the broker's costs that are
    not the preset's), then what each CR column is (``stocks``: a single-stock block is shown, with its
    eq. 5 column)."""
    model = exp.llm.model if exp.brain == "llm" else None
    who = "none, the rules brain decides" if exp.brain == "rules" else f"{model or 'the bundled model'}"
    team = "its median of the repeats" if exp.repeats > 1 else "its one run"
    parts = [
        f"the model is {who} (the paper's: {paper.MODEL})",
        f"the corpus is {corpus} (the paper's is private)",
        "the DRL agents act long / keep / short on the whole book (the paper's A2C and PPO trade a continuous "
        "share count)",
        f"each baseline runs once (seeded), the team's figure is {team}",
    ]
    if (str(exp.train.start), str(exp.train.end)) != paper.TRAIN_WINDOW:
        parts.append(f"the training window is {exp.train.start}..{exp.train.end} (the paper's: "
                     f"{paper.TRAIN_WINDOW[0]}..{paper.TRAIN_WINDOW[1]})")  # fmt: skip
    if exp.repeats != BASE["repeats"]:
        parts.append(f"{exp.repeats} repeat(s) (the preset's: {BASE['repeats']})")
    default = type(exp)()
    if exp.episodes != default.episodes:
        parts.append(f"{exp.episodes} training episode(s) (the paper's: {default.episodes})")
    if exp.broker != default.broker:
        changed = [k for k, v in exp.broker.model_dump().items() if v != default.broker.model_dump().get(k)]
        parts.append(f"the broker's {', '.join(changed)} set (not the preset's)")
    if exp.metrics != default.metrics:  # a risk-free rate moved B&H's Sharpe 1.237 -> 1.365 unsaid (found in review)
        given = {k: v for k, v in exp.metrics.model_dump().items() if v != default.metrics.model_dump().get(k)}
        parts.append(f"the metrics' {', '.join(f'{k} {v}' for k, v in given.items())} (not the preset's)")
    if stocks:  # the book's CR beside Table 2's compared two measures: 28.292 beside 82.871, eq. 5's 106.197
        parts.append(
            "Table 2's CR is the paper's eq. 5, 100 x the sum of ln(p_t+1 / p_t) x action_t (the direction held "
            "times the log price change, whatever the position's size), fincon's by the same formula its eq.5 CR % column"
        )
    parts.append(
        "the book CR % column is the sum of the book value's daily log returns (what money the book made), "
        "and SR and MDD % are the book's too"
    )
    return (
        f"differs from the paper: {'; '.join(parts)}; the test window ends {exp.test.end}. The paper's columns "
        "are its published figures, not rerun."
    )


def knowledge_line(block: Mapping[str, Any]) -> str:
    """The line under a block whose LLM rows ran on a model: its test window's
    label against the model's training-data cutoff ('' without a model)."""
    label = block.get("label")
    if not label or label == "no-model":
        return ""
    return (
        f"LLM rows (fincon, finsent, finmem): {label} (the model's training-data cutoff "
        f"{block.get('cutoff') or 'unknown'}, {block.get('source') or 'no source'})"
    )


def tables(blocks: list[Block], rows: Mapping[str, Mapping[str, Any]], line: str,
           knowledge: Mapping[str, str] | None = None, papers_window: bool = True) -> str:  # fmt: skip
    """Table 2 (the stocks), then Table 3 (the portfolios), each block laid
    out as the paper's; ``knowledge``: block -> the line under it naming
    the LLM rows' model_knowledge label (none on the rules brain);
    ``papers_window`` False (another test window): the paper's column stays
    empty, since its figures are of another period."""
    parts = []
    for title, portfolio in (("Table 2: single-stock trading", False), ("Table 3: portfolio management", True)):
        mine = [b for b in blocks if b.portfolio == portfolio]
        if not mine:
            continue
        parts.append(title)
        for b in mine:
            parts.append(paper.side_by_side(b.paper_key, rows.get(b.key, {}), papers_window=papers_window))
            label = (knowledge or {}).get(b.key)
            if label:
                parts.append(label)
            parts.append("")
    parts.append(line)
    return "\n".join(parts)


@dataclass
class PaperReport:
    out: Path
    rows: dict[str, dict[str, Any]]
    text: str
    ran: list[str]
    skipped: list[str]


def run_paper(
    experiments: list[tuple[Block, Any]],
    out: Path,
    *,
    progress: bool = True,
    executor=None,
    require_after_cutoff: bool = False,
) -> PaperReport:
    """Run (or resume) every block's experiment under ``out/<block>``, then
    write ``paper.json`` (fincon's figures and the paper's, per block) and
    ``paper.md`` (the tables) once all are complete."""

    _claim(out, [b.key for b, _ in experiments])
    rows: dict[str, dict[str, Any]] = {}
    knowledge: dict[str, dict[str, Any]] = {}
    flags: dict[str, list[str]] = {}  # each block's team portfolio at its optimizer's bounds
    ran: list[str] = []
    skipped: list[str] = []
    for i, (block, exp) in enumerate(experiments):
        if progress:
            print(f"[{i + 1}/{len(experiments)}] {block.key}", flush=True)
        report = workflow.run_experiment(
            exp,
            out / block.key,
            progress=progress,
            executor=executor or workflow.serial,
            require_after_cutoff=require_after_cutoff,
            warn_knowledge=i == 0,
        )
        rows[block.key] = figures(report.results)
        flags[block.key] = [  # and the rows it cannot tell apart (runs that traded identically)
            f"FLAG: {f}" for f in [*median_optimizer_flags(report.results), *identical_flags(report.results)]
        ]
        knowledge[block.key] = report.results.get("model_knowledge", {}).get("test") or {"label": "no-model"}
        ran += [f"{block.key}/{u}" for u in report.ran]
        skipped += [f"{block.key}/{u}" for u in report.skipped]
    exp0 = experiments[0][1]
    corpus = corpus_read(exp0)
    same = papers_window(exp0)
    line = differs(exp0, corpus, any(not b.portfolio for b, _ in experiments))
    if not same:
        line += (f" The test window here is {exp0.test.start}..{exp0.test.end}, not the paper's: its column is "
                 "left empty (its figures are of another period).")  # fmt: skip
    lines = {key: "\n".join(x for x in (knowledge_line(block), *flags[key]) if x) for key, block in knowledge.items()}
    text = tables([b for b, _ in experiments], rows, line, lines, same)
    doc = {
        "paper": paper.PAPER,
        "blocks": {
            b.key: {
                "tickers": list(b.tickers),
                "train": exp.train.model_dump(mode="json"),
                "test": exp.test.model_dump(mode="json"),
                "repeats": exp.repeats,
                "brain": exp.brain,
                "fincon": rows[b.key],
                "model_knowledge": knowledge[b.key],
                "paper_published": paper.published(b.paper_key) if same else None,
            }
            for b, exp in experiments
        },
        "differs": line,
    }
    write_atomic(out / "paper.json", json_text(doc))
    write_atomic(out / "paper.md", "```\n" + text + "\n```\n")
    return PaperReport(out, rows, text, ran, skipped)


def _claim(out: Path, keys: list[str]) -> None:
    """``out`` may hold this run's blocks and tables and nothing else: a
    folder with other files is the user's, never written into."""

    check_out_path(out)
    if out.is_dir():
        mine = {*keys, "paper.json", "paper.md"}
        other = sorted(p.name for p in out.iterdir() if p.name not in mine)
        other += [name for name in ("paper.json", "paper.md") if (out / name).exists() and not _ours(out, name)]
        if other:
            raise ConfigError(f"--out {out} holds {other[0]}, which is not this paper run's; pick another --out")
    out.mkdir(parents=True, exist_ok=True)


def _ours(out: Path, name: str) -> bool:
    """Whether ``out/name`` is the tables a paper run wrote (a user's own paper.md was written over,
    found in review): paper.json names the paper and its blocks; paper.md is its fenced text beside it."""
    try:
        doc = json.loads((out / "paper.json").read_text(encoding="utf-8"))
        text = (out / name).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    ours = isinstance(doc, dict) and doc.get("paper") == paper.PAPER and isinstance(doc.get("blocks"), dict)
    return ours and (name == "paper.json" or (text.startswith("```\n") and text.endswith("```\n")))


def default_out(experiments: list[tuple[Block, Any]]) -> Path:
    return default_dir("paper", [exp.model_dump(mode="json") for _, exp in experiments])


def papers_window(exp) -> bool:
    """Whether ``exp`` tests on the paper's window (only then are its figures laid beside)."""
    return (str(exp.test.start), str(exp.test.end)) == (BASE["test.start"], BASE["test.end"])
