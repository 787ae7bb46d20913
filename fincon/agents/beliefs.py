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

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Mapping

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

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


class Beliefs(BaseModel):
    """The team's investment beliefs; ``version`` counts the updates applied."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    format: int = FORMAT
    version: int = 0
    perspectives: dict[str, Perspective]
    reflections: list[Reflection] = Field(default_factory=list)
    #: set on the beliefs.json a training writes; None: unknown (older files, episodes' intermediate versions)
    window: TrainingWindow | None = None
    #: set on the beliefs.json a training writes: its window against the cutoff of the model that
    #: trained it (fincon.llm.knowledge; label no-model for a rules training); None: not recorded
    model_knowledge: dict[str, Any] | None = None
    _sha256: str | None = PrivateAttr(default=None)

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
        b._sha256 = hashlib.sha256(data).hexdigest()
        return b, data

    @property
    def sha256(self) -> str | None:
        """The sha256 of the bytes :meth:`load` parsed (None: not read from a file). Hashed again at the
        run's end, a file replaced meanwhile named beliefs the run never read (found in review)."""
        return self._sha256

    def dump(self) -> str:
        data = self.model_dump()
        if data.get("model_knowledge") is None:
            data.pop("model_knowledge", None)  # versions written before it (and episodes' versions) keep their bytes
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
    print loudly. Beliefs without a recorded window pass (nothing to check)."""
    w = beliefs.window
    if w is None or w.end < start:
        return None
    msg = (
        f"--beliefs were trained on {w.start}..{w.end}, which is not strictly before the run's start {start}: "
        f"testing on days the beliefs learned from is lookahead"
    )
    if not allow_overlap:
        raise ConfigError(msg + " (pick a later window, or --allow-overlap to run it anyway, flagged)")
    return "WARNING: " + msg + " (--allow-overlap: results are not a clean test)"


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
