"""`python -m evalrun` is the `evalrun` command."""

from evalrun.cli import main

main()
