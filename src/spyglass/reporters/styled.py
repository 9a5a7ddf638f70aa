"""Styled text for the terminal reports, and the console that writes it.

The reports need little: runs of text with a style each (bold, dim, one of the 16 ANSI
colours), their width in terminal cells, cutting a line to a width, and writing lines with
or without colour. rich does all that and much more, at about 50 ms of import: a cost that
every `spyglass run` paid at its end, for an empty script most of its start-up. This module
does only what the reports use, with rich's semantics where the reports relied on them
(cell widths, tab stops, the ellipsis), so the text is the same character for character.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs the end of every run milliseconds
if TYPE_CHECKING:
    from typing import IO, Literal

    OverflowMethod = Literal["crop", "fold", "ellipsis"]

_SGR_ATTRIBUTES = {"bold": "1", "dim": "2", "italic": "3", "underline": "4", "reverse": "7"}
_COLOURS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
_SGR_COLOURS = {
    **{name: str(30 + i) for i, name in enumerate(_COLOURS)},
    **{f"bright_{name}": str(90 + i) for i, name in enumerate(_COLOURS)},
}


def _sgr(style: str) -> str:
    """The SGR parameters of a style such as "bold red" ("1;31"); unknown words are
    ignored rather than raised on, since a wrong colour must never cost a report."""
    codes: list[str] = []
    colour = ""
    for word in style.split():
        if word in _SGR_ATTRIBUTES:
            codes.append(_SGR_ATTRIBUTES[word])
        elif word in _SGR_COLOURS:
            colour = _SGR_COLOURS[word]  # the last colour named wins
    if colour:
        codes.append(colour)
    return ";".join(codes)


def _char_cells(c: str) -> int:
    code = ord(c)
    if code < 32 or 0x7F <= code < 0xA0:
        return 0  # controls (a tab before it is expanded) take no cell
    if code < 0x300 or 0x2500 <= code < 0x25A0 or c in "…⋮":
        return 1  # and the box-drawing and block glyphs the reports draw with
    import unicodedata  # here: a report of ASCII names does without its load

    if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def cell_len(text: str) -> int:
    """How many terminal cells `text` takes (wide East Asian characters two, combining
    marks and controls none)."""
    if text.isascii():
        if text.isprintable():
            return len(text)
        return sum(1 for c in text if 32 <= ord(c) < 0x7F)
    return sum(_char_cells(c) for c in text)


def _cut_to_cells(text: str, cells: int) -> str:
    """The longest start of `text` that fits in `cells` cells, padded with a space where a
    wide character would have straddled the edge."""
    if cells <= 0:
        return ""
    if text.isascii() and text.isprintable():
        return text[:cells]
    used = 0
    for i, c in enumerate(text):
        w = _char_cells(c)
        if used + w > cells:
            return text[:i] + " " * (cells - used)
        used += w
    return text


class Text:
    """A line of text made of runs, each with a style, over a style for the whole."""

    __slots__ = ("_runs", "style")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.style = style
        self._runs: list[tuple[str, str]] = [(text, "")] if text else []

    @property
    def plain(self) -> str:
        return "".join(run for run, _ in self._runs)

    @property
    def cell_len(self) -> int:
        return sum(cell_len(run) for run, _ in self._runs)

    def __len__(self) -> int:
        return sum(len(run) for run, _ in self._runs)

    def __str__(self) -> str:
        return self.plain

    def append(self, text: str | Text, style: str = "") -> Text:
        if isinstance(text, Text):
            return self.append_text(text)
        if text:
            self._runs.append((text, style))
        return self

    def append_text(self, text: Text) -> Text:
        for run, style in text._runs:
            joined = f"{text.style} {style}".strip() if text.style else style
            self._runs.append((run, joined))
        return self

    def join(self, texts: list[Text]) -> Text:
        """The texts one after the other with this text between each two."""
        joined = Text(style=self.style)
        for i, text in enumerate(texts):
            if i:
                joined.append_text(self)
            joined.append_text(text)
        return joined

    def copy(self) -> Text:
        twin = Text(style=self.style)
        twin._runs = list(self._runs)
        return twin

    def truncate(self, max_width: int, *, overflow: OverflowMethod = "fold") -> None:
        """Cut the text to `max_width` cells; with "ellipsis" its last cell becomes "…"."""
        if self.cell_len <= max_width:
            return
        if overflow == "ellipsis":
            self._keep_cells(max_width - 1)
            self._runs.append(("…", self._runs[-1][1] if self._runs else ""))
        else:
            self._keep_cells(max_width)

    def _keep_cells(self, cells: int) -> None:
        kept: list[tuple[str, str]] = []
        for run, style in self._runs:
            if cells <= 0:
                break
            w = cell_len(run)
            if w > cells:
                run = _cut_to_cells(run, cells)
                w = cells
            kept.append((run, style))
            cells -= w
        self._runs = kept

    def expand_tabs(self, tab_size: int) -> None:
        """Tabs as spaces up to the next multiple of `tab_size` cells from the start."""
        if not any("\t" in run for run, _ in self._runs):
            return
        column = 0
        expanded: list[tuple[str, str]] = []
        for run, style in self._runs:
            pieces: list[str] = []
            for part_no, part in enumerate(run.split("\t")):
                if part_no:
                    spaces = tab_size - column % tab_size
                    pieces.append(" " * spaces)
                    column += spaces
                pieces.append(part)
                column += cell_len(part)
            expanded.append(("".join(pieces), style))
        self._runs = expanded

    def render(self, color: bool) -> str:
        if not color:
            return self.plain
        out: list[str] = []
        for run, style in self._runs:
            sgr = _sgr(f"{self.style} {style}")
            out.append(f"\x1b[{sgr}m{run}\x1b[0m" if sgr else run)
        return "".join(out)


class Console:
    """Writes Text to a stream, one line each: cut to the width, or folded at it, or left
    whole for the terminal to wrap; in colour (ANSI SGR) or as plain text."""

    def __init__(self, file: IO[str], *, width: int | None, color: bool, tab_size: int = 4):
        self.file = file
        self.color = color
        self.tab_size = tab_size
        self.width = width if width is not None else _terminal_width(file)

    def print(
        self,
        text: Text,
        *,
        no_wrap: bool = False,
        overflow: OverflowMethod = "fold",
        crop: bool = True,
        soft_wrap: bool = False,
    ) -> None:
        line = text.copy()
        line.expand_tabs(self.tab_size)
        if soft_wrap:
            lines = [line]
        elif no_wrap or overflow != "fold":
            line.truncate(self.width, overflow=overflow)
            lines = [line]
        else:
            lines = _fold(line, self.width)
        if crop and not soft_wrap:
            for piece in lines:
                piece.truncate(self.width, overflow="crop")
        self.file.write("".join(piece.render(self.color) + "\n" for piece in lines))


def _fold(text: Text, width: int) -> list[Text]:
    """A line longer than `width` cells broken into lines of `width` cells."""
    if text.cell_len <= width:
        return [text]
    lines = [Text(style=text.style)]
    used = 0
    for run, style in text._runs:
        for c in run:
            w = _char_cells(c)
            if used + w > width and used > 0:
                lines.append(Text(style=text.style))
                used = 0
            lines[-1].append(c, style)
            used += w
    return lines


def _terminal_width(file: IO[str]) -> int:
    """The terminal's width (COLUMNS first, as terminals and shells set it), else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(file.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80


__all__ = ["Console", "Text", "cell_len"]
