"""gemmtune from Python: the command line and the files a deployment needs.

The package carries the gemmtune CLI and, when it was built with CUDA, the preload shim and the
CUPTI tracer. ``python -m gemmtune COMMAND ...`` (or the ``gemmtune`` script) runs the CLI:

    python -m gemmtune capture -o shapes.csv -- python3 serve.py
    python -m gemmtune tune shapes.csv -o tuned.db
    python -m gemmtune verify --db tuned.db -- python3 serve.py
    python -m gemmtune run --db tuned.db -- python3 serve.py

``deploy_env(db)`` gives the two variables ``run`` sets, for a subprocess of your own.
``gemmtune.grouped`` is the race ``tune`` runs in a torch process for grouped_mm keys (MoE experts).
"""
from ._cli import binary, deploy_env, main, preload_lib, trace_lib, version

__all__ = ["binary", "deploy_env", "main", "preload_lib", "trace_lib", "version"]
__version__ = version()
