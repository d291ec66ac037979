"""Finding the files the package ships and running the gemmtune CLI.

The CLI is the C program in the package's bin/ folder (GEMMTUNE_BIN overrides it). It finds the
preload shim and the tracer in ../lib next to itself, so every command (capture, tune, verify,
run, report, ...) behaves exactly as the installed binary does; this module only hands over.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBDIRS = ("lib", "lib64")


def binary():
    """The gemmtune executable: $GEMMTUNE_BIN, else the one inside this package."""
    env = os.environ.get("GEMMTUNE_BIN")
    if env:
        return env
    path = os.path.join(_HERE, "bin", "gemmtune")
    if os.access(path, os.X_OK):
        return path
    raise FileNotFoundError(
        "gemmtune: no CLI in %s (a broken install?); set GEMMTUNE_BIN to a gemmtune binary"
        % os.path.join(_HERE, "bin"))


def _lib(name, env):
    if os.environ.get(env):
        return os.environ[env]
    roots = [_HERE]
    if os.environ.get("GEMMTUNE_BIN"):
        roots.append(os.path.join(os.path.dirname(os.environ["GEMMTUNE_BIN"]), ".."))
        roots.append(os.path.dirname(os.environ["GEMMTUNE_BIN"]))
    for root in roots:
        for d in _LIBDIRS + ("",):
            path = os.path.normpath(os.path.join(root, d, name))
            if os.path.exists(path):
                return path
    return None


def preload_lib():
    """Path of libgemmtune_preload.so (None when the package was built without CUDA)."""
    return _lib("libgemmtune_preload.so", "GEMMTUNE_PRELOAD_LIB")


def trace_lib():
    """Path of libgemmtune_trace.so (None when the package was built without CUDA)."""
    return _lib("libgemmtune_trace.so", "GEMMTUNE_TRACE_LIB")


def deploy_env(db, environ=None):
    """The environment ``gemmtune run --db DB`` gives its command: `environ` (default os.environ)
    with LD_PRELOAD gaining the shim in front and GEMMTUNE_DB set to the DB's absolute path."""
    shim = preload_lib()
    if not shim:
        raise FileNotFoundError("gemmtune: this package was built without CUDA: no preload shim")
    env = dict(os.environ if environ is None else environ)
    old = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = shim + (":" + old if old else "")
    env["GEMMTUNE_DB"] = ":".join(os.path.abspath(p) for p in str(db).split(":"))
    return env


def version():
    """The package's version, as the build recorded it."""
    try:
        from importlib.metadata import version as _v
        return _v("gemmtune")
    except Exception:  # not installed (run from the source tree)
        return "0+unknown"


def main(argv=None):
    """Run the gemmtune CLI with argv (default: this process's arguments); it replaces this
    process, so its exit status is the command's."""
    args = list(sys.argv[1:] if argv is None else argv)
    # tune races grouped_mm keys in a torch process: the interpreter running this module is the
    # one whose packages (torch) the user means, whatever `python3` on PATH is.
    if sys.executable and not os.environ.get("GEMMTUNE_PYTHON"):
        os.environ["GEMMTUNE_PYTHON"] = sys.executable
    try:
        exe = binary()
    except FileNotFoundError as e:
        sys.stderr.write("%s\n" % e)
        return 69
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + args)
    return 70  # not reached
