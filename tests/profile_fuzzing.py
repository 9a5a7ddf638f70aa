"""Generated profiles, good and hostile, and the one rule every command must keep with
them (issue 13, item 6): shared by the short run in tests/unit/test_fuzz_profiles.py and
the long one in bench/fuzz_profiles.py.

The rule: `view` in every format, `merge` and `diff` either succeed, or print exactly one
line ("spyglass: error: ...") and exit with status 2: never a traceback, never an
internal error, never a partial or emptied output file, never a temporary file left
behind. A profile that validation accepts must render in every format. Text outputs
carry no raw control character.

Profiles come from two sources:
- the shipped JSON Schema through hypothesis-jsonschema (made stricter so that
  generation is fast: every known key required, small collections, and the memory keys
  all there or all absent), which explores what validation accepts;
- the checked-in fixtures with a few hand-made mutations each: huge, infinite, negative
  and long-integer numbers, frame indexes past the table, deep nesting, wrong types,
  missing and unknown keys, control characters and odd Unicode in strings and keys.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
from pathlib import Path
from typing import Any, Callable

from hypothesis import strategies as st

TESTS_DIR = Path(__file__).resolve().parent
FIXTURES = TESTS_DIR / "fixtures"
SCHEMA_FILE = TESTS_DIR.parent / "src" / "spyglass" / "schema" / "profile-v3.schema.json"
SEEDS = ["cpu_simple.json", "cpu_multifile.json", "mem_simple.json"]
REFERENCE = FIXTURES / "cpu_simple.json"
VIEW_FORMATS = ["terminal", "json", "html", "collapsed", "speedscope", "pstats"]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SGR = re.compile("\x1b\\[[0-9;]*m")
OLD = b"OLD CONTENT\n"

# A value written into the JSON text as it is: what json.dumps cannot write.
RAW_PREFIX = "\ue000raw:"


# --------------------------------------------------------------------------- schema


def _strict(node: Any, *, small: int) -> Any:
    """A copy of a schema node where objects require every property they name and
    arrays hold at most `small` items: hypothesis-jsonschema then generates directly
    instead of filtering."""
    if isinstance(node, list):
        return [_strict(n, small=small) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v, small=small) for k, v in node.items()}
    if out.get("type") == "object" and "properties" in out:
        out["required"] = sorted(out["properties"])
        if not isinstance(out.get("additionalProperties"), dict):
            out["additionalProperties"] = False
    if out.get("type") == "object" and isinstance(out.get("additionalProperties"), dict):
        out["maxProperties"] = min(out.get("maxProperties", small), small)
    if out.get("type") == "array":
        out["maxItems"] = min(out.get("maxItems", small), small)
    return out


def schema_variants() -> list[dict[str, Any]]:
    """The shipped schema as two strict schemas: without and with memory figures."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    schema.pop("if", None)
    then = schema.pop("then", {})
    variants = []
    for memory in (False, True):
        s = copy.deepcopy(schema)
        s["properties"]["memory_profiled"] = {"const": memory}
        if memory:
            # Nested objects need no more: the strict copy requires every property they name.
            s["required"] = sorted(set(s["required"]) | set(then.get("required", [])))
        else:  # the memory keys out: a profile of CPU only
            keep = set(s["required"]) | {"processes"}
            s["properties"] = {k: v for k, v in s["properties"].items() if k in keep}
        variants.append(_strict(s, small=3))
    return variants


def schema_profiles() -> st.SearchStrategy[Any] | None:
    """Profiles the schema describes; None when hypothesis-jsonschema is not installed."""
    try:
        from hypothesis_jsonschema import from_schema
    except ImportError:
        return None
    return st.one_of([from_schema(s) for s in schema_variants()])


# --------------------------------------------------------------------------- mutations

_TEXT_POOL = [
    "\x1b]0;title\x07",
    "\x1b]52;c;cHduZWQ=\x07",
    "\x1b[2J\x1b[H",
    "\x9b31m",
    "\x00",
    "\r\n\t\x0b\x0c",
    "\u202egnp.exe",
    "\ud800",
    "\udfff\ud800",
    "e\u0301\u0301\u0301",
    "😀" * 3,
    "\u2028\u2029",
    "\ufeff",
    "<script>alert(1)</script>",
    ";;;",
    "/",
    "",
    "x" * 5000,
]

_NUMBER_POOL = [
    1e308,
    -1e308,
    1.7976931348623157e308,
    1e16,
    1e15,
    -1,
    -1e-9,
    -0.0,
    0,
    5e-324,
    2**63 - 1,
    2**64,
    2**64 + 1,
    -(2**63),
    f"{RAW_PREFIX}Infinity",
    f"{RAW_PREFIX}-Infinity",
    f"{RAW_PREFIX}NaN",
    f"{RAW_PREFIX}1e400",
    f"{RAW_PREFIX}-1e400",
    f"{RAW_PREFIX}{'9' * 5000}",
    f"{RAW_PREFIX}-{'9' * 4400}",
    f"{RAW_PREFIX}{'1' * 30}",
]

