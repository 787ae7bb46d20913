"""Investment beliefs: the team's learned, versioned prompt state (FinCon's θ).

Beliefs are one structured document (``beliefs.json``): per *perspective*
(each analyst's source, plus the manager's risk stance) a short text that
the agents of that perspective read in their prompt, and an explicit weight
that the rules brain uses (the analyst weights of the rules manager; the
``risk`` weight is the exposure the rules manager keeps on a CVaR alert day).

Who reads what: an analyst reads only its own perspective's text; the
manager reads all of them. So a CVRF update that edits one perspective
reaches exactly the agents of that perspective (and the manager): the others'
inputs hash the same as before and reuse their reports without a model call.

The document also carries the reflections the manager wrote in the last
training episode, so the test stage starts from them (``--beliefs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Mapping, Sequence

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from fincon.errors import ConfigError
from fincon.validation import parse_iso_date

#: the manager's own perspective: how much risk to keep when a CVaR alert fires
RISK = "risk"
#: the rules manager keeps this share of its exposure on an alert day (initial belief)
DEFAULT_RISK_EXPOSURE = 0.5
#: beliefs.json format version (bump on an incompatible change)
FORMAT = 1
#: a day as beliefs.json writes it, YYYY-MM-DD, kept as the text (a bad one was a pandas traceback where it
#: was read, and "today" a wall-clock date)
Day = Annotated[str, AfterValidator(lambda v: str(parse_iso_date(v)) and v)]


class Perspective(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    text: str = ""
    weight: float = Field(ge=0.0)


class Reflection(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    day: Day
    text: str


class TrainingWindow(BaseModel):
    """The window (and data) beliefs were learned on: a test run may use them
    only when it starts strictly after ``end`` (point in time for learning)."""

    model_config = ConfigDict(extra="forbid")

    start: Day
    end: Day
    #: sha256 of what the training read (the dataset manifest or the data/events config)
    data_hash: str = ""
    #: the tickers the beliefs were learned on, and the training's episodes done of those planned (None:
    #: a file written before they were recorded)
    tickers: list[str] | None = None
    episodes_done: int | None = Field(None, ge=0)
    episodes_planned: int | None = Field(None, ge=1)


class Beliefs(BaseModel):
    """The team's investment beliefs; ``version`` counts the updates applied."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    format: int = FORMAT
    version: int = Field(0, ge=0)
    perspectives: dict[str, Perspective] = Field(min_length=1)
    reflections: list[Reflection] = Field(default_factory=list)
    #: set on the beliefs.json a training writes; None: unknown (older files, episodes' intermediate versions)
    window: TrainingWindow | None = None
    #: set on the beliefs.json a training writes: its window against the cutoff of the model that
    #: trained it (fincon.llm.knowledge; label no-model for a rules training); None: not recorded
    model_knowledge: dict[str, Any] | None = None

    # -- construction ------------------------------------------------------------
    @classmethod
    def initial(cls, role_weights: Mapping[str, float]) -> "Beliefs":
        """Untrained beliefs: empty texts, the roles' default rules weights."""
        ps = {name: Perspective(weight=float(w)) for name, w in role_weights.items()}
        ps[RISK] = Perspective(weight=DEFAULT_RISK_EXPOSURE)
        return cls(perspectives=ps)

    @classmethod
    def load(cls, path: str | Path) -> "Beliefs":
        return cls.read(path)[0]

    @classmethod
    def read(cls, path: str | Path) -> tuple["Beliefs", bytes]:
        """The beliefs of ``path`` (a beliefs.json or a `fincon train` folder) and the bytes parsed."""
        p = Path(path).expanduser()
        if p.is_dir():
            _check_training_finished(p)
            p = p / "beliefs.json"
        try:
            data = p.read_bytes()  # read once: what the run recorded is what it read (fincon.workflow.runner)
            raw = json.loads(data.decode("utf-8"))
        except FileNotFoundError:
            raise ConfigError(
                f"--beliefs: {p} does not exist (give a beliefs.json or a `fincon train` run dir)"
            ) from None
        except UnicodeDecodeError:
            raise ConfigError(
                f"--beliefs: cannot read {p}: not UTF-8 text (a binary file?); give a beliefs.json "
                "or a `fincon train` run dir"
            ) from None
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"--beliefs: cannot read {p}: not JSON ({exc.msg}, line {exc.lineno}); give a beliefs.json "
                "written by `fincon train`"
            ) from None
        except OSError as exc:
            raise ConfigError(f"--beliefs: cannot read {p}: {exc.strerror or exc}") from None
        try:
            b = cls.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ConfigError(f"--beliefs: {p} is not a beliefs file ({where}: {first['msg']})") from None
        if b.format != FORMAT:
            raise ConfigError(f"--beliefs: {p} has format {b.format}; this fincon reads format {FORMAT}")
        return b, data

    def dump(self) -> str:
        data = self.model_dump()
        if data.get("model_knowledge") is None:
            data.pop("model_knowledge", None)  # versions written before it (and episodes' versions) keep their bytes
        for key in ("tickers", "episodes_done", "episodes_planned"):  # likewise
            if data.get("window") and data["window"].get(key) is None:
                data["window"].pop(key)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    # -- reading -----------------------------------------------------------------
    def weight(self, perspective: str, default: float = 0.0) -> float:
        p = self.perspectives.get(perspective)
        return float(p.weight) if p is not None else default

    def weights(self) -> dict[str, float]:
        return {k: float(p.weight) for k, p in self.perspectives.items()}

    def for_agent(self, perspective: str) -> str:
        """What an analyst of ``perspective`` reads (its own text only)."""
        p = self.perspectives.get(perspective)
        return p.text if p is not None else ""

    def for_manager(self) -> str:
        """Every non-empty perspective, one line each (the manager reads all)."""
        return "\n".join(f"- {k}: {p.text}" for k, p in sorted(self.perspectives.items()) if p.text)

    def with_updates(
        self,
        texts: Mapping[str, str] | None = None,
        weights: Mapping[str, float] | None = None,
        reflections: list[Reflection] | None = None,
    ) -> "Beliefs":
        """A new version with some perspectives edited (unknown names are ignored)."""
        ps = {k: p.model_copy() for k, p in self.perspectives.items()}
        for k, t in (texts or {}).items():
            if k in ps:
                ps[k] = ps[k].model_copy(update={"text": t.strip()})
        for k, w in (weights or {}).items():
            if k in ps:
                ps[k] = ps[k].model_copy(update={"weight": round(max(0.0, float(w)), 6)})
        return Beliefs(
            version=self.version + 1,
            perspectives=ps,
            reflections=list(self.reflections if reflections is None else reflections),
        )


