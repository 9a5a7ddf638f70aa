"""Type stub of the extension module built from src/native/bindings/module.cpp."""

VERSION: str
SCHEMA_VERSION: int
FORMAT: str
MAX_STACK_DEPTH: int
DEFAULT_INTERVAL_S: float
MIN_INTERVAL_S: float
MAX_INTERVAL_S: float
DEFAULT_MEMORY_WINDOW: int
MIN_MEMORY_WINDOW: int
MAX_MEMORY_WINDOW: int
LINE_TIMELINE_POINTS: int
RUN_TIMELINE_POINTS: int

def memory_totals() -> dict[int, dict[str, int]]: ...
def recover_journal(path: str) -> str: ...
def die_with_parent() -> bool: ...
def note_exit_status(path: str) -> bool: ...
def thread_started(target: object = None) -> None: ...
def thread_exiting() -> None: ...

class FilterConfig:
    program_paths: list[str]
    library_prefixes: list[str]
    internal_prefixes: list[str]
    only: list[str]
    exclude: list[str]
    pseudo_files: list[str]
    profile_all: bool
    functions: list[tuple[str, int]]
    def __init__(self) -> None: ...
    def is_profiled_file(self, file: str) -> bool: ...

class Profiler:
    def __init__(self) -> None: ...
    def start(
        self,
        interval_s: float,
        call_opcodes: list[int],
        memory: bool = False,
        memory_window: int = ...,
        copy_window: int = 0,
        scope: FilterConfig | None = None,
        journal_path: str = "",
        journal_meta: str = "{}",
    ) -> None: ...
    def stop(self) -> None: ...
    @property
    def running(self) -> bool: ...
    @property
    def abandoned(self) -> bool: ...
    @property
    def started_at(self) -> float: ...
    @property
    def elapsed_s(self) -> float: ...
    def build(self, filter: FilterConfig, thread_names: dict[int, str]) -> list[str]: ...
    def to_json(self, meta_members: str, sources: dict[str, list[str]]) -> str: ...
