"""What the command line prints of text it did not write: scripts, engine messages, table values,
task ids, arm names, file names.

Such text is untrusted. Printed as it comes, an ESC sequence in an engine message can set the
clipboard (OSC 52), clear the screen or plant a hyperlink (OSC 8), and Rich markup in a value
(`[bold]`, `[/]`, `[link=…]`) restyles the output or stops it with a MarkupError. So the CLI
never prints a markup string with data in it: it prints `text(...)`, a Rich `Text` whose parts
are taken character for character (no markup, no emoji codes) after `visible` has turned every
control character into a visible escape (ESC is shown as the four characters `\\x1b`). This is
display only: verdict records, JSON output and stored files keep the engine's own words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

_LINE_ENDS = frozenset((0x09, 0x0A))
"""Tab and newline: layout, kept as they are unless a caller asks for one line."""

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""Bidirectional embeddings, overrides and isolates: they reorder how the rest of a line reads."""

_ESCAPES = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))},
    **{c: f"\\u{c:04x}" for c in _BIDI},
}
_MULTILINE = {c: e for c, e in _ESCAPES.items() if c not in _LINE_ENDS}


def visible(value: object, *, one_line: bool = False) -> str:
    """`value` as text with every C0 control (but tab and newline, unless `one_line`), DEL, C1
    control and bidirectional override replaced by its escape, so a terminal shows it and obeys
    none of it."""
    return str(value).translate(_ESCAPES if one_line else _MULTILINE)


def text(*parts: str | tuple[str, str], one_line: bool = False) -> Text:
    """A Rich `Text` of the parts in order, each shown literally through `visible`; a part
    `(string, style)` is styled (the style is the CLI's own, never the data's)."""
    from rich.text import Text

    out = Text()
    for part in parts:
        value, style = part if isinstance(part, tuple) else (part, "")
        out.append(visible(value, one_line=one_line), style=style)
    return out
