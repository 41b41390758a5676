"""pytest plugin for scripts/clients.py: one JSON line per event, written and
flushed as it happens, so that the runner knows which test a crashed or hung
process was running and can resume the file after it.

Loaded with `-p clients_plugin` (scripts/ on PYTHONPATH). Environment:

- CLIENTS_EVENTS: the JSON-lines file to append to (required).
- CLIENTS_DESELECT: a file of node ids, one a line, to leave out (tests that
  already ran before a crash, and the test that crashed).

Events: {"event": "collected", "nodeids"} once the tests to run are known,
{"event": "start", "nodeid"} before a test's setup, {"event":
"result", "nodeid", "outcome", "message"} after its teardown, {"event":
"collect_error", "nodeid", "message"} for a module that does not import.
"""

import json
import os

_events = None
_phases = {}


def _emit(record):
    _events.write(json.dumps(record) + "\n")
    _events.flush()
    os.fsync(_events.fileno())


def _short(report):
    text = str(report.longrepr) if report.longrepr is not None else ""
    lines = [line for line in text.splitlines() if line.strip()]
    # The last lines of a traceback name the exception; keep them short.
    return "\n".join(lines[-3:])[:600]


def pytest_configure(config):
    global _events
    path = os.environ.get("CLIENTS_EVENTS")
    if path:
        _events = open(path, "a", encoding="utf-8")


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get("CLIENTS_DESELECT")
    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        skip = {line.strip() for line in f if line.strip()}
    kept = [item for item in items if item.nodeid not in skip]
    dropped = [item for item in items if item.nodeid in skip]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_finish(session):
    if _events is not None:
        _emit({"event": "collected", "nodeids": [item.nodeid for item in session.items]})


def pytest_collectreport(report):
    if _events is not None and report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid, "message": _short(report)})


def pytest_runtest_logstart(nodeid, location):
    if _events is not None:
        _phases[nodeid] = []
        _emit({"event": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report):
    if _events is None:
        return
    _phases.setdefault(report.nodeid, []).append(report)
    if report.when != "teardown":
        return
    reports = _phases.pop(report.nodeid)
    outcome, message = "passed", ""
    for r in reports:
        xfail = hasattr(r, "wasxfail")
        if r.failed:
            if r.when == "call" and not xfail:
                outcome, message = "failed", _short(r)
            elif r.when == "call":
                # A strict xfail that passed.
                outcome, message = "failed", "XPASS(strict) " + r.wasxfail
            elif outcome != "failed":
                outcome, message = "error", f"{r.when}: " + _short(r)
            break
        if r.skipped:
            outcome = "xfailed" if xfail else "skipped"
            if xfail:
                message = r.wasxfail
            elif isinstance(r.longrepr, tuple):
                message = str(r.longrepr[2])[:600]
            else:
                message = _short(r)
            break
        if r.when == "call" and xfail and r.passed:
            outcome, message = "xpassed", r.wasxfail
    _emit({"event": "result", "nodeid": report.nodeid, "outcome": outcome, "message": message})
