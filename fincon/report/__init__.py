"""``fincon report``: one self-contained HTML page for runs, comparisons,
trainings and experiments (see :mod:`fincon.report.html` for what it shows).

>>> from fincon.report import write_report
>>> write_report(["runs/demo"], "report.html")  # doctest: +SKIP
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.report.card import run_card as run_card
    from fincon.report.fallbacks import rules_flag as rules_flag
    from fincon.report.html import render as render
    from fincon.report.load import load_report_data as load_report_data, settings_apart as settings_apart
    from fincon.report.text import format_card as format_card
    from fincon.report.write import build_report as build_report, write_report as write_report

__getattr__, __dir__ = face(__name__, __file__)
