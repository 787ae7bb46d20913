"""The report's stylesheet and its one small script, inlined into every report.

Kept as Python strings (not package data files) so an installed wheel needs
nothing beyond the modules. The script does two things: clicking a day of a
decision timeline shows that day, and clicking a point of an agent team's
equity curve (or one of its CVaR alert markers) opens the same day.
"""

CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-soft: #f6f8fa; --accent: #0969da;
        --alert: #cf222e; }
* { box-sizing: border-box; }
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg);
       margin: 0 auto; max-width: 1280px; padding: 0 24px 48px; }
header { border-bottom: 1px solid var(--line); margin-bottom: 8px; }
section.failed { border: 2px solid var(--alert); padding: 4px 14px; margin: 12px 0; color: var(--alert); }
h1 { font-size: 26px; margin: 24px 0 4px; }
h2 { font-size: 21px; margin: 36px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 17px; margin: 24px 0 6px; }
h4 { font-size: 15px; margin: 0 0 6px; }
p.sub, p.note, .muted { color: var(--muted); }
p.note { font-size: 13px; margin: 4px 0; }
nav { font-size: 14px; margin: 8px 0 0; }
nav a { color: var(--accent); margin-right: 14px; text-decoration: none; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--muted); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px; text-align: right; white-space: nowrap; }
th { background: var(--bg-soft); font-weight: 600; }
th:first-child, td:first-child { text-align: left; position: sticky; left: 0; background: #fff; }
thead th:first-child { background: var(--bg-soft); }
td.text, th.text { text-align: left; white-space: normal; max-width: 640px; }
tr.total td { font-weight: 600; }
td.bad { color: var(--alert); }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--accent); }
.chart { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; }
.timeline { margin: 12px 0 24px; }
.tl-grid { display: grid; grid-template-columns: minmax(220px, 300px) 1fr; gap: 12px; align-items: start; }
ol.days { list-style: none; margin: 0; padding: 0; max-height: 75vh; overflow-y: auto;
          border: 1px solid var(--line); border-radius: 6px; }
ol.days li { border-bottom: 1px solid var(--line); }
button.day { all: unset; box-sizing: border-box; display: block; width: 100%; padding: 5px 10px; cursor: pointer;
             font-size: 13px; }
button.day:hover, button.day:focus-visible { background: var(--bg-soft); }
button.day[aria-pressed="true"] { background: #ddf4ff; }
button.day .d { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
button.day .flag { color: var(--alert); font-size: 12px; }
.detail { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; min-height: 120px; }
.detail pre { white-space: pre-wrap; font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
              margin: 0; }
.alert-line { color: var(--alert); font-weight: 600; }
footer { margin-top: 40px; border-top: 1px solid var(--line); padding-top: 8px; font-size: 12px;
         color: var(--muted); }
"""

JS = """
(function () {
  "use strict";
  function show(timeline, day) {
    var found = false;
    timeline.querySelectorAll("article.day-detail").forEach(function (a) {
      var on = a.getAttribute("data-day") === day;
      a.hidden = !on;
      if (on) { found = true; }
    });
    timeline.querySelectorAll("button.day").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-day") === day ? "true" : "false");
    });
    var placeholder = timeline.querySelector(".placeholder");
    if (placeholder) { placeholder.hidden = found; }
    return found;
  }
  document.querySelectorAll("div.timeline").forEach(function (timeline) {
    timeline.addEventListener("click", function (ev) {
      var b = ev.target.closest("button.day");
      if (b) { show(timeline, b.getAttribute("data-day")); }
    });
  });
  var chart = document.getElementById("equity-chart");
  if (chart && typeof chart.on === "function") {
    chart.on("plotly_click", function (ev) {
      var p = ev && ev.points && ev.points[0];
      if (!p || !p.data || !p.data.meta) { return; }
      var timeline = document.getElementById(p.data.meta);
      if (timeline && show(timeline, String(p.x).slice(0, 10))) {
        timeline.scrollIntoView({behavior: "smooth", block: "start"});
      }
    });
  }
})();
"""
