"""Statistics that count every trial (issue 32 item 2), each checked against
a published worked example, a hand computation or a case with a known answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fincon.risk import significance as sig


def test_deflated_sharpe_matches_the_papers_worked_example():
    """Bailey & López de Prado, "The Deflated Sharpe Ratio" (2014), section 5:
    100 trials whose annualised SRs vary by 1/2, the best 2.5 annualised over
    five years of daily returns (T = 1250), skewness -3, kurtosis 10: the
    expected maximum is 0.1132 a day and DSR about 0.90."""
    sr = 2.5 / math.sqrt(250)
    var = 0.5 / 250  # the annualised variance in daily units
    assert sig.expected_max_sharpe(100, var) == pytest.approx(0.1132, abs=5e-4)
    assert sig.dsr(sr, 1250, -3.0, 10.0, 100, var) == pytest.approx(0.9004, abs=1e-3)
    # one trial: nothing to deflate, DSR is PSR against zero
    assert sig.dsr(sr, 1250, -3.0, 10.0, 1, var) == sig.psr(sr, 1250, -3.0, 10.0)


def test_psr_and_min_track_record_by_hand():
    # normal returns (skew 0, kurtosis 3): PSR = Phi(SR sqrt(n-1) / sqrt(1 + SR^2 / 2))
    from scipy.stats import norm

    sr, n = 0.1, 101
    assert sig.psr(sr, n) == pytest.approx(norm.cdf(0.1 * 10 / math.sqrt(1 + 0.01 / 2)))
    # MinTRL = 1 + (1 + SR^2/2) (z_0.95 / SR)^2; PSR at that length is 0.95
    mtrl = sig.min_track_record(sr)
    assert mtrl == pytest.approx(1 + (1 + 0.005) * (norm.ppf(0.95) / 0.1) ** 2)
    assert sig.psr(sr, mtrl) == pytest.approx(0.95, abs=1e-9)
    assert sig.min_track_record(-0.1) == math.inf


def test_the_bootstrap_interval_holds_the_sharpe_and_is_reproducible():
    rng = np.random.default_rng(1)
    r = rng.normal(0.001, 0.01, 500)
    b = rng.normal(0.0, 0.01, 500)
    one = sig.sharpe_interval(r, b, reps=2000, seed=7)
    lo, hi = one["sharpe_ci"]
    assert lo < sig.sharpe(r) < hi and hi - lo < 0.25
    assert one["diff_ci"][0] < sig.sharpe(r) - sig.sharpe(b) < one["diff_ci"][1]
    assert sig.sharpe_interval(r, b, reps=2000, seed=7) == one  # same seed, same interval
    assert one["block"] == 8  # 500 ** (1/3) rounded


def test_spa_and_stepm_find_the_planted_edge_and_only_it():
    """As arch's documentation example: a benchmark, models of pure noise and
    one with a real edge; SPA rejects only for the edge, StepM keeps only it."""
    rng = np.random.default_rng(0)
    t = 1000
    bench = rng.normal(0, 0.01, t)
    models = {f"noise{i}": bench + rng.normal(0, 0.01, t) for i in range(4)}
    models["edge"] = bench + 0.003 + rng.normal(0, 0.01, t)
    res = sig.spa(bench, models, reps=1000, seed=3)
    assert res["p_values"]["edge"] < 0.01
    assert all(res["p_values"][f"noise{i}"] > 0.05 for i in range(4))
    assert res["stepm"] == ["edge"]


def test_stepm_that_finds_every_model_in_turn_stops_instead_of_crashing():
    """arch 8.0's StepM steps down while its last round found a model, even when none is left: the
    next round's SPA is over no model and raises numpy's "zero-size array to reduction operation
    maximum". Found by hand: `fincon experiment --placebo ...` with the rules brain on TSLA, Q4
    2022, ended in that traceback after every unit had run. fincon steps down itself and stops
    when every model is found, with arch's SPA (the same draws, so the same answer where arch's
    StepM did not fail)."""
    from arch.bootstrap import SPA

    rng = np.random.default_rng(0)
    bench = rng.normal(0, 0.02, 60)
    models = {"a": bench + 0.012 + rng.normal(0, 0.02, 60), "c": bench + 0.006 + rng.normal(0, 0.02, 60)}
    first = SPA(-bench, -np.column_stack(list(models.values())), block_size=4, reps=300,
                seed=np.random.default_rng(0))  # fmt: skip
    first.compute()
    assert list(first.better_models(0.05)) == [0]  # the first round finds "a" alone: "c" needs a second
    assert sig.spa(bench, models, reps=300)["stepm"] == ["a", "c"]


def test_a_strategy_that_is_the_benchmark_does_not_beat_it():
    """A single-asset Markowitz or equal weight holds what buy-and-hold holds:
    its gap has no variance, which arch's studentised statistic turns into
    p = 0.0. fincon answers exactly: p = 1 for no gap, p = 0 for a constant
    positive one, and neither distorts StepM over the other models."""
    rng = np.random.default_rng(0)
    bench = rng.normal(0, 0.01, 148)
    models = {"same": bench.copy(), "noise": bench + rng.normal(0, 0.01, 148), "above": bench + 0.001}
    res = sig.spa(bench, models, reps=500, seed=3)
    assert res["p_values"]["same"] == 1.0 and res["p_values"]["above"] == 0.0
    assert 0.05 < res["p_values"]["noise"] < 1.0
    assert res["stepm"] == ["above"]
    assert list(res["p_values"]) == ["same", "noise", "above"]  # the caller's order


def test_pbo_is_about_half_for_noise_and_near_zero_for_a_real_edge():
    rng = np.random.default_rng(5)
    noise = rng.normal(0, 0.01, (800, 20))
    assert 0.3 < sig.pbo(noise, splits=10)["pbo"] < 0.7
    planted = noise.copy()
    planted[:, 7] += 0.004  # one configuration really earns more
    res = sig.pbo(planted, splits=10)
    assert res["pbo"] < 0.05 and res["combinations"] == math.comb(10, 5) == 252


def test_pbo_on_noise_is_a_half_for_an_odd_number_of_configurations_too():
    """Issue 42 item 8: with the median rank counted as overfit (logit <= 0), N = 3 noise gave 0.5 + 1/6;
    with it counted one half, the mean over 400 noise panels is 0.5 within its Monte Carlo error (sd of a
    single PBO about 0.2, so the mean's is about 0.01), and the noise sd reported beside one PBO is about 0.2."""
    rng = np.random.default_rng(11)
    for n in (3, 5):
        vals = [sig.pbo(rng.standard_normal((96, n)), splits=8, noise_reps=0)["pbo"] for _ in range(400)]
        assert abs(np.mean(vals) - 0.5) < 0.04, (n, np.mean(vals))
    one = sig.pbo(rng.standard_normal((96, 3)), splits=8, noise_reps=100, seed=1)
    assert 0.45 < one["noise_mean"] < 0.55 and 0.15 < one["noise_sd"] < 0.3 and one["noise_reps"] == 100
    assert sig.pbo(rng.standard_normal((96, 3)), splits=8, noise_reps=100, seed=1)["noise_sd"] == one["noise_sd"]
    # the convention by hand: the logits of the in-sample best at ranks 1, 2, 3 of 3 out of sample
    lam = np.log(np.array([1, 2, 3]) / 4 / (1 - np.array([1, 2, 3]) / 4))
    assert sig._overfit_share(lam) == 0.5 and np.mean(lam <= 0) == pytest.approx(2 / 3)


def test_holm_and_bh_by_hand():
    p = [0.01, 0.04, 0.03, None]
    holm = sig.adjust(p, "holm")
    assert holm[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(holm[3])
    assert sig.adjust(p, "fdr_bh")[:3] == pytest.approx([0.03, 0.04, 0.04])


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
@pytest.mark.parametrize("method", ["holm", "fdr_bh"])
def test_adjusted_p_values_are_statsmodels_float_for_float(method):
    """adjust() writes out statsmodels' multipletests (whose Holm branch runs
    gc.collect() on every call): the same floats, on random p-values, ties,
    values that reach 1 and single tests, with missing values kept in place."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    cases = [rng.uniform(0, 1, n).tolist() for n in (1, 2, 3, 7, 40)]
    cases += [rng.uniform(0, 0.1, 12).tolist(), [0.02, 0.02, 0.5, 0.02, 1.0, 0.9], [0.3] * 5]
    cases += [rng.choice([0.01, 0.04, 0.2], 30).tolist()]
    for p in cases:
        want = multipletests(p, method=method)[1].tolist()
        assert sig.adjust(p, method) == want, p
        gapped = p[:1] + [None] + p[1:] + [float("nan")]
        got = sig.adjust(gapped, method)
        assert got[:1] + got[2:-1] == want and math.isnan(got[1]) and math.isnan(got[-1])
    with pytest.raises(ValueError, match="'bonferroni'"):
        sig.adjust([0.1], "bonferroni")


def test_a_series_that_never_moved_claims_nothing():
    """A strategy that never held a position has no Sharpe ratio to be unsure of: `fincon forward score`
    showed one flat for 40 sessions with Sharpe n/a beside PSR 0.50 and DSR 0.24 (found by hand), a
    coin's odds for a series that cannot beat zero. Its PSR, MinTRL and DSR are n/a, its row stays in
    the table, and a short window is still flagged."""
    from fincon.workflow import tables

    flat = sig.track_record(np.zeros(40), 4, 0.01)
    assert flat["sharpe_daily"] == 0.0
    assert all(math.isnan(flat[k]) for k in ("psr", "min_track_record_days", "dsr"))
    r = np.random.default_rng(0).normal(0.001, 0.01, 250)
    s = sig.sharpe(r)
    sk, ku = sig.moments(r)
    assert sig.track_record(r, 4, 0.01) == {
        "sharpe_daily": s,
        "psr": sig.psr(s, 250, sk, ku),
        "min_track_record_days": sig.min_track_record(s, sk, ku),
        "dsr": sig.dsr(s, 250, sk, ku, 4, 0.01),
    }
    assert math.isnan(sig.track_record(r[:2], 1, 0.0)["psr"])  # two returns: no skewness, no kurtosis
    heads, cells, _ = tables.significance([{"strategy": "sma-cross", "days": 40, "dsr_trials": 4, **flat}])
    row = dict(zip(heads, cells[0]))
    assert (row["strategy"], row["PSR"], row["MinTRL d"], row["DSR (trials)"]) == ("sma-cross", "n/a", "n/a", "n/a (4)")
    assert tables.significance_flags([{"days": 10, **sig.track_record(np.zeros(10), 1, 0.0)}])


def test_a_series_with_a_nan_is_not_tested_and_never_superior():
    """Found in review: one NaN in a strategy's returns gave SPA p = 0.0 ("superior") where the same series
    without it gave 1.0 (np.ptp of NaN skipped the exact branch and reached arch)."""
    rng = np.random.default_rng(0)
    bench = rng.normal(0, 0.01, 200)
    same = bench.copy()
    holed = bench.copy()
    holed[50] = np.nan
    res = sig.spa(bench, {"same": same, "holed": holed}, reps=200, seed=1)
    assert res["p_values"]["same"] == 1.0 and np.isnan(res["p_values"]["holed"]) and res["stepm"] == []
