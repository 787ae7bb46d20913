"""Command-line interface. Each sub-command lives in its own module and
exposes ``register(subparsers)``; :mod:`fincon.cli.main` wires them up."""