_PLAIN_POOL: list[Any] = [None, True, False, [], {}, [1, 2], {"x": 1}]
_OPS = ["value", "number", "scale", "key", "delete", "extra", "frame", "empty"]
_OPS += ["text", "text", "fine", "fine", "fine"]  # these mostly keep the profile valid


class Chooser:
    """Where the mutations take their choices from: Hypothesis (which shrinks a failure
    to a small case) or a plain random generator (many times faster, for long runs)."""

    def pick(self, seq: list[Any]) -> Any:
        raise NotImplementedError

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def text(self) -> str:
        raise NotImplementedError

    def any_int(self) -> int:
        raise NotImplementedError

    def any_float(self) -> float:
        raise NotImplementedError


class DrawChooser(Chooser):
    def __init__(self, draw: Callable[..., Any]) -> None:
        self.draw = draw

    def pick(self, seq: list[Any]) -> Any:
        return self.draw(st.sampled_from(seq))

    def integer(self, lo: int, hi: int) -> int:
        return int(self.draw(st.integers(lo, hi)))

    def text(self) -> str:
        return str(self.draw(st.text(max_size=20)))

    def any_int(self) -> int:
        return int(self.draw(st.integers()))

    def any_float(self) -> float:
        return float(self.draw(st.floats()))


class RandomChooser(Chooser):
    def __init__(self, rng: Any) -> None:
        self.rng = rng

    def pick(self, seq: list[Any]) -> Any:
        return self.rng.choice(seq)

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.randint(lo, hi))

    def text(self) -> str:
        top = self.rng.choice([0x7F, 0xFF, 0x3000, 0x10FFFF])
        return "".join(chr(self.rng.randint(0, top)) for _ in range(self.rng.randint(0, 20)))

    def any_int(self) -> int:
        return int(self.rng.getrandbits(self.rng.choice([8, 32, 64, 80]))) - (1 << 7)

    def any_float(self) -> float:
        import struct

        return float(struct.unpack("<d", self.rng.getrandbits(64).to_bytes(8, "little"))[0])


def _nested(depth: int, kind: str) -> str:
    inner = "[" * depth + "]" * depth if kind == "list" else '{"a":' * depth + "1" + "}" * depth
    return RAW_PREFIX + inner


def _odd_text(c: Chooser) -> str:
    return str(c.pick(_TEXT_POOL)) if c.integer(0, 1) else c.text()


def _odd_value(c: Chooser) -> Any:
    kind = c.integer(0, 5)
    if kind == 0:
        return c.pick(_NUMBER_POOL)
    if kind == 1:
        return _odd_text(c)
    if kind == 2:
        return copy.deepcopy(c.pick(_PLAIN_POOL))
    if kind == 3:
        return _nested(c.pick([3, 70, 1000, 50000]), c.pick(["list", "dict"]))
    return c.any_int() if kind == 4 else c.any_float()


