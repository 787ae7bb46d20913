"""Evaluations behind ``fincon eval``: each module builds a labelled set,
runs the team's parts on it and returns a table (``run``, then ``report``
for its text). Plain functions: :mod:`fincon.cli.eval` builds the parsers
and the model client."""
