"""Inspect AI's entry point for this package: importing it registers the `arrivalbench/arrivalbench` task."""

from arrivalbench.agent.inspect_task import arrivalbench

__all__ = ["arrivalbench"]
