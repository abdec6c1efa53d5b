"""Agents that write pipelines: prompts, the reply parser, the snapshot repair loop and generation.

Nothing here imports Inspect AI at module level; the Inspect adapter (inspect_model.py,
inspect_task.py) is loaded only when an Inspect model is asked for.
"""
