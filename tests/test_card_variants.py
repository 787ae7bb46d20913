"""The card of an experiment that ran no variant named ``full`` (``--ablations no-beliefs``, ``--protocols
scm``): found in review, it was graded as its buy-and-hold baseline (``report card: exp (of baselines)``),
its team's records unread. It grades the team's median run of ``full``, else of the first variant its
config lists, and names it; an experiment never falls back to its baselines/."""

from __future__ import annotations

import json
from pathlib import Path

from fincon.cli.main import main
from fincon.report.card import run_card
from fincon.report.text import format_card
from fincon.workflow.status import SCHEMA_VERSION

DAYS = ["2022-10-03", "2022-10-04", "2022-10-05"]


def _run(folder: Path, strategy: str, cr: float, label: str = "no-model") -> None:
    """A finished run as the card reads it; a team's decisions hold one analyst's call a day."""
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(f"strategies: [{strategy}]\n")
    (folder / "metrics.json").write_text(json.dumps({"cr_pct": cr, "model_knowledge": {"label": label}}))
    (folder / "equity.csv").write_text("date,value\n" + "".join(f"{d},{1e6 + k}\n" for k, d in enumerate(DAYS)))
    calls = [{"agent": "news/TSLA", "direction": "bullish", "confidence": 0.6, "via": "rules"}]
    days = [{"date": d, "record": {"closes": {"TSLA": 100.0 + k}, "agents": calls}} for k, d in enumerate(DAYS)]
    (folder / "decisions.jsonl").write_text("".join(json.dumps(d) + "\n" for d in days) if strategy == "fincon" else "")


def _experiment(root: Path, protocols: list[str], ablations: list[str], variants: list[str] | None = None) -> Path:
    """An experiment's folder: its marker (config), its buy-and-hold baseline and the team's median run of
    each variant (``variants``: those results.json names, by default every one the config makes)."""
    config = {"protocols": protocols, "ablations": ablations, "baselines": ["buy-and-hold"]}
    (root / "train").mkdir(parents=True)
    (root / "experiment.json").write_text(
        json.dumps({"schema_version": SCHEMA_VERSION, "config": config, "status": "complete"})
    )
    _run(root / "baselines", "buy-and-hold", -21.9)
    made = [(p, a, a if p == "fincon" else f"{p}-{a}") for p in protocols for a in ablations]
    median = {}
    for p, a, v in made:
        if variants is None or v in variants:
            _run(root / "test" / f"{v}-r1", "fincon", 6.8)
            median[v] = {"protocol": p, "ablation": a, "repeat": 1, "run_dir": f"test/{v}-r1", "cr_pct": 6.8}
    (root / "results.json").write_text(json.dumps({"median": median, "baselines": {}}, sort_keys=True))
    return root


def test_an_experiment_without_the_full_variant_grades_its_first_team_variant_and_names_it(tmp_path):
    # --ablations no-cvar,no-beliefs: results.json lists no-beliefs first (sorted), the config no-cvar
    exp = _experiment(tmp_path / "ab", ["fincon"], ["no-cvar", "no-beliefs"])
    card = run_card(exp)
    assert card["run"] == str(exp / "test" / "no-cvar-r1"), card["run"]
    assert card["graded"] == "team variant no-cvar: no variant 'full' ran"
    assert format_card(card).splitlines()[0].startswith(f"report card: {exp} (of team variant no-cvar: no variant ")
    assert card["calibration"] is not None and card["calibration"]["calls"] == 2  # the team's records, read
    # --protocols scm alone: its one variant is scm-full
    scm = run_card(_experiment(tmp_path / "scm", ["scm"], ["full"]))
    assert scm["run"] == str(tmp_path / "scm" / "test" / "scm-full-r1")
    assert scm["graded"] == "team variant scm-full: no variant 'full' ran"
    # with full among them, full, and the header as before (no variant named)
    full = run_card(_experiment(tmp_path / "full", ["scm", "fincon"], ["no-beliefs", "full"]))
    assert full["run"] == str(tmp_path / "full" / "test" / "full-r1") and full["graded"] is None
    assert format_card(full).splitlines()[0].startswith(f"report card: {tmp_path / 'full'}  (")


def test_an_experiment_without_a_team_run_is_refused_never_graded_as_its_baselines(tmp_path, capsys):
    exp = _experiment(tmp_path / "none", ["fincon"], ["no-beliefs"], variants=[])
    assert main(["report", "--card", str(exp), "--ledger", "off"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        "is an experiment whose results.json names no team variant's median run: the card grades its team, "
        "not its baselines"
    ), err
    # its median run gone: refused too, and named
    exp = _experiment(tmp_path / "gone", ["fincon"], ["no-beliefs"])
    (exp / "test" / "no-beliefs-r1" / "metrics.json").unlink()
    assert main(["report", "--card", str(exp), "--ledger", "off"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "results.json names the team's median run test/no-beliefs-r1, which holds no " in err[0]
    (exp / "results.json").unlink()
    assert main(["report", "--card", str(exp), "--ledger", "off"]) == 2
    assert "is an experiment whose results.json is missing" in capsys.readouterr().err
    assert main(["report", "--card", str(exp / "baselines"), "--ledger", "off"]) == 0  # graded on its own
