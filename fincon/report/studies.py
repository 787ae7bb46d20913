"""The report's study sections: a belief training (objective and beliefs per
episode) and an experiment (median runs, baselines, Wilcoxon tests).

Reads only the trainings' and experiments' loaded files (train.json,
episodes.jsonl, beliefs.json, results.json); returns HTML text.
"""

from __future__ import annotations

from fincon.report.load import ReportData, Training
from fincon.report.parts import COLORS, esc, num, placebo_table, plot_div, significance_table, table
from fincon.workflow.paper import block_rows, label
from fincon.workflow.paper_protocol import knowledge_line
from fincon.workflow.tables import (
    PLACEBO_RUN,
    experiment as experiment_table,
    identical_flags,
    median_optimizer_flags,
    paper_block,
)


def _training_chart(t: Training, div_id: str) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = t.episodes
    ks = [r.get("episode") for r in rows]
    names = sorted({n for r in rows for n in (r.get("weights_in_force") or {})})
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        specs=[[{}], [{"secondary_y": True}]],
        subplot_titles=("rules weight in force", "objective (CR %) and tau"),
    )
    for i, n in enumerate(names):
        fig.add_trace(
            go.Scatter(
                x=ks,
                y=[(r.get("weights_in_force") or {}).get(n) for r in rows],
                name=n,
                mode="lines+markers",
                line={"color": COLORS[i % len(COLORS)]},
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=ks,
            y=[r.get("objective") for r in rows],
            name="objective (CR %)",
            mode="lines+markers",
            line={"color": "#1f2328"},
        ),
        row=2,
        col=1,
    )
    tau = [(r.get("episode"), r["tau"]) for r in rows if isinstance(r.get("tau"), (int, float))]
    fig.add_trace(
        go.Scatter(
            x=[k for k, _ in tau],
            y=[v for _, v in tau],
            name="tau (same action share)",
            mode="lines+markers",
            line={"color": "#bc4c00", "dash": "dash"},
        ),
        row=2,
        col=1,
        secondary_y=True,
    )
    fig.update_layout(template="plotly_white", margin={"l": 60, "r": 60, "t": 40, "b": 40})
    fig.update_xaxes(title_text="episode", dtick=1, row=2, col=1)
    fig.update_yaxes(range=[0, 1.05], tickmode="auto", showgrid=False, title_text="tau", row=2, col=1, secondary_y=True)
    fig.update_yaxes(title_text="objective %", row=2, col=1, secondary_y=False)
    return f'<div class="chart">{plot_div(fig, div_id, "520px")}</div>'


