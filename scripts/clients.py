#!/usr/bin/env python3
"""Runs the test suites of SYCL clients from PyPI (dpctl, dpnp) on a UR
adapter configuration, one pytest process per test file, so that a test that
crashes or hangs the process is recorded as that test's failure and the file
goes on after it. scripts/clients.sh installs the clients and calls this;
docs/clients.md describes configurations, results and causes.

  clients.py run    --python PY --config NAME --suite SUITE [--libs DIR] [--out DIR]
  clients.py report [--out DIR]            # counts per configuration, per-test differences
  clients.py check  --config NAME --suite SUITE --expect FILE [--out DIR]
  clients.py selftest --python PY          # the runner on a file of known outcomes

Standard library only: it runs under any python3, and drives the clients'
own interpreter (--python) for probes and tests.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Platform names as the OpenCL ICDs report them (CL_PLATFORM_NAME).
POCL = "Portable Computing Language"
INTEL = "Intel(R) OpenCL"

# name: (our library or None for UR's own OpenCL adapter, selector backend,
# platform name the selected device must have, or None for any).
CONFIGS = {
    "ours-pocl": ("libur_adapter_rs_opencl.so", "opencl", POCL),
    "ur-pocl": (None, "opencl", POCL),
    "ours-intel": ("libur_adapter_rs_opencl.so", "opencl", INTEL),
    "ur-intel": (None, "opencl", INTEL),
    "ours-cpu": ("libur_adapter_rs_cpu.so", "native_cpu", None),
    "ours-vulkan": ("libur_adapter_rs_vulkan.so", "offload", None),
}
# Pairs compared test by test: ours against UR's adapter on the same device.
PAIRS = [("ours-pocl", "ur-pocl"), ("ours-intel", "ur-intel")]

# dpnp's basic operations: a subset of its suite (about 6,300 of some 68,000
# tests in its top-level files, and more in tests/tensor and tests/third_party)
# that runs in minutes per configuration on 2 cores: array creation from
# memory, copies, fills, element-wise, logic, bitwise, reductions, searching,
# sorting, manipulation, ndarray methods, DLPack, and queues (with some oneMKL).
DPNP_BASIC = [
    "test_absolute.py",
    "test_amin_amax.py",
    "test_arraymanipulation.py",
    "test_binary_ufuncs.py",
    "test_bitwise.py",
    "test_copy.py",
    "test_counting.py",
    "test_dlpack.py",
    "test_fill.py",
    "test_flat.py",
    "test_flipping.py",
    "test_logic.py",
    "test_memory.py",
    "test_ndarray.py",
    "test_outer.py",
    "test_search.py",
    "test_sort.py",
    "test_sycl_queue.py",
]
# Suites: the package whose tests/ folder holds them, and the files to run
# (None: every test_*.py under it).
SUITES = {
    "dpctl": ("dpctl", None),
    "dpnp-basic": ("dpnp", DPNP_BASIC),
    "dpnp": ("dpnp", None),
}

FAILING = ("failed", "error", "crashed", "timeout", "notrun")

# Known causes of the tests our libraries fail, as the report groups them:
# numbers are adapter causes, letters limits that no adapter change fixes
# (both as in docs/clients.md). Each is recognised by what the client prints
# (or, for a crash, which test it was); a failure that none matches is
# reported as unclassified: a new cause to find.
CAUSES = [
    ("C: PoCL 3.1 cannot build the SPIR-V dpctl gives clCreateProgramWithIL itself (no adapter change fixes it)",
     lambda n, m: "test_create_program_from_spirv_ocl" in n and "_program.pyx:318" in m),
    ("1: native programs not adopted (urProgramCreateWithNativeHandle)",
     lambda n, m: "SyclProgramCompilationError" in m or "test_create_program_from_spirv_ocl" in n),
    ("2: spir64 images refused on PoCL 3.1 (urDeviceSelectBinary INVALID_BINARY)",
     # dpnp's fill of a strided array rewraps that error as a ValueError,
     # oneMKL's LAPACK calls abort on "Enqueue process failed", and kernels
     # looked up in a bundle that got no image are missing from it (in all,
     # SYCL_UR_TRACE shows only refused spir64 images before the error).
     lambda n, m: "UR_RESULT_ERROR_INVALID_BINARY" in m
     or "could not be copied into dpnp.tensor.usm_ndarray" in m
     or "what():  Enqueue process failed" in m
     or "kernel bundle does not contain the kernel identified by kernelId" in m),
    ("3: sub-group info 0 on PoCL (MAX_NUM_SUB_GROUPS, SUB_GROUP_SIZES)",
     # dpnp's broadcasting element-wise kernels read SUB_GROUP_SIZES_INTEL
     # and segfault on the empty answer (gdb: in _tensor_elementwise_impl).
     lambda n, m: "check_max_num_sub_groups" in n
     or ("test_2in_broadcasting" in n and "Segmentation fault" in m)),
    ("4: USM memcpy between two host pointers",
     lambda n, m: "SyclQueue.memcpy operation encountered an error" in m),
    ("5: no sub-devices (SUPPORTED_PARTITIONS empty)",
     lambda n, m: "sub-devices" in m.lower() or "SubDeviceCreation" in m or "can not be partitioned" in m),
    ("6: Vulkan global-memory cache size and line size 0",
     lambda n, m: "check_global_mem_cache" in n),
    ("A: dpctl has no enumerator for native_cpu and offload (no adapter change fixes it)",
     lambda n, m: any(x in m for x in ("Unknown backend type", "'unknown:", "inside platform.backend"))
     or "test_supported_aspect" in n),
    ("D: dpnp's histogramdd kernel races on devices that run a work-group's work-items one after another (no adapter change fixes it)",
     # The crash lands in the histogram2d test, or in the next test while
     # the histogram2d kernel still runs (histogramdd's own kernel is
     # one-dimensional and cannot race).
     lambda n, m: ("test_histogram2d" in n or "test_histogramdd" in n) and "Segmentation fault" in m),
    ("E: PoCL 3.1's CPU device has no cl_khr_fp16, and dpnp does not skip its float16 kernel (no adapter change fixes it)",
     lambda n, m: "TestHeavside" in n and "dtype=float16" in m),
    ("not run: the file stopped after 20 crashes (see its crashes' causes)",
     lambda n, m: m.startswith("not run: ")),
    ("B: no kernel image for the device: the wheels ship spir64 only (no adapter change fixes it)",
     lambda n, m: "has no image for the selected device" in m),
]


def cause_of(nodeid, message):
    for name, matches in CAUSES:
        if matches(nodeid, message):
            return name
    return "unclassified"


def site_tests(python, package):
    out = subprocess.run(
        [python, "-c", f"import importlib.util as u; print(u.find_spec('{package}').submodule_search_locations[0])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Path(out) / "tests"


def config_env(python, name, libs, selector=None):
    lib, backend, _ = CONFIGS[name]
    env = dict(os.environ)
    # The intel-opencl-rt wheel's libOpenCL.so.1 (which the UR loader and
    # libsycl find first, beside them) names libsvml.so and others without a
    # RUNPATH; with ONEAPI_DEVICE_SELECTOR set it is opened before anything
    # else has loaded them and fails, whichever adapter runs.
    venv_lib = str(Path(python).parent.parent / "lib")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [venv_lib, env.get("LD_LIBRARY_PATH")]))
    env.pop("UR_ADAPTERS_FORCE_LOAD", None)
    if lib is not None:
        path = Path(libs) / lib
        if not path.is_file():
            sys.exit(f"clients: {path} does not exist (cargo build --release, or --libs DIR)")
        env["UR_ADAPTERS_FORCE_LOAD"] = str(path.resolve())
    env["ONEAPI_DEVICE_SELECTOR"] = selector or f"{backend}:*"
    return env


# Devices by platform: dpctl.get_devices() leaves out devices of backends
# dpctl has no enumerator for (native_cpu, offload), whose `backend` raises.
PROBE = """
import json, dpctl
out = []
for p in dpctl.get_platforms():
    for d in p.get_devices():
        try:
            backend = str(d.backend)
        except Exception as e:
            backend = repr(e)
        out.append([p.name, d.name, backend, d.driver_version])
