"""How far a long command is and how long the rest should take, in one line of text."""

from __future__ import annotations


def clock(seconds: float) -> str:
    """1:05, 12:00, 1:02:03."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def estimate(done: int, total: int, elapsed: float) -> str:
    """`[done/total, elapsed 1:05, about 2:10 left]`: the rest at the mean pace so far (tasks
    differ in cost, so it is an estimate; it sharpens as more are done)."""
    shown = f"[{done}/{total}, elapsed {clock(elapsed)}"
    if 0 < done < total:
        shown += f", about {clock(elapsed / done * (total - done))} left"
    return shown + "]"
