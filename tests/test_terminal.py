"""The one sanitiser for untrusted text the CLI prints: control characters made visible, no markup."""

from __future__ import annotations

import io

from rich.console import Console

from arrivalbench.terminal import text, visible


def printed(*parts: str | tuple[str, str]) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None).print(text(*parts))
    return buffer.getvalue()


def test_regression_osc_52_in_a_message_reached_the_terminal() -> None:
    """An engine message carrying ESC ] 52 could set the user's clipboard."""
    assert visible("\x1b]52;c;eA==\x07") == "\\x1b]52;c;eA==\\x07"


def test_every_control_character_is_shown_and_none_is_obeyed() -> None:
    assert visible("\x1b[2J") == "\\x1b[2J"  # clear screen
    assert visible("\x1b]8;;http://e\x1b\\x") == "\\x1b]8;;http://e\\x1b\\x"  # OSC 8 hyperlink
    assert visible("a\x00b\rc\x7fd\x9be\x85") == "a\\x00b\\x0dc\\x7fd\\x9be\\x85"  # C0, DEL, C1
    assert visible("\u202eevil") == "\\u202eevil"  # a right-to-left override
    assert all(ord(c) >= 0x20 for c in visible("".join(map(chr, range(0xA0))), one_line=True))


def test_newline_and_tab_are_layout_unless_one_line_is_asked() -> None:
    assert visible("a\nb\tc") == "a\nb\tc"
    assert visible("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"
    assert visible("é ✓ 日本") == "é ✓ 日本"  # printable text is left alone


def test_regression_rich_markup_in_a_value_crashed_or_restyled_the_output() -> None:
    """`[/]` closing nothing raised MarkupError; `[link=…]` planted a hyperlink; `:warning:` an emoji."""
    shown = printed("[/] [bold]b[/bold] [link=http://e]l[/link] :warning: \\")
    assert shown == "[/] [bold]b[/bold] [link=http://e]l[/link] :warning: \\\n"


def test_a_styled_part_keeps_its_text_and_gets_the_clis_style() -> None:
    line = text("check: ", ("FAIL", "bold red"), " [1/2]")
    assert line.plain == "check: FAIL [1/2]"
    assert [(s.start, s.end, str(s.style)) for s in line.spans] == [(7, 11, "bold red")]
