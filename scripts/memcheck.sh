#!/usr/bin/env bash
# Runs the conformance suite (a subset on OpenCL and Vulkan) and the unit
# tests of the raw-pointer paths under valgrind memcheck, on the CPU adapter,
# PoCL (opencl) and lavapipe (vulkan). Fails on any invalid read or write, use
# of uninitialised memory, bad free, or definite leak that the suppression
# file (scripts/memcheck.supp: driver and loader noise only) does not cover.
# Part of CI (.ci/run); see docs/reliability.md, "Memory checking".
#
#   scripts/memcheck.sh               # build, then every run below
#   scripts/memcheck.sh suite         # only the suite runs
#   scripts/memcheck.sh unit          # only the unit tests
#   scripts/memcheck.sh abi           # only the C ABI runs: the generated argument checks,
#                                     # then the C programs through the loader
#   scripts/memcheck.sh suite unit    # several of them, in that order
#
# Environment:
#   MEMCHECK_BACKENDS  backends of the suite runs (default: cpu opencl vulkan)
#   MEMCHECK_ABI       libraries of the ABI runs, the generated checks and the
#                      C programs (default: cpu opencl, the latter on PoCL)
#   MEMCHECK_ABI_PROFILE  cargo profile of those libraries (default: release;
#                      `dev` reuses a `cargo test` build)
#   MEMCHECK_LOGS      folder of the valgrind logs (default target/memcheck)
#
# Every run prints its counts (errors, definite leaks, suppressions used);
# a failing run prints its valgrind log's error reports, each with the
# suppression valgrind would write for it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
parts=("${@:-all}")
for part in "${parts[@]}"; do
    case $part in
        all | suite | unit | abi) ;;
        *)
            echo "memcheck: unknown part '$part' (all, suite, unit, abi)" >&2
            exit 2
            ;;
    esac
done
# Whether the command line asked for part $1.
wants() {
    local part
    for part in "${parts[@]}"; do
        [[ $part == all || $part == "$1" ]] && return 0
    done
    return 1
}
backends=${MEMCHECK_BACKENDS:-cpu opencl vulkan}
logs=${MEMCHECK_LOGS:-$root/target/memcheck}
mkdir -p "$logs"

if ! command -v valgrind >/dev/null; then
    echo "memcheck: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi

# Errors exit with 97 (a failing case exits 1, no device 2); leaks count as
# errors only when definite: a "possibly lost" block is a pointer into an
# object that threads still running at exit hold (the CPU adapter's workers,
# the drivers' threads), not a leak.
# --max-threads: a host task finding no idle host thread gets a new one
# (cmdbuf-core's host_threads.rs), and host_tasks.c keeps hundreds waiting
# at once, past valgrind's default of 500 threads.
vg=(valgrind --tool=memcheck --max-threads=3000 --error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-origins=no --num-callers=40 --gen-suppressions=all -s
    --suppressions="$root/scripts/memcheck.supp")
# Cases run tens of times slower under valgrind: no per-case time limit.
export UR_CONFORMANCE_CASE_TIMEOUT=0

# The suite's groups run on OpenCL and Vulkan: command buffers and their
# updates, events, copies and rects, USM, kernels, SYCL-graph capture and
# native commands (the CPU runs all of them, natively and emulated).
groups=(lifecycle:: commands:: update:: update_events:: event_sync:: kernel_event_sync:: copy:: fill:: read::
    write:: rect:: usm_2d:: enqueue:: capture:: native_command:: graph_build:: graph_host_task::)

failed=()

# Runs "$@" under memcheck, logging to $logs/$name.log, and prints its counts.
check() {
    local name=$1
    shift
    local log="$logs/$name.log" start=$SECONDS rc=0
    "${vg[@]}" --log-file="$log" "$@" >"$logs/$name.out" 2>&1 || rc=$?
    local errors leaked used
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
    leaked=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1 bytes in \2 blocks/p' "$log" | tail -1)
    used=$(sed -n 's/.*used_suppression: *\([0-9]*\) \([^ ]*\) .*/\2 x\1/p' "$log" | paste -sd, -)
    printf 'memcheck %-22s rc %-3s %4ss  errors %s  definitely lost %s  suppressed: %s\n' \
        "$name" "$rc" $((SECONDS - start)) "${errors:-?}" "${leaked:-0 bytes}" "${used:-none}"
    if ((rc != 0)) || [[ ${errors:-1} != 0 ]]; then
        failed+=("$name")
        tail -n 30 "$logs/$name.out"
        grep -v '^==[0-9]*== *by 0x[0-9A-F]*: \(call_once\|do_call\|catch_unwind\|UnknownInlinedFun\)' "$log" | head -n 400 || true
    fi
}

if wants suite; then
    cargo build --release -p cmdbuf-conformance
    suite=target/release/cmdbuf-conformance
    for backend in $backends; do
        case $backend in
            # The whole suite, on the adapter and on cmdbuf-core's software command buffers.
            cpu) UR_DEVICE_SELECTOR='cpu:*' check suite-cpu "$suite" ;;
            *)
                filters=()
                for g in "${groups[@]}"; do filters+=(--filter "$g"); done
                # hwloc (in PoCL) cannot read the CPU's topology under valgrind and
                # says so on every start: the device works without it.
                UR_DEVICE_SELECTOR="$backend:*" UR_CONFORMANCE_EMULATED=none check "suite-$backend" "$suite" "${filters[@]}"
                ;;
        esac
    done
