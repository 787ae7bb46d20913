"""Evaluations behind ``fincon eval``: each module builds a labelled set,
runs the team's parts on it and prints a table."""
