"""The contract every reporter keeps.

A reporter turns one document (a profile; for ``spyglass diff``, a comparison) into one
output. It says, as class attributes, its ``name``, the ``extensions`` of its files (the
first is the one it writes by default), whether its output is ``binary`` (bytes, such as
pstats) or text, and whether it is ``exact``: whether it carries the document's data as it
is, for a program to read (JSON, a page's data island, pstats), rather than as text for
people, which shows every control character of the data escaped (spyglass.safe_text) so
that a shared profile cannot send commands to a terminal. An exact text reporter whose
output is JSON keeps it printable the same way (``json_text_safe``).

Everything that shapes the output is given to the constructor (width, colour, thresholds,
where the profile was written); then

- ``render(doc)`` returns the whole output, ``str`` or ``bytes`` as ``binary`` says, made
  in memory, so a reporter that fails leaves nothing half-written;
- ``write(doc, target)`` writes it to a path (``-`` is standard output; a file is replaced
  whole, see spyglass.outfile) or to an open stream. A reporter whose output depends on the
  stream it goes to (the terminal report: its colours, width and glyphs) overrides
  ``write_stream``; the others write what ``render`` made.

Options a reporter does not know are refused by its constructor (TypeError).
"""

from __future__ import annotations

import abc
import os

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from typing import IO, Any, ClassVar, Generic, TypeVar, Union

    Doc = TypeVar("Doc")
    #: Where ``write`` puts the output: a path (``-``: standard output) or an open stream.
    Target = Union[str, "os.PathLike[str]", IO[Any]]

    class _Typed(Generic[Doc]):
        pass

else:
    Doc = object

    class _Typed:
        """At run time ``Reporter[Profile]`` is Reporter itself: what it says is for the
        type checker, and typing's Generic would cost every report its import."""

        def __class_getitem__(cls, item):
            return cls


class Reporter(abc.ABC, _Typed[Doc]):
    """One output format (see the module's documentation)."""

    name: ClassVar[str] = ""
    extensions: ClassVar[tuple[str, ...]] = ()
    binary: ClassVar[bool] = False
    exact: ClassVar[bool] = False

    @abc.abstractmethod
    def render(self, doc: Doc) -> str | bytes:
        """The whole output for ``doc``: bytes when ``binary``, else text."""

    def write(self, doc: Doc, target: Target) -> None:
        """Write the output for ``doc`` to ``target``: a path (``-``: standard output) or an
        open stream. Raises OSError (with the path as its filename) when it cannot."""
        if isinstance(target, (str, os.PathLike)):
            from spyglass.outfile import write_output

            write_output(target, self.render(doc))
        else:
            self.write_stream(doc, target)

    def write_stream(self, doc: Doc, out: IO[Any]) -> None:
        """Write the output for ``doc`` to the open stream ``out``: text to a text stream;
        bytes to a binary one, or to the binary stream under a text one (``out.buffer``).
        A closed pipe raises BrokenPipeError."""
        data = self.render(doc)
        if isinstance(data, str):
            out.write(data)
            out.flush()
            return
        buffer = getattr(out, "buffer", None)
        if buffer is None and not hasattr(out, "encoding"):
            buffer = out  # a binary stream itself
        if buffer is None:
            raise TypeError(f"the {self.name} format is binary: it needs a file, not text")
        out.flush()
        buffer.write(data)
        buffer.flush()


__all__ = ["Reporter"]