def check_window(beliefs: Beliefs, start: str, allow_overlap: bool = False) -> str | None:
    """Refuse beliefs not learned strictly before ``start`` (ConfigError, one
    line); with ``allow_overlap`` the overlap is returned as a warning to
    print loudly. Beliefs without a recorded window are refused likewise (found in review: they passed
    unchecked, and the card said point in time PASS of a run on the days they were trained on)."""
    w = beliefs.window
    if w is None:
        msg = (
            "--beliefs record no training window (no `window` in the file): the days they learned from are "
            "unknown, so lookahead cannot be ruled out"
        )
        if not allow_overlap:
            raise ConfigError(
                msg + " (give the beliefs.json `fincon train` wrote, or --allow-overlap to run it anyway, flagged)"
            )
        return "WARNING: " + msg + " (--allow-overlap: results are not a clean test)"
    if w.end < start:
        return None
    msg = (
        f"--beliefs were trained on {w.start}..{w.end}, which is not strictly before the run's start {start}: "
        f"testing on days the beliefs learned from is lookahead"
    )
    if not allow_overlap:
        raise ConfigError(msg + " (pick a later window, or --allow-overlap to run it anyway, flagged)")
    return "WARNING: " + msg + " (--allow-overlap: results are not a clean test)"


def check_learned_for(beliefs: Beliefs, roles: Sequence[str], tickers: Sequence[str]) -> str | None:
    """Refuse beliefs learned for another team or other tickers (ConfigError, one line: found in review, a
    perspective the team lacks was dropped and a role the beliefs lack read its default, the run still
    labelled trained; TSLA's reflections entered an AAPL run's memory); returns a warning for beliefs of
    a training that did not finish (a beliefs.json passed on its own), else None."""
    have, want = set(beliefs.perspectives) - {RISK}, set(roles)
    if have != want:
        raise ConfigError(
            f"--beliefs were learned for the analysts {', '.join(sorted(have))}, and this team has "
            f"{', '.join(sorted(want))}: give the team the training's analysts (--param fincon.analysts=[...])"
        )
    w = beliefs.window
    if w is not None and w.tickers is not None and sorted(w.tickers) != sorted(tickers):
        raise ConfigError(
            f"--beliefs were learned on {','.join(w.tickers)}, and this run trades {','.join(tickers)}: their "
            "reflections name the other firm's days; train on these tickers"
        )
    if w is not None and w.episodes_planned is not None and (w.episodes_done or 0) < w.episodes_planned:
        return f"--beliefs were learned in {w.episodes_done} of {w.episodes_planned} episodes: a training that did not finish"
    return None


def _check_training_finished(run: Path) -> None:
    """A `fincon train` directory given as --beliefs must have finished: the
    beliefs.json of a training that stopped after episode 2 of 4 are not its
    learned beliefs (its file can still be passed on purpose)."""
    marker = run / "train.json"
    if not marker.is_file():
        return
    # read here, not through fincon.workflow.status: the agents sit below the workflow
    try:
        state = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ConfigError(f"--beliefs: {marker} is damaged; pass the training's beliefs.json itself") from None
    status = state.get("status") if isinstance(state, dict) else None
    why = (
        None
        if status in (None, "complete")
        else f"status {status}" + (f": {state['error']}" if isinstance(state, dict) and state.get("error") else "")
    )
    if why:
        raise ConfigError(
            f"--beliefs: {run} is a training that did not finish ({why}); finish it with its "
            f"command, or pass {run / 'beliefs.json'} to test the beliefs it has so far"
        )


def touched(before: Beliefs, after: Beliefs) -> list[str]:
    """Perspectives whose text or weight changed."""
    out = []
    for k, p in after.perspectives.items():
        q = before.perspectives.get(k)
        if q is None or q.text != p.text or abs(q.weight - p.weight) > 1e-12:
            out.append(k)
    return sorted(out)


def read_params(value: Any) -> tuple[Beliefs | None, bytes | None]:
    """:func:`as_params` and the bytes it parsed when ``value`` is a path (None: none read). What a run
    records is what it read: hashed again at the run's end, a file replaced meanwhile named beliefs the
    run never traded on (found in review)."""
    return Beliefs.read(value) if isinstance(value, str) else (as_params(value), None)


def as_params(value: Any) -> Beliefs | None:
    """``strategy_params.fincon.beliefs``: a path (str) or an inline mapping."""
    if value is None:
        return None
    if isinstance(value, Beliefs):
        return value
    if isinstance(value, Mapping):
        try:
            return Beliefs.model_validate(dict(value))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ConfigError(f"fincon.beliefs: not a beliefs mapping ({where}: {first['msg']})") from None
    return Beliefs.load(str(value))
