#!/usr/bin/env bash
# The ABI tests and the comparison with UR's OpenCL adapter on the GPU
# machine (device tool), which has the drivers but no compiler for the test
# programs and no network.
#
# Here:   scripts/gpu-abi.sh bundle     # fills .device/ (git-ignored)
# There:  source .device/env.sh && scripts/gpu-abi.sh run
#         source .device/env.sh && scripts/gpu-abi.sh stack   # the whole stack's timings
#
# `bundle` builds the adapter libraries and ur-abi-run / ur-abi-compare in
# release, the test programs (ur-abi-run bundle), and packs the UR loader and
# libsycl of the wheels. `run` runs every program on the CUDA and Vulkan
# libraries and on the OpenCL library once per OpenCL device, then the
# comparison on PoCL, writing logs to $OUT when it is set. `stack` runs
# `cmdbuf-bench --only submission` ($STACK_RUST_RUNS times, default 2, on
# $STACK_RUST_SELECTOR's devices, default every CUDA, Vulkan and OpenCL one)
# and `ur-abi-compare stack` on every library's devices ($OUT/stack.md).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

case "${1:-}" in
bundle)
    set -e
    cargo build --release -p cmdbuf-ur-adapter-cuda -p cmdbuf-ur-adapter-vulkan -p cmdbuf-ur-adapter-opencl \
        -p cmdbuf-abi-harness -p cmdbuf-conformance -p cmdbuf-bench
    ../shared/tools/device-bundle target/release/libur_adapter_rs_{cuda,vulkan,opencl}.so \
        target/release/ur-abi-run target/release/ur-abi-compare target/release/cmdbuf-conformance \
        target/release/cmdbuf-bench
    rm -rf .device/programs
    target/release/ur-abi-run bundle .device/programs
    oneapi=${UR_RS_ONEAPI:-$root/.oneapi}/lib
    (cd "$oneapi" && tar cf - libur_loader.so.0 libsycl.so.9 libsvml.so libimf.so libirng.so libintlc.so.5) |
        xz -T2 -6 > .device/oneapi.tar.xz
    du -sh .device
    ;;
run | stack)
    out=${OUT:-/tmp/gpu-abi}
    mkdir -p "$out" /tmp/oneapi
    tar xJf .device/oneapi.tar.xz -C /tmp/oneapi
    export LD_LIBRARY_PATH=/tmp/oneapi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    bin=.device/bin
    if [ "$1" = stack ]; then
        nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
        rust=()
        for i in $(seq "${STACK_RUST_RUNS:-2}"); do
            UR_DEVICE_SELECTOR="${STACK_RUST_SELECTOR:-cuda:*;vulkan:*;opencl:*}" "$bin/cmdbuf-bench" --only submission \
                --no-emulated --out "/tmp/stack-rust$i" > "$out/stack-rust$i.log" 2>&1
            rust+=(--rust "/tmp/stack-rust$i/results.json")
        done
        # The comparison picks each library's devices itself.
        env -u UR_DEVICE_SELECTOR -u ONEAPI_DEVICE_SELECTOR "$bin/ur-abi-compare" stack --programs .device/programs --libraries "$bin" "${rust[@]}" \
            --rounds "${STACK_ROUNDS:-5}" --submissions "${SUBMISSIONS:-500}" > "$out/stack.md" 2> "$out/stack.err"
        status=$?
        cat "$out/stack.md"
        tail -5 "$out/stack.err"
        exit $status
    fi
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    clinfo -l || true
    status=0
    run() { # label library [NAME=VALUE]...
        local label=$1 lib=$2
        shift 2
        echo "=== $label"
        "$bin/ur-abi-run" run .device/programs "$bin/$lib" "$@" > "$out/abi-$label.log" 2>&1 || status=1
        grep -E '^(FAIL|skip)' "$out/abi-$label.log" | head -40
        tail -1 "$out/abi-$label.log"
    }
    run cuda libur_adapter_rs_cuda.so
    run vulkan libur_adapter_rs_vulkan.so
    for i in 0 1; do run "opencl$i" libur_adapter_rs_opencl.so UR_DEVICE_SELECTOR=opencl:$i; done
    echo "=== comparison on PoCL (opencl:cpu)"
    "$bin/ur-abi-compare" --programs .device/programs --library "$bin/libur_adapter_rs_opencl.so" \
        --selector opencl:cpu --submissions "${SUBMISSIONS:-1000}" > "$out/compare-pocl.md" 2>&1 || status=1
    cat "$out/compare-pocl.md"
    exit $status
    ;;
*)
    echo "usage: scripts/gpu-abi.sh bundle|run|stack" >&2
    exit 2
    ;;
esac