print(json.dumps(out))
"""


def probe(python, env):
    p = subprocess.run([python, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-3:]
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def resolve_device(python, name, libs):
    """The ONEAPI_DEVICE_SELECTOR value that selects this configuration's
    device, and the device; or None and why not."""
    _, backend, platform = CONFIGS[name]
    devices, err = probe(python, config_env(python, name, libs))
    if devices is None:
        return None, f"no device: {err}"
    if platform is None:
        if not devices:
            return None, "no device"
        return f"{backend}:*", devices[0]
    def meant(d):
        # Our libraries name their platforms "cmdbuf <backend> (<driver's
        # name>)": that tells which adapter serves the device.
        ours = d[0].startswith("cmdbuf ")
        return platform in d[0] and ours == (CONFIGS[name][0] is not None)

    for i, d in enumerate(devices):
        if meant(d):
            selector = f"{backend}:{i}"
            # The index counts the backend's devices across platforms; check
            # that it picks the one meant.
            picked, err = probe(python, config_env(python, name, libs, selector))
            if picked and len(picked) == 1 and meant(picked[0]):
                return selector, picked[0]
            return None, f"{selector} selects {picked or err}, not {platform}"
    return None, f"no {platform} device among {devices}"


def read_events(path):
    events = []
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                # A line cut by a crash mid-write.
                pass
    return events


def describe_rc(rc):
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def output_tail(log, start):
    """The last lines the test process wrote (an abort's reason, as a
    `terminate called ... what(): ...` pair, is there)."""
    log.flush()
    with open(log.name, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        lines = [line.rstrip() for line in f.read().splitlines() if line.strip()]
    # pytest's progress dots and percentages say nothing about the crash, nor
    # does the Python stack that faulthandler prints after its "Fatal Python
    # error" line.
    lines = [line for line in lines if not line.endswith("%]")]
    fatal = [i for i, line in enumerate(lines) if "Fatal Python error" in line]
    if fatal:
        lines = lines[: fatal[0] + 1]
    return "\n".join(lines[-4:])[-600:]


def watch(proc, events_path, seen, test_timeout):
    """Waits for the test process; kills it (and says so) when one test, or
    the collection or exit, has run longer than test_timeout seconds."""
    since = time.monotonic()
    while proc.poll() is None:
        time.sleep(0.5)
        events = read_events(events_path)
        if len(events) > seen:
            since = time.monotonic()
        seen = len(events)
        if time.monotonic() - since > test_timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
    return False


def run_file(python, env, tests_dir, rel, work, test_timeout, max_crashes, results, log):
    """Runs one test file until every test in it has a result, resuming after
    a test that crashes or hangs the process."""
    events_path = work / (rel.replace("/", "_") + ".events")
    deselect_path = work / (rel.replace("/", "_") + ".deselect")
    events_path.unlink(missing_ok=True)
    deselect_path.unlink(missing_ok=True)
    env = dict(env)
    env["CLIENTS_EVENTS"] = str(events_path)
    env["CLIENTS_DESELECT"] = str(deselect_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    done, collected, crashes = set(), set(), 0
    for attempt in range(1, 10000):
        cmd = [
            python, "-m", "pytest", "-p", "clients_plugin", "-p", "no:cacheprovider",
            # Output of native code (an abort's `terminate called ...`)
            # goes to the log; only Python's own output is captured.
            "--capture=sys",
            "-q", "-rN", "--rootdir", str(tests_dir), str(tests_dir / rel),
        ]
        log.write(f"\n=== attempt {attempt}: {' '.join(cmd)}\n")
        log.flush()
        start_count = len(read_events(events_path))
        log_start = log.tell()
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
        seen = start_count
        try:
            timed_out = watch(proc, events_path, seen, test_timeout)
        except BaseException:
            # Interrupted: the test process is in its own session; end it too.
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        rc = proc.returncode
        pending, collect_error = None, False
        for e in read_events(events_path)[start_count:]:
            if e["event"] == "start":
                pending = e["nodeid"]
            elif e["event"] == "result":
                results[e["nodeid"]] = {"outcome": e["outcome"], "message": e["message"]}
                done.add(e["nodeid"])
                pending = None
            elif e["event"] == "collected" and attempt == 1:
                collected = set(e["nodeids"])
            elif e["event"] == "collect_error":
                collect_error = True
                results[e["nodeid"] or rel] = {"outcome": "error", "message": "collection: " + e["message"]}
        if pending is not None:
            crashes += 1
            if timed_out:
                results[pending] = {"outcome": "timeout", "message": f"no result after {test_timeout} s; process killed"}
            else:
                results[pending] = {"outcome": "crashed",
                                    "message": f"process ended during the test: {describe_rc(rc)}\n" + output_tail(log, log_start)}
            done.add(pending)
            if crashes >= max_crashes:
                # A file whose every test kills the process would take hours
                # one process at a time: what is left is recorded as not run.
                for n in collected - done:
                    results[n] = {"outcome": "notrun", "message": f"not run: {crashes} tests of this file crashed or hung first"}
                return
            deselect_path.write_text("".join(n + "\n" for n in sorted(done)), encoding="utf-8")
            continue
        # pytest's 2 after a module that does not import: recorded above.
        if rc not in (0, 1, 5) and not (rc == 2 and collect_error):
            # Ended with no test running: at collection, or at exit.
            where = "(process exit)" if done else "(collection)"
            if timed_out:
                results[f"{rel}::{where}"] = {"outcome": "timeout", "message": f"no progress for {test_timeout} s; process killed"}
            else:
                results[f"{rel}::{where}"] = {"outcome": "crashed",
                                              "message": f"{describe_rc(rc)} with no test running\n" + output_tail(log, log_start)}
        return


def cmd_run(args):
    python = args.python
    out = Path(args.out) / args.config
    out.mkdir(parents=True, exist_ok=True)
    package, files = SUITES[args.suite]
    tests_dir = site_tests(python, package)
    selector, device = resolve_device(python, args.config, args.libs)
    record = {
        "config": args.config,
        "suite": args.suite,
        "selector": selector,
        "device": device,
        "libs": str(Path(args.libs).resolve()) if CONFIGS[args.config][0] else None,
        "tests": {},
    }
    result_path = out / f"{args.suite}.json"
    if selector is None:
        record["unavailable"] = device
        print(f"clients: {args.config}: {device}", file=sys.stderr)
        result_path.write_text(json.dumps(record, indent=1), encoding="utf-8")
        return 0
    env = config_env(python, args.config, args.libs, selector)
    if files is None:
        files = sorted(str(p.relative_to(tests_dir)) for p in tests_dir.rglob("test_*.py"))
    if args.files:
        files = [f for f in files if any(sel in f for sel in args.files.split(","))]
        # A run of some files adds to the earlier results of the others.
        if result_path.exists():
            earlier = json.loads(result_path.read_text(encoding="utf-8"))
            if earlier.get("selector") == selector:
                record["tests"] = {n: r for n, r in earlier["tests"].items()
                                   if n.split("::")[0] not in files}
                record["seconds_earlier"] = earlier.get("seconds", 0) + earlier.get("seconds_earlier", 0)
    work = out / f"{args.suite}.work"
    work.mkdir(exist_ok=True)
    started = time.monotonic()
    with open(out / f"{args.suite}.log", "w", encoding="utf-8") as log:
        for rel in files:
            t0 = time.monotonic()
            run_file(python, env, tests_dir, rel, work, args.test_timeout, args.max_crashes, record["tests"], log)
            counts = count(r for n, r in record["tests"].items() if n.split("::")[0] == rel)
            ran = sum(1 for n in record["tests"] if n.split("::")[0] == rel)
            print(f"[{args.config} {args.suite}] {rel}: {ran} tests, "
                  f"{fmt_counts(counts)} ({time.monotonic() - t0:.0f} s)", flush=True)
            result_path.write_text(json.dumps(record, indent=1), encoding="utf-8")
    record["seconds"] = round(time.monotonic() - started)
    result_path.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0


def count(records):
    c = {k: 0 for k in ("passed", "failed", "skipped", "error", "crashed", "timeout", "notrun", "xfailed", "xpassed")}
    for r in records:
        c[r["outcome"]] = c.get(r["outcome"], 0) + 1
    return c


def fmt_counts(c):
    s = f"{c['passed']} passed, {c['failed'] + c['crashed'] + c['timeout'] + c['notrun']} failed, {c['skipped'] + c['xfailed']} skipped, {c['error']} error"
    extra = [f"{c[k]} {k}" for k in ("crashed", "timeout", "notrun") if c[k]]
    return s + (f" ({', '.join(extra)})" if extra else "")


def load(out):
    results = {}
    for path in sorted(Path(out).glob("*/*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        results[(rec["config"], rec["suite"])] = rec
    return results


def cmd_report(args):
    results = load(args.out)
    suites = sorted({s for _, s in results})
    for suite in suites:
        print(f"\n## {suite}\n")
        print("| configuration | device | passed | failed | skipped | error | crashed | timeout | not run | seconds |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for config in CONFIGS:
            rec = results.get((config, suite))
            if rec is None:
                continue
            if rec.get("unavailable"):
                print(f"| {config} | unavailable: {rec['unavailable']} | | | | | | | | |")
                continue
            c = count(rec["tests"].values())
            dev = f"{rec['device'][0]} ({rec['selector']})"
            print(f"| {config} | {dev} | {c['passed']} | {c['failed']} | {c['skipped'] + c['xfailed']} | "
                  f"{c['error']} | {c['crashed']} | {c['timeout']} | {c['notrun']} | {rec.get('seconds', 0) + rec.get('seconds_earlier', 0)} |")
        for ours, theirs in PAIRS:
            a, b = results.get((ours, suite)), results.get((theirs, suite))
            if not a or not b or a.get("unavailable") or b.get("unavailable"):
                continue
            ta, tb = a["tests"], b["tests"]
            only_ur = sorted(n for n in tb if tb[n]["outcome"] == "passed" and ta.get(n, {}).get("outcome") != "passed")
            only_us = sorted(n for n in ta if ta[n]["outcome"] == "passed" and tb.get(n, {}).get("outcome") != "passed")
            print(f"\n### {suite}: {theirs} passes, {ours} does not ({len(only_ur)})\n")
            print_by_cause([(n, ta.get(n, {"outcome": "missing", "message": ""})) for n in only_ur])
            print(f"\n### {suite}: {ours} passes, {theirs} does not ({len(only_us)})\n")
            for n in only_us:
                r = tb.get(n, {"outcome": "missing", "message": ""})
                print(f"- `{n}`: {r['outcome']}: {first_line(r['message'])}")
        for config in CONFIGS:
            rec = results.get((config, suite))
            if CONFIGS[config][0] is None or not rec or rec.get("unavailable"):
                continue
            failing = [(n, r) for n, r in sorted(rec["tests"].items()) if r["outcome"] in FAILING]
            print(f"\n### {suite}: every test {config} fails ({len(failing)})\n")
            print_by_cause(failing)
    return 0


def print_by_cause(tests):
    by_cause = {}
    for n, r in tests:
        by_cause.setdefault(cause_of(n, r["message"]), []).append((n, r))
    for cause, group in sorted(by_cause.items()):
        print(f"- cause {cause}: {len(group)}")
    for cause, group in sorted(by_cause.items()):
        print(f"\n#### {cause} ({len(group)})\n")
        for n, r in group:
            print(f"- `{n}`: {r['outcome']}: {first_line(r['message'])}")


def first_line(message):
    """The line of a failure that says what went wrong: pytest's last `E`
    line, else the last line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ")]
    return ((errors or lines or [""])[-1])[:200]