fi

if wants unit; then
    # Each raw-pointer path of our `unsafe` code has a unit test; the test
    # binaries (the dev profile's, which `cargo test` has built in CI) run
    # under memcheck, one thread each so that the report names the test.
    # Names: crate:test-target:filter.
    units=(
        "cmdbuf-cpu:c_table:"          # the CPU kernel table: ABI reads, calls, argument arrays
        "cmdbuf-cpu:raw_paths:"        # CPU kernel argument packing, rect copies, fills, USM copies
        "cmdbuf-abi:lib:info::tests --skip device_info" # the info-query size protocol's writes
        "cmdbuf-vulkan:raw_paths:"     # host-mapped status words, staging rect copies
    )
    for unit in "${units[@]}"; do
        IFS=: read -r crate target filter <<<"$unit"
        if [[ $target == lib ]]; then sel=(--lib); else sel=(--test "$target"); fi
        exe=$(cargo test -p "$crate" "${sel[@]}" --no-run --message-format=json 2>/dev/null |
            sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
        if [[ -z $exe ]]; then
            echo "memcheck: cannot build the tests of $crate ($target)" >&2
            cargo test -p "$crate" "${sel[@]}" --no-run
            exit 1
        fi
        check "unit-$crate-$target" "$exe" --test-threads 1 $filter
    done
fi

if wants abi; then
    # The generated argument checks (abi/harness/c/checks.c, docs/abi.md):
    # every entry point called with each mechanical violation of ur_api.h,
    # on the cpu library and the OpenCL one over PoCL, directly (no loader).
    include=${UR_RS_ONEAPI:-$root/.oneapi}/include
    if [[ -f $include/unified-runtime/ur_api.h ]]; then
        cargo build -p cmdbuf-ur-adapter-cpu -p cmdbuf-ur-adapter-opencl
        ${CC:-cc} -std=c11 -Wall -Werror -O1 -g -I"$include" abi/harness/c/checks.c -o "$logs/abi-checks" -ldl
        for lib in ${MEMCHECK_ABI:-cpu opencl}; do
            UR_ADAPTERS_FORCE_LOAD="$root/target/debug/libur_adapter_rs_$lib.so" check "abi-checks-$lib" "$logs/abi-checks"
        done
    elif [[ ${UR_RS_REQUIRE_ONEAPI:-} == 1 ]]; then
        echo "memcheck: no UR headers in $include, but UR_RS_REQUIRE_ONEAPI=1" >&2
        failed+=(abi-checks)
    else
        echo "memcheck: no UR headers in $include (scripts/oneapi-venv.sh): the ABI checks are not run" >&2
    fi

    # C programs of abi/harness/c/ through Intel's UR loader without layers,
    # so that every misuse reaches the library: released handles of every
    # kind used again (stale.c), the misuse codes (misuse.c), memory freed
    # under a waiting kernel (free_in_flight.c) and host tasks against
    # finish (host_tasks.c). Built as the ABI tests build them.
    oneapi=$root/.oneapi
    if [[ ! -e $oneapi/include/unified-runtime/ur_api.h ]]; then
        echo "memcheck: no UR loader in .oneapi/ (scripts/oneapi-venv.sh): the C programs cannot run" >&2
        failed+=(abi)
    else
        profile=${MEMCHECK_ABI_PROFILE:-release}
        cargo build --profile "$profile" -p cmdbuf-ur-adapter-cpu -p cmdbuf-ur-adapter-opencl
        [[ $profile == dev ]] && out=debug || out=$profile
        bin=$logs/abi-bin
        mkdir -p "$bin"
        programs=(stale misuse free_in_flight host_tasks)
        for program in "${programs[@]}"; do
            ${CC:-cc} -std=c11 -Wall -Werror -O1 -g -I"$root/abi/harness/c" -I"$oneapi/include" \
                -I"$root/adapter-cpu/include" "$root/abi/harness/c/$program.c" -L"$oneapi/lib" \
                -Wl,-rpath,"$oneapi/lib" -l:libur_loader.so.0 -lpthread -o "$bin/$program"
        done
        for library in ${MEMCHECK_ABI:-cpu opencl}; do
            # opencl:0 is PoCL (Intel's OpenCL runtime, when set up, comes after it).
            selector=$library:0
            for program in "${programs[@]}"; do
                UR_ADAPTERS_FORCE_LOAD="$root/target/$out/libur_adapter_rs_$library.so" URT_REPO="$root" \
                    UR_DEVICE_SELECTOR=$selector check "abi-$library-$program" "$bin/$program"
            done
        done
    fi
fi

if ((${#failed[@]})); then
    echo "memcheck: failed: ${failed[*]} (logs in $logs)" >&2
    exit 1
fi
echo "memcheck: no errors, no definite leak"
