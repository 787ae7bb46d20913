"""What a user configures on the team: ``strategy_params.fincon`` as a typed model.

Nothing here runs; :class:`FinConParams` is validated once when the run is
built (``make_fincon_team``) so a typo fails before any data or model loads.
May touch: the analyst and protocol registries (to name valid choices).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_validator

from fincon import agents
from fincon.agents.policies import Policies
from fincon.agents.protocols import PROTOCOLS, protocol_names
from fincon.data import SOURCES
from fincon.flag import Flag, absolute, absolute_or_sample, kept_absolute, on_off
from fincon.llm.settings import LLMOverrides
from fincon.validation import Settings, symbol

EmbedderName = Literal["auto", "hashing", "minilm"]

#: the help section of the team's flags (fincon.cli.flags)
GROUP = "agent team (--strategy fincon; see README)"


class FinConParams(Settings):
    """``strategy_params.fincon`` (``--param fincon.KEY=VALUE``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    brain: Annotated[
        Literal["llm", "rules"],
        Flag(
            help="llm: every agent asks the model (default); rules: deterministic baseline, runs in seconds",
            group=GROUP,
        ),
    ] = "llm"
    #: "sample" (the bundled synthetic corpus) or a directory in the event format
    events: Annotated[
        str,
        AfterValidator(absolute_or_sample),  # from a YAML or --param too: config.yaml works from any folder
        Flag(
            metavar="sample|DIR",
            read=absolute_or_sample,
            help="event corpus the analysts read: the bundled synthetic sample (default) or a directory "
            "written by `fincon data sample` / in the event format of docs/information.md",
            group=GROUP,
        ),
    ] = "sample"
    #: analysts that report (default: all); drop one for an ablation, e.g. without news
    analysts: list[str] | None = None
    #: portfolio: candidate tickers the stock-selection analyst picks the pool from
    candidates: Annotated[
        list[str] | None,
        Flag(
            parse=str,
            metavar="T[,T...]",
            help="portfolio: tickers the stock-selection analyst picks the traded pool from "
            "(sets --tickers when that is not given)",
            group=GROUP,
        ),
    ] = None
    pool_size: int = Field(3, ge=1)
    #: auto = hashing for the rules brain (deterministic, no model), minilm for the llm brain
    embedder: EmbedderName = "auto"
    memory_k: int = Field(5, ge=1, le=5)
    #: estimated prompt tokens of whole distilled items per analyst call (default for 2 cores: ~6 s of
    #: prompt on the bundled 1.5B model; on a GPU endpoint set e.g. 2000)
    analyst_budget_tokens: int = Field(400, ge=50, le=32000)
    #: how an item is distilled when it enters memory: extractive (whole sentences, in code) or llm
    #: (the LLM summariser, one call per item, cached; llm brain only)
    distill: Literal["extractive", "llm"] = "extractive"
    lookback: int = Field(60, ge=10, description="days of history for indicators and the optimizer")
    selection_lookback: int = Field(126, ge=20, description="days of returns the stock selection clusters")
    #: whisper: calls are heard through Whisper (cached by audio hash); text: read the event text (tests)
    transcripts: Literal["whisper", "text"] = "whisper"
    #: where Whisper transcripts are cached by audio hash (default ~/.cache/fincon); the demo ships its own
    transcript_cache: Annotated[str | None, AfterValidator(kept_absolute)] = None
    #: the params of one trader (finmem), whose protocol is ``single``: the team's may not be
    one_trader: ClassVar[bool] = False
    #: the decision step after the analysts (fincon/agents/protocols: fincon, ...)
    protocol: Annotated[
        str,
        Flag(
            metavar="NAME",
            help="decision step after the analysts: fincon (the paper's manager, default); see "
            "docs/protocols.md for the others",
            group=GROUP,
        ),
    ] = "fincon"
    #: portfolio weights: "direction" (mu's historical size with the manager's sign, scaled to gross 1)
    #: or "paper" (mu from the analysts' directions and confidences, the optimizer's weights as they are)
    portfolio_form: Literal["direction", "paper"] = "direction"
    #: debate: the event sources a debate reads (earnings calls; filings: ["10-K", "10-Q"])
    debate_sources: list[str] = Field(default_factory=lambda: ["earnings_call"])
    #: debate: a sentence-transformers model (directory or hub name) for the chunks' retrieval;
    #: None: the team's embedder (offline by default)
    retrieval_model: str | None = None
    #: scm: Strategist samples per day (self-consistency)
    samples: Annotated[
        int,
        Field(ge=1, le=9),
        Flag(
            metavar="N",
            help="protocols that sample several proposals (scm): how many per day (default {default})",
            group=GROUP,
        ),
    ] = 3
    #: numeric critics on the analysts' claims about filings and calls before the protocol sees them
    critics: Annotated[
        bool,
        Flag(
            choices=("on", "off"),
            read=on_off,
            help="numeric critics check the analysts' figures about filings and calls (default off)",
            group=GROUP,
        ),
    ] = False
    #: trading policies enforced in code after every protocol
    policies: Policies = Field(default_factory=Policies)
    #: rules manager: extra consolidated evidence (score in [-1, 1]) needed to reverse a held position,
    #: on top of the neutral band (0.05) and the trading cost; 0 (default) reverses on any change of sign
    hold_band: float = Field(0.0, ge=0.0, le=1.0)
    reflections: int = Field(3, ge=0, le=10, description="recent reflections the manager reads")
    #: the manager's procedural memory: its past decisions with their outcomes it reads, most
    #: relevant to today's reports first (ranked like the analysts' memories, A.13); 0: none
    decision_memory_k: int = Field(2, ge=0, le=5)
    #: within-episode risk control: a CVaR alert makes the manager risk-averse for the day (off: the ablation)
    cvar: Annotated[
        bool,
        Flag(
            "--no-cvar", const=False, help="turn off the within-episode CVaR alert (the paper's ablation)", group=GROUP
        ),
    ] = True
    #: CVaR tail level of the alert (the paper: 1 %)
    cvar_alpha: float = Field(0.01, gt=0.0, lt=0.5)
    #: daily PnLs needed before an alert can fire
    cvar_min_obs: int = Field(2, ge=1)
    #: learned beliefs (and reflections) to start from: a beliefs.json or a `fincon train` run dir
    beliefs: Annotated[
        str | None,
        AfterValidator(kept_absolute),
        Flag(
            metavar="FILE|RUN",
            read=absolute,
            help="start from learned investment beliefs and reflections: a beliefs.json or the run dir of "
            "`fincon train` (test stage: no belief learning, CVaR alerts stay on)",
            group=GROUP,
        ),
    ] = None
    #: training only: the previous episode's reflections.json; its reflections enter the manager's
    #: episodic memory before the first day (the paper's episodic memory carried across episodes)
    carried_reflections: Annotated[str | None, AfterValidator(kept_absolute)] = None
    #: set by fincon train: this run is its episode N, which reads beliefs learned on its own window
    #: (the lookahead check a test run passes is for runs after the training); 0: not an episode
    episode: int = Field(0, ge=0)
    #: accept beliefs trained on a window that overlaps or follows the run (loudly flagged; not a clean test)
    allow_overlap: Annotated[
        bool,
        Flag(
            help="accept --beliefs trained on a window that does not end before --start "
            "(lookahead: flagged in the summary and on stderr)",
            group=GROUP,
        ),
    ] = False
    #: training only: log-normal noise on the rules weights of this episode (exploration), and its seed
    explore: float = Field(0.0, ge=0.0, le=2.0)
    explore_seed: int = 0
    #: training only (llm brain): the manager samples at this temperature with this seed, so episodes
    #: differ while the analysts stay at the run's sampling and hit the cache when their inputs repeat
    manager_temperature: float | None = Field(None, ge=0.0, le=2.0)
    manager_seed: int | None = None
    #: LLM settings for this strategy: any key of the llm section, over the run's
    llm: LLMOverrides = Field(default_factory=LLMOverrides)

    @field_validator("analysts")
    @classmethod
    def _known(cls, v):
        if v is None:
            return v
        bad = [a for a in v if a not in agents.ROLES]
        if bad:
            raise ValueError(f"unknown analyst {bad[0]!r}; choose from {', '.join(agents.ROLES)}")
        if not v:
            raise ValueError("at least one analyst is needed")
        return list(dict.fromkeys(v))

    @model_validator(mode="after")
    def _sampled(self):  # --param fincon.samples=5 beside the fincon protocol: byte-identical, unsaid (review)
        if self.samples != type(self).model_fields["samples"].default and self.protocol != "scm":
            raise ValueError(
                f"samples is scm's (its Strategist's proposals a day); protocol {self.protocol} samples none: "
                "drop it, or use protocol scm"
            )
        return self

    @model_validator(mode="after")
    def _training_only(self):
        # reflections written on later days, re-dated before the start, entered a backtest unflagged
        if self.carried_reflections and not self.episode:
            raise ValueError(
                "carried_reflections is set by fincon train for its episodes; a test run reads learned "
                "reflections through beliefs (checked against its window)"
            )
        return self

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v):
        if v not in PROTOCOLS:
            raise ValueError(f"unknown protocol {v!r}; choose from {', '.join(protocol_names())}")
        if v == "single" and not cls.one_trader:  # the team decided from its news analyst's report alone
            raise ValueError("protocol single is finmem's one trader; the team decides with fincon, scm or debate")
        return v

    @field_validator("debate_sources")
    @classmethod
    def _sources(cls, v):  # checked on the team's first day, a typo wrote a partial run (exit 3)
        wrong = [x for x in v if x not in SOURCES]
        if wrong:
            raise ValueError(f"unknown source {wrong[0]!r}; a debate reads {', '.join(SOURCES)}")
        return v

    @field_validator("candidates")
    @classmethod
    def _upper(cls, v):
        return None if v is None else [symbol(t) for t in v]