def cmd_check(args):
    """Fails when the configuration fails a test that the expectation file
    does not list: `nodeid  # cause` lines."""
    rec = load(args.out).get((args.config, args.suite))
    if rec is None or rec.get("unavailable"):
        print(f"clients: no results for {args.config} {args.suite}", file=sys.stderr)
        return 1
    expected = {}
    for line in Path(args.expect).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            nodeid, _, cause = line.partition("#")
            expected[nodeid.strip()] = cause.strip()
    tests = rec["tests"]
    failing = {n for n, r in tests.items() if r["outcome"] in FAILING}
    new = sorted(failing - expected.keys())
    fixed = sorted(n for n in expected if tests.get(n, {}).get("outcome") == "passed")
    c = count(tests.values())
    print(f"clients: {args.config} {args.suite}: {fmt_counts(c)}; {len(failing)} failing, {len(expected)} expected to")
    for n in fixed:
        print(f"clients: now passes (remove from {args.expect}): {n}")
    for n in new:
        print(f"clients: REGRESSION: {n}: {tests[n]['outcome']}: {first_line(tests[n]['message'])}")
    if not tests:
        print("clients: no test ran", file=sys.stderr)
        return 1
    # The closing line in the form CI logs are read for.
    failed = c["failed"] + c["error"] + c["crashed"] + c["timeout"]
    print(f"clients: {c['passed']} passed, {failed} failed, {c['skipped'] + c['xfailed']} skipped")
    return 1 if new else 0


