"""The ``python -m mjvec`` command line (`mjvec.cli.commands`): list, info, rollout, bench."""

from mjvec.cli.commands import main

__all__ = ["main"]
