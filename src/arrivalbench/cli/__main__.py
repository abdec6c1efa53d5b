"""`python -m arrivalbench.cli`: the console script."""

from arrivalbench.cli import main

main()