SELFTEST = """
import os, time
def test_pass(): pass
def test_abort():
    os.write(2, b"the reason of the abort\\n")
    os.abort()
def test_hang(): time.sleep(600)
def test_fail(): assert False, "expected"
def test_abort_again(): os.abort()
def test_after(): pass
"""


def cmd_selftest(args):
    """Checks the runner on a file of known outcomes: a crash and a hang are
    that test's results and the file goes on; a crash limit stops it."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tests_dir = Path(tmp) / "tests"
        tests_dir.mkdir()
        (tests_dir / "test_runner.py").write_text(SELFTEST, encoding="utf-8")
        want = {
            "test_runner.py::test_pass": "passed",
            "test_runner.py::test_abort": "crashed",
            "test_runner.py::test_hang": "timeout",
            "test_runner.py::test_fail": "failed",
            "test_runner.py::test_abort_again": "crashed",
            "test_runner.py::test_after": "passed",
        }
        checks = [(20, want), (2, dict(want, **{n: "notrun" for n in list(want)[3:]}))]
        ok = True
        with open(Path(tmp) / "log", "w", encoding="utf-8") as log:
            for max_crashes, expected in checks:
                results = {}
                run_file(args.python, dict(os.environ), tests_dir, "test_runner.py", Path(tmp), 5.0,
                         max_crashes, results, log)
                got = {n: r["outcome"] for n, r in results.items()}
                if got != expected:
                    ok = False
                    print(f"clients selftest (max crashes {max_crashes}): got {got}, expected {expected}")
                reason = results.get("test_runner.py::test_abort", {}).get("message", "")
                if "the reason of the abort" not in reason:
                    ok = False
                    print(f"clients selftest: a crash's output is not in its message: {reason!r}")
    print("clients selftest: " + ("runner ok" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--python", required=True)
    run.add_argument("--config", required=True, choices=CONFIGS)
    run.add_argument("--suite", required=True, choices=SUITES)
    run.add_argument("--libs", default=str(ROOT / "target" / "release"))
    run.add_argument("--files", help="comma-separated substrings: run only matching test files")
    run.add_argument("--test-timeout", type=float, default=300.0)
    run.add_argument("--max-crashes", type=int, default=20, help="per test file; the rest of the file is then not run")
    selftest = sub.add_parser("selftest")
    selftest.add_argument("--python", required=True)
    for p in (run, selftest, sub.add_parser("report"), check := sub.add_parser("check")):
        p.add_argument("--out", default=str(ROOT / "target" / "clients"))
    check.add_argument("--config", required=True, choices=CONFIGS)
    check.add_argument("--suite", required=True, choices=SUITES)
    check.add_argument("--expect", required=True)
    args = ap.parse_args()
    # A plain kill of the runner raises here, so that it ends its test
    # process (run in a session of its own) before it goes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # Tests run in a work folder: every path absolute (not resolved: a venv's
    # python is a link whose place names the venv).
    args.out = os.path.abspath(args.out)
    if args.cmd in ("run", "selftest"):
        args.python = os.path.abspath(args.python)
        args.libs = os.path.abspath(getattr(args, "libs", "."))
    return {"run": cmd_run, "report": cmd_report, "check": cmd_check, "selftest": cmd_selftest}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
