"""The runner of the bench scripts' --selftest (decode_vs_inductor.py, capture_vs_trace.py): a
table of named cases, each a function of nothing that returns true when it passes, run in a
temporary folder removed after; a case that raises fails with the exception named. One line per
case ("ok   - name" / "FAIL - name"), then "N passed, N failed". Needs no torch and no GPU."""
import shutil
import tempfile


def run(cases_of, prefix):
    """Runs the cases cases_of(tmp) yields as (name, fn) in a fresh folder named prefix...;
    returns the exit status (0 when every case passed)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    passed = failed = 0
    try:
        for name, fn in cases_of(tmp):
            try:
                good = bool(fn())
            except Exception as e:  # a case that raises is a failed case, named
                good, name = False, "%s (%s: %s)" % (name, type(e).__name__, e)
            print("%s - %s" % ("ok  " if good else "FAIL", name))
            passed += good
            failed += not good
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1
