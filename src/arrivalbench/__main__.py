"""`python -m arrivalbench`: the console script."""

from arrivalbench.cli import main

main()
