"""fincon's test kit: the doubles, tiny markets and corpora the tests share.

Why a module of the library and not a ``tests/helpers.py``: test files used
to import each other's helpers (``from test_team import Stub``), so running
one file pulled in another file's tests, and the same scripted model was
written three times. One kit, importable as ``fincon.testing`` from any test
(and from a user's own tests of a strategy), keeps one copy of each:

* ``doubles``: model backends that answer without a model (``Scripted``, ``Clairvoyant`` (cheats from the real future)
  from a list, ``TeamStub`` deterministic in the prompt for every team schema).
* ``markets``: the bundled sample prices as a ``MarketData``, a backtest
  in one call, and a market whose future is scrambled (point-in-time tests).
* ``corpora``: event corpora in a directory (the bundled one, a perturbed
  one, a generated one with a planted signal).
* ``team``: a FinCon team run on the rules brain in one call.
* ``runs``: the command lines of the small CLI runs several files share.

Nothing here loads a model, starts Whisper or touches the network.
"""

from fincon.testing.corpora import (
    IB_RECORDINGS,
    INVESTORBENCH,
    corpus,
    generated_corpus,
    perturb_events,
    training_corpus,
)
from fincon.testing.doubles import Clairvoyant, ScmStub, Scripted, TeamStub, stub_client
from fincon.testing.markets import END, START, backtest, market_for, perturbed
from fincon.testing.runs import (
    SMALL_EXPERIMENT,
    SMALL_TEAM_RUN,
    TEST_WINDOW,
    TINY_EXPERIMENT,
    TRAIN_WINDOW,
    TRAINING_TEAM,
    copy_experiment,
    decisions_of,
    setting,
    strict_json,
    team_config,
)
from fincon.testing.team import RULES, day_records, run_team

__all__ = [
    "IB_RECORDINGS",
    "INVESTORBENCH",
    "END",
    "RULES",
    "SMALL_EXPERIMENT",
    "SMALL_TEAM_RUN",
    "START",
    "TEST_WINDOW",
    "TINY_EXPERIMENT",
    "TRAIN_WINDOW",
    "TRAINING_TEAM",
    "Clairvoyant",
    "Scripted",
    "ScmStub",
    "TeamStub",
    "backtest",
    "copy_experiment",
    "corpus",
    "day_records",
    "decisions_of",
    "generated_corpus",
    "market_for",
    "perturb_events",
    "perturbed",
    "run_team",
    "setting",
    "strict_json",
    "team_config",
    "training_corpus",
    "stub_client",
]