def section_training(data: ReportData) -> str:
    trainings = [t for s in data.sources for t in s.trainings]
    if not trainings:
        return ""
    out = [
        '<section id="training"><h2>Training (beliefs, tau, objective)</h2>',
        '<p class="note">From <code>episodes.jsonl</code> and <code>beliefs.json</code> of '
        "<code>fincon train</code>: per episode the objective (sum of daily log returns, %), tau (share of days "
        "two consecutive episodes took the same action; the belief step's learning rate is 1 - tau), the "
        "belief edits and the weights in force; then the learned beliefs.</p>",
    ]
    for i, t in enumerate(trainings):
        out.append(
            f"<h3>{esc(t.label)}"
            + (f' <span class="muted">({esc(str(t.status))})</span>' if t.status else "")
            + "</h3>"
        )
        if t.episodes:
            head = [
                "episode",
                "objective %",
                "tau",
                "CR %",
                "Sharpe",
                "MDD %",
                "days",
                "alerts",
                "beliefs",
                "model calls",
                "tokens",
                "cost $",
            ]
            rows = [
                [
                    num(r.get("episode")),
                    num(r.get("objective")),
                    num(r.get("tau")),
                    num(r.get("cr_pct")),
                    num(r.get("sharpe")),
                    num(r.get("mdd_pct")),
                    num(r.get("days")),
                    num(r.get("alerts")),
                    f"v{r.get('beliefs_before', '?')} -> v{r.get('beliefs_after', '?')}",
                    num(r.get("team_model_calls")),
                    num(r.get("llm_tokens")),
                    num(r.get("llm_cost_usd"), "{:.4f}"),
                ]
                for r in t.episodes
            ]
            out.append(table(head, rows))
            out.append(_training_chart(t, f"training-{i + 1}"))
            updates = []
            for r in t.episodes:
                u = r.get("update")
                if not isinstance(u, dict):
                    continue
                lines = [
                    f"<h4>episode {esc(num(r.get('episode')))}: better episode {esc(num(u.get('better')))}, "
                    f"worse {esc(num(u.get('worse')))}, tau {esc(num(u.get('tau')))}, rate "
                    f"{esc(num(u.get('rate')))}, via {esc(str(u.get('via', '')))}, beliefs "
                    f"v{esc(num(u.get('beliefs_version')))}</h4>"
                ]
                if u.get("meta"):
                    lines.append(f'<p class="note">{esc(str(u["meta"]))}</p>')
                edits = u.get("edits") if isinstance(u.get("edits"), dict) else {}
                if edits:
                    lines.append(
                        table(
                            ["perspective", "text before", "text after", "edit size", "weight"],
                            [
                                [
                                    k,
                                    e.get("before", ""),
                                    e.get("after", ""),
                                    num(e.get("size")),
                                    f"{num(e.get('weight_before'))} -> {num(e.get('weight_after'))}",
                                ]
                                for k, e in sorted(edits.items())
                                if isinstance(e, dict)
                            ],
                            text_cols=[1, 2],
                        )
                    )
                else:
                    lines.append('<p class="note">no belief text edited</p>')
                w = u.get("weights") if isinstance(u.get("weights"), dict) else {}
                before, after = w.get("before") or {}, w.get("after") or {}
                if before or after:
                    lines.append(
                        table(
                            ["rules weight", "before", "after"],
                            [[k, num(before.get(k)), num(after.get(k))] for k in sorted(set(before) | set(after))],
                        )
                    )
                if u.get("prompts_changed") or u.get("reached"):
                    lines.append(
                        f'<p class="note">prompts changed: '
                        f"{esc(', '.join(map(str, u.get('prompts_changed', u.get('reached')))))}</p>"
                    )
                if u.get("weight_changed"):
                    lines.append(
                        f'<p class="note">rules weights changed: {esc(", ".join(map(str, u["weight_changed"])))}</p>'
                    )
                updates.append("\n".join(lines))
            if updates:
                out.append(f"<details><summary>belief updates ({len(updates)})</summary>{''.join(updates)}</details>")
        b = t.beliefs
        if b:
            ps = b.get("perspectives") if isinstance(b.get("perspectives"), dict) else {}
            out.append(f"<h4>learned beliefs (beliefs.json, version {esc(num(b.get('version')))})</h4>")
            out.append(
                table(
                    ["perspective", "weight", "text"],
                    [[k, num((p or {}).get("weight")), (p or {}).get("text", "") or "(empty)"] for k, p in ps.items()],
                    text_cols=[2],
                )
            )
            refl = b.get("reflections") if isinstance(b.get("reflections"), list) else []
            if refl:
                out.append(
                    f"<details><summary>{len(refl)} reflection(s) carried to the test stage</summary>"
                    + table(
                        ["day", "reflection"],
                        [[x.get("day", ""), x.get("text", "")] for x in refl if isinstance(x, dict)],
                        text_cols=[1],
                    )
                    + "</details>"
                )
    out.append("</section>")
    return "\n".join(out)


# -- the paper's comparison -------------------------------------------------------