def _locations(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of the document, iteratively."""
    found: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in list(items):
            found.append((node, k))
            if isinstance(v, (dict, list)):
                stack.append(v)
    return found


def mutate(c: Chooser, doc: Any) -> Any:
    """`doc` (changed in place) with one mutation chosen by `c`."""
    locations = _locations(doc)
    if not locations:
        return doc
    container, key = c.pick(locations)
    op = c.pick(_OPS)
    value = container[key]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if op == "fine" and number:
        # Extreme but allowed: renderers must cope with what validation lets through.
        pool = [0, 1, 2**53, 10**15] if isinstance(value, int) else [0.0, 5e-324, 1e-9, 1e15]
        container[key] = c.pick(pool)
    elif op == "fine" and isinstance(value, str):
        container[key] = _odd_text(c)
    elif op == "value":
        container[key] = _odd_value(c)
    elif op == "number" or (op == "scale" and not number):
        container[key] = c.pick(_NUMBER_POOL)
    elif op == "scale":
        container[key] = value * c.pick([1e10, 1e100, 1e300, -1])
    elif op == "text":
        extra = _odd_text(c)
        container[key] = f"{value}{extra}" if isinstance(value, str) else extra
    elif op == "key" and isinstance(container, dict):
        container[f"{key}{_odd_text(c)}"] = container.pop(key)
    elif op == "delete" and isinstance(container, dict):
        del container[key]
    elif op == "delete":
        container.pop(key)
    elif op == "extra" and isinstance(container, dict):
        container[_odd_text(c)] = _odd_value(c)
    elif op == "frame" and isinstance(doc, dict) and isinstance(doc.get("stacks"), list):
        stack = c.pick(doc["stacks"]) if doc["stacks"] else None
        if isinstance(stack, dict) and isinstance(stack.get("frames"), list) and stack["frames"]:
            i = c.integer(0, len(stack["frames"]) - 1)
            table = doc.get("frames")
            n = len(table) if isinstance(table, list) else 0
            stack["frames"][i] = c.pick([n, n + 1, 10**9, -1, 2**64])
    elif op == "empty" and isinstance(value, (list, dict)):
        container[key] = type(value)()
    return doc


_FIXTURE_TEXTS = [(FIXTURES / name).read_text(encoding="utf-8") for name in SEEDS]


@st.composite
def mutated_profiles(draw: Callable[..., Any], pool: list[str] | None = None) -> Any:
    """A fixture (or a document of `pool`, JSON texts) with one to three mutations."""
    return random_profile(DrawChooser(draw), pool)


def random_profile(c: Chooser, pool: list[str] | None = None) -> Any:
    """A fixture (or a document of `pool`, instead) with one to three mutations chosen by
    `c`."""
    doc = json.loads(c.pick(pool or _FIXTURE_TEXTS))
    for _ in range(c.integer(1, 3)):
        doc = mutate(c, doc)
    return doc


def profiles(pool: list[str] | None = None, *, schema: bool = True) -> st.SearchStrategy[Any]:
    """Every source of profiles, hostile mutations weighted most. Generating from the
    schema is slow (about 0.15 s a document): a long run generates a `pool` of schema
    documents once and mutates those instead (schema=False)."""
    sources = [mutated_profiles(pool), mutated_profiles(pool), mutated_profiles(pool)]
    from_schema = schema_profiles() if schema else None
    if from_schema is not None:
        sources.append(from_schema)
    return st.one_of(sources)


def to_text(doc: Any) -> str:
    """The JSON text of a generated document, raw values written in."""
    text = json.dumps(doc, ensure_ascii=False)
    if RAW_PREFIX not in text:
        return text
    return re.sub(
        '"' + re.escape(RAW_PREFIX) + r'((?:[^"\\]|\\.)*)"',
        lambda m: json.loads(f'"{m.group(1)}"'),
        text,
    )


# --------------------------------------------------------------------------- the rule


def _call(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse and the like: a status, still no traceback
            code = e.code if isinstance(e.code, int) else 2
        except BaseException as e:
            raise AssertionError(f"{argv}: {type(e).__name__} escaped: {e!r}") from e
    return code, out.getvalue(), err.getvalue()


def _commands(src: str, work: Path) -> list[tuple[str, list[str], Path | None]]:
    ref = str(REFERENCE)
    found: list[tuple[str, list[str], Path | None]] = []
    for fmt in VIEW_FORMATS:
        out = work / f"view.{fmt}"
        found.append(("view", ["--format", fmt, "--min-share", "0", "-o", str(out), src], out))
    found.append(("view", ["--top", "3", "--collapse-threads", src], None))
    found.append(("view", ["--tree", "--min-share", "0", "--no-group-threads", src], None))
    found.append(("merge", [src, ref, "-o", str(work / "merged.json")], work / "merged.json"))
    found.append(("diff", ["--threshold-sigma", "0", ref, src], None))
    out = work / "diff.json"
    found.append(("diff", ["--format", "json", "-o", str(out), src, ref], out))
    out = work / "diff.html"
    found.append(("diff", ["--format", "html", "-o", str(out), ref, src], out))
    return found


def check(text: str, work: Path) -> bool:
    """Runs every command on the profile `text` in the empty directory `work`; raises
    AssertionError naming the first broken rule. True when validation accepted it."""
    from spyglass.cli import diff, merge, view
    from spyglass.profile_model.io import ProfileError, load_profile

    src = work / "input.json"
    src.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_profile(src)
        accepted = True
    except ProfileError:
        accepted = False
    mains = {"view": view.main, "merge": merge.main, "diff": diff.main}
    for name, argv, out in _commands(str(src), work):
        if out is not None:
            out.write_bytes(OLD)
        code, stdout, stderr = _call(mains[name], argv)
        what = f"spyglass {name} {' '.join(argv)}"
        assert "Traceback" not in stderr and "internal error" not in stderr, f"{what}: {stderr}"
        assert not RAW.search(SGR.sub("", stdout + stderr)), f"{what}: raw control characters"
        leftovers = [p.name for p in work.iterdir() if p.name.endswith(".tmp")]
        assert not leftovers, f"{what}: left {leftovers}"
        if code == 0:
            assert out is None or out.read_bytes() != OLD, f"{what}: exit 0, nothing written"
            continue
        assert not accepted, f"{what}: accepted, yet: {stderr}"
        assert code == 2, f"{what}: exit status {code}"
        assert stderr.startswith("spyglass: error: ") and stderr.count("\n") == 1, (
            f"{what}: not one line: {stderr!r}"
        )
        assert out is None or out.read_bytes() == OLD, f"{what}: failed, yet changed {out.name}"
    for p in work.iterdir():
        p.unlink()
    return accepted


def fresh_dir(base: Path) -> Path:
    work = base / f"w{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    for p in work.iterdir():
        p.unlink()
    return work


__all__ = [
    "RandomChooser",
    "check",
    "fresh_dir",
    "mutated_profiles",
    "profiles",
    "random_profile",
    "schema_profiles",
    "to_text",
]
