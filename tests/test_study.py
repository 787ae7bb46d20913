"""The resumable study that ``fincon train``, ``fincon experiment`` and
``--rolling`` share (``fincon.workflow.study``), on a toy study whose units
write one file each: a rerun skips what is done, a failure marks the study
and keeps what finished, another config is refused without a change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fincon.errors import FinconError
from fincon.workflow.status import SCHEMA_VERSION
from fincon.workflow.study import Study, run_phases


class Toy:
    """Two phases of units; a unit writes ``units/<name>`` and is done once that file exists."""

    phases = (("a", "b"), ("c", "d"))

    def __init__(self, out: Path, fail_on: str | None = None, exc: BaseException | None = None):
        self.out, self.fail_on, self.exc, self.calls = out, fail_on, exc, []

    def study(self, config: str = "one") -> Study:
        return Study(
            self.out,
            "toy.json",
            {"config": {"name": config}},
            "toy",
            finished=lambda out: len(list((out / "units").glob("*"))) if (out / "units").is_dir() else 0,
            layout={"units", "result.txt"},
            disposable=lambda out: not (out / "units").is_dir() or not any((out / "units").iterdir()),
        )

    def unit(self, name: str):
        def job() -> str:
            self.calls.append(name)
            if name == self.fail_on:
                raise self.exc or RuntimeError(f"unit {name} broke")
            (self.out / "units").mkdir(exist_ok=True)
            (self.out / "units" / name).write_text(name)
            return name

        job.unit = name
        return job

    def body(self):
        def execute(jobs, finished):
            for i, job in enumerate(jobs):
                finished(i, job())

        phases = [[(n, self.unit(n)) for n in phase] for phase in self.phases]
        outcome = run_phases(
            phases, lambda job: (self.out / "units" / job.unit).is_file(), execute, bar={"disable": True}
        )
        (self.out / "result.txt").write_text(",".join(sorted(p.name for p in (self.out / "units").iterdir())))
        return outcome

    def run(self, config: str = "one"):
        return self.study(config).run(self.body)


def state(out: Path) -> dict:
    return json.loads((out / "toy.json").read_text())


def test_a_failure_marks_the_study_and_keeps_the_finished_phase_then_a_rerun_skips_it(tmp_path):
    out = tmp_path / "toy"
    with pytest.raises(RuntimeError, match="unit c broke"):
        Toy(out, fail_on="c").run()
    assert state(out) == {
        "schema_version": SCHEMA_VERSION,
        "config": {"name": "one"},
        "status": "failed",
        "error": "RuntimeError: unit c broke",
    }
    assert sorted(p.name for p in (out / "units").iterdir()) == ["a", "b"]  # the finished phase stays
    assert not (out / "result.txt").exists()  # nothing presented as a result

    toy = Toy(out)
    outcome = toy.run()
    assert toy.calls == ["c", "d"]  # the finished phase is skipped, not run again
    assert (outcome.ran, outcome.skipped) == (["c", "d"], ["a", "b"])
    assert state(out) == {"schema_version": SCHEMA_VERSION, "config": {"name": "one"}, "status": "complete"}
    assert (out / "result.txt").read_text() == "a,b,c,d"

    again = Toy(out)
    outcome = again.run()  # a finished study: nothing runs, the same files
    assert again.calls == [] and outcome.skipped == ["a", "b", "c", "d"] and outcome.ran == []
    assert state(out)["status"] == "complete" and (out / "result.txt").read_text() == "a,b,c,d"


def test_a_later_phase_starts_only_after_the_one_before(tmp_path):
    """Each phase skips its own done units; a failing first phase leaves the second unstarted."""
    out = tmp_path / "toy"
    Toy(out).run()
    for lost in ("a", "c"):  # a unit lost in each phase (deleted, or never finished)
        (out / "units" / lost).unlink()
    failing = Toy(out, fail_on="a")
    with pytest.raises(RuntimeError):
        failing.run()
    assert failing.calls == ["a"] and state(out)["status"] == "failed"
    toy = Toy(out)
    outcome = toy.run()
    assert toy.calls == ["a", "c"] and outcome.skipped == ["b", "d"] and outcome.ran == ["a", "c"]
    assert state(out)["status"] == "complete"


@pytest.mark.parametrize(
    "exc, status, why",
    [
        (KeyboardInterrupt(), "interrupted", "Ctrl-C or SIGTERM; rerun the same command to resume"),
        (FinconError("episode 3 stopped early"), "failed", "episode 3 stopped early"),
    ],
)
def test_the_status_says_why_it_stopped(tmp_path, exc, status, why):
    out = tmp_path / "toy"
    with pytest.raises(type(exc)):
        Toy(out, fail_on="d", exc=exc).run()
    assert state(out)["status"] == status and state(out)["error"] == why


def test_stopped_early_is_its_own_status(tmp_path):
    exc = FinconError("the LLM server went away")
    exc.exit_code = 3
    out = tmp_path / "toy"
    with pytest.raises(FinconError):
        Toy(out, fail_on="c", exc=exc).run()
    assert state(out)["status"] == "stopped_early"


def test_a_failure_before_anything_finished_leaves_nothing_behind(tmp_path):
    """The directory and the parents this command created go; a folder that was there stays."""
    out = tmp_path / "new" / "deeper" / "toy"
    with pytest.raises(RuntimeError):
        Toy(out, fail_on="a").run()
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(RuntimeError):
        Toy(kept, fail_on="a").run()
    assert kept.is_dir() and state(kept)["status"] == "failed"


def test_preflight_runs_after_the_claim_and_before_the_first_file(tmp_path):
    out = tmp_path / "toy"
    toy = Toy(out)

    def refuse():
        raise FinconError("no prices for NOPE")

    with pytest.raises(FinconError, match="NOPE"):
        toy.study().run(toy.body, preflight=refuse)
    assert not out.exists() and toy.calls == []


def test_another_config_is_refused_and_nothing_changes(tmp_path):
    out = tmp_path / "toy"
    Toy(out).run()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(FinconError, match=r"holds a toy with another config \(config.name; status complete"):
        Toy(out).run("two")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.md").write_text("mine")
    with pytest.raises(FinconError, match="exists and is not a fincon toy"):
        Toy(tmp_path / "mine").run()
    assert (tmp_path / "mine" / "notes.md").read_text() == "mine"


def test_a_directory_of_another_schema_is_refused_in_one_line_and_kept(tmp_path):
    out = tmp_path / "toy"
    Toy(out).run()
    assert state(out)["schema_version"] == SCHEMA_VERSION  # the marker says which rules wrote it
    old = {k: v for k, v in state(out).items() if k != "schema_version"}  # a marker of schema 1 had none
    (out / "toy.json").write_text(json.dumps(old))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    for marker in (old, {**old, "schema_version": SCHEMA_VERSION + 1}):
        (out / "toy.json").write_text(json.dumps(marker))
        with pytest.raises(FinconError) as err:
            Toy(out).run()  # the same config: still refused, its keys were written by other rules
        text = str(err.value)
        assert "\n" not in text and "pick another --out" in text, text
        assert f"schema {marker.get('schema_version', 1)}; this one writes schema {SCHEMA_VERSION}" in text
        assert ("an older" if "schema_version" not in marker else "a newer") in text
    (out / "toy.json").write_text(json.dumps(marker))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "toy.json"} == {
        p: b for p, b in before.items() if p.name != "toy.json"
    }


def test_a_study_may_bring_its_own_claim_and_creation_message(tmp_path):
    seen = []

    def claimed(study: Study) -> bool:
        seen.append(study.marker)
        return False

    blocker = tmp_path / "file"
    blocker.write_text("x")
    study = Study(blocker / "sub", "toy.json", {}, "toy", claimed=claimed, cannot_create="--out {out}: no ({why})")
    with pytest.raises(FinconError, match=r"^--out .*file/sub: no \("):
        study.run(lambda: None)
    assert seen == [blocker / "sub" / "toy.json"] and blocker.read_text() == "x"


def test_a_stop_names_the_folder_to_resume_only_when_it_is_kept(tmp_path):
    """Ctrl-C or SIGTERM before a unit finished in a new folder removes it, and
    the CLI's last line says so instead of 'the finished units are kept in
    <a folder that is gone>' (found by hand: `fincon train` terminated during
    its first episode); in a folder that was there, the folder is named."""
    from fincon.cli.main import _left

    new = tmp_path / "new" / "toy"
    with pytest.raises(KeyboardInterrupt) as stop:
        Toy(new, fail_on="a", exc=KeyboardInterrupt()).run()
    assert not (tmp_path / "new").exists()
    assert _left(stop.value) == "partial output removed"

    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(KeyboardInterrupt) as stop:
        Toy(kept, fail_on="a", exc=KeyboardInterrupt()).run()
    assert state(kept)["status"] == "interrupted"
    assert _left(stop.value) == f"the finished units are kept in {kept}: run the same command to resume"

    later = tmp_path / "later"
    with pytest.raises(KeyboardInterrupt) as stop:
        Toy(later, fail_on="c", exc=KeyboardInterrupt()).run()  # the first phase finished: kept
    assert sorted(p.name for p in (later / "units").iterdir()) == ["a", "b"]
    assert _left(stop.value) == f"the finished units are kept in {later}: run the same command to resume"


def test_a_second_command_on_a_running_study_is_refused_and_changes_nothing(tmp_path, monkeypatch, caplog):
    """Two `fincon experiment` on one --out ran every unit twice side by side (found by hand); the
    folder is held while a study runs (a lock on the folder: no file added), and a second command
    says so in one line, exit 1, and writes, runs and removes nothing. A filesystem that cannot
    lock a folder is said in a warning and the study runs."""
    import fcntl
    import logging

    from fincon.errors import Busy
    from fincon.workflow.study import held

    out = tmp_path / "toy"
    out.mkdir()
    toy = Toy(out)
    with held(out, "toy"):  # another command's hold (a lock between open files, as between processes)
        with pytest.raises(Busy, match="another fincon command is running this toy") as refused:
            toy.run()
    assert refused.value.exit_code == 1
    assert toy.calls == [] and list(out.iterdir()) == []  # no status file, no unit
    toy.run()  # once the other is done
    assert toy.calls == ["a", "b", "c", "d"] and state(out)["status"] == "complete"
    assert sorted(p.name for p in out.iterdir()) == ["result.txt", "toy.json", "units"]  # no lock file

    def unsupported(fd, op):
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(fcntl, "flock", unsupported)
    caplog.set_level(logging.WARNING)
    other = Toy(tmp_path / "nfs")
    other.run()
    assert other.calls == ["a", "b", "c", "d"] and "cannot lock" in caplog.text