def section_paper(data: ReportData) -> str:
    """Each ``--preset fincon-paper`` directory's blocks: fincon's figures beside the paper's
    (workflow.tables.PAPER, the table paper.md prints)."""
    if not data.papers:
        return ""

    out = ['<section id="paper"><h2>The paper\'s comparison</h2>']
    for path, doc in data.papers:
        out.append(f'<h3>{esc(path.name)} <span class="muted">({esc(str(doc.get("paper", "")))})</span></h3>')
        for block in (doc.get("blocks") or {}).values():
            tickers = tuple(block.get("tickers") or ())
            key = tickers[0] if len(tickers) == 1 else tickers
            out.append(f"<h4>{esc(label(key))}</h4>")
            rows = block_rows(key, block.get("fincon") or {}, block.get("paper_published"))
            heads, cells, text = paper_block(rows, eq5=isinstance(key, str))
            out.append(table(heads, cells, text_cols=text))
            known = knowledge_line(block.get("model_knowledge") or {})
            if known:
                out.append(f'<p class="note">{esc(known)}</p>')
        if doc.get("differs"):
            out.append(f'<p class="note">{esc(str(doc["differs"]))}</p>')
    out.append("</section>")
    return "\n".join(out)


# -- experiment -------------------------------------------------------------------


def section_experiment(data: ReportData) -> str:
    exps = [s.experiment for s in data.sources if s.experiment is not None]
    if not exps:
        return ""
    out = ['<section id="experiment"><h2>Experiment</h2>']
    for e in exps:
        res = e.results
        w = lambda k: (res.get(k) or {}) if isinstance(res.get(k), dict) else {}  # noqa: E731
        out.append(
            f"<h3>{esc(e.label)}"
            + (f' <span class="muted">({esc(str(e.status))})</span>' if e.status else "")
            + "</h3>"
        )
        out.append(
            f'<p class="note">{esc(", ".join(map(str, res.get("tickers") or [])))}; train '
            f"{esc(str(w('train').get('start', '?')))}..{esc(str(w('train').get('end', '?')))}, test "
            f"{esc(str(w('test').get('start', '?')))}..{esc(str(w('test').get('end', '?')))}; "
            f"{esc(num(res.get('repeats')))} repeat(s) of {esc(num(res.get('episodes')))} episode(s), brain "
            f"{esc(str(res.get('brain', '?')))}; {esc(str(res.get('returns', '')))}</p>"
        )
        heads, cells, text = experiment_table(res)
        if cells:
            out.append(table(heads, cells, text_cols=text))
            out.append(
                '<p class="note">* best baseline by Sharpe on the test window; p: two-sided Wilcoxon '
                "signed-rank test of the median run's daily log returns against it; calls/day: model calls "
                "(cache hits included); differs %: test days whose target weights differ from the plain fincon "
                "team's.</p>"
            )
            out += [
                f'<p class="note">FLAG: {esc(f)}</p>' for f in [*median_optimizer_flags(res), *identical_flags(res)]
            ]
        out.append(placebo_table(res, PLACEBO_RUN))
        sig = res.get("significance") if isinstance(res.get("significance"), dict) else {}
        if sig:
            out.append(
                significance_table(sig.get("summary") or [], f"the test window's {sig.get('days')} daily returns")
            )
        units = res.get("runs") if isinstance(res.get("runs"), dict) else {}
        if units:
            out.append(
                "<details><summary>every run</summary>"
                + table(
                    ["unit", "ablation", "repeat", "CR %", "Sharpe", "MDD %", "training objectives"],
                    [
                        [
                            u,
                            m.get("ablation", ""),
                            num(m.get("repeat")),
                            num(m.get("cr_pct")),
                            num(m.get("sharpe")),
                            num(m.get("mdd_pct")),
                            ", ".join(num(x, "{:.2f}") for x in (m.get("train_objectives") or [])),
                        ]
                        for u, m in units.items()
                        if isinstance(m, dict)
                    ],
                )
                + "</details>"
            )
    out.append("</section>")
    return "\n".join(out)
