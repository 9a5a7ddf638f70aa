"""Put first on PYTHONPATH by `spyglass run`, so that each Python process the profiled
program starts (multiprocessing's spawn and forkserver workers, subprocesses running
python) profiles itself too. Any other sitecustomize still runs."""


def _spyglass_bootstrap() -> None:
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    # The process sees the sys.path it would have had without us.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    this = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401  the next one, if any
    except ImportError:
        if this is not None:
            sys.modules["sitecustomize"] = this
    config = os.environ.get("SPYGLASS_CHILD_CONFIG")  # children.CHILD_CONFIG_ENV
    if not config or not os.path.exists(config):
        return
    try:
        import json

        with open(config, encoding="utf-8") as f:
            settings = json.load(f)
        if list(sys.version_info[:2]) != settings["python"]:
            return  # another interpreter: our native core is built for the run's only
        if settings["package_parent"] not in sys.path:
            sys.path.append(settings["package_parent"])
            try:
                import spyglass.runtime.children as children
            finally:
                sys.path.remove(settings["package_parent"])
        else:
            import spyglass.runtime.children as children
        children.activate_child()
    except Exception as e:  # never break the program over its profile
        print(f"spyglass: warning: process {os.getpid()} is not profiled: {e}", file=sys.stderr)


_spyglass_bootstrap()
del _spyglass_bootstrap
