#!/usr/bin/env bash
# Runs the test suites of SYCL software from PyPI (dpctl, dpnp) on our OpenCL
# library and on UR's own OpenCL adapter, over PoCL 3.1 and over Intel's
# OpenCL CPU runtime, and compares them test by test (docs/clients.md).
#
#   scripts/clients.sh                # install, run every configuration, report
#   scripts/clients.sh install        # only install .clients/ and .intel-opencl/
#   scripts/clients.sh report         # only print the report of earlier runs
#
# Environment (defaults in brackets):
#   CLIENTS_LIBS     folder of our libur_adapter_rs_*.so [target/release]
#   CLIENTS_CONFIGS  configurations [ours-pocl ur-pocl ours-intel ur-intel];
#                    also ours-cpu, ours-vulkan (dpctl on our other libraries)
#   CLIENTS_SUITES   suites [dpctl dpnp-basic]; dpnp is dpnp's whole suite
#   CLIENTS_FILES    comma-separated substrings: only the test files matching
#   CLIENTS_TEST_TIMEOUT  seconds one test may run before it is killed [300]
#   CLIENTS_VENV     the clients' virtual environment [.clients]
#   CLIENTS_OUT      results: <config>/<suite>.json, logs, report.md [target/clients]
#
# Each test file runs in its own pytest process; a test that crashes or hangs
# the process is recorded as that test's failure ("crashed", "timeout") and the
# file resumes after it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv="${CLIENTS_VENV:-$root/.clients}"
out="${CLIENTS_OUT:-$root/target/clients}"
libs="${CLIENTS_LIBS:-$root/target/release}"
configs="${CLIENTS_CONFIGS:-ours-pocl ur-pocl ours-intel ur-intel}"
suites="${CLIENTS_SUITES:-dpctl dpnp-basic}"
what="${1:-all}"

install() {
    python3 -m venv "$venv"
    # Pinned: the clients and everything pip resolves for them, on the same
    # SYCL runtime and UR loader as .oneapi/ (scripts/oneapi-venv.sh). Cython
    # builds the extension dpctl's test_cython_api compiles (with g++).
    local packages=(dpctl==0.22.1 pytest==9.2.0 cython==3.3.1 numpy==2.4.6
        intel-sycl-rt==2026.2.0 intel-cmplr-lib-ur==2026.2.0 intel-cmplr-lib-rt==2026.2.0
        intel-cmplr-lic-rt==2026.2.0 intel-opencl-rt==2026.2.0 tbb==2023.2.0 tcmlib==1.6.0 umf==1.2.0)
    # dpnp brings oneMKL (some 700 MB): only when a dpnp suite runs.
    if [[ "$what" == install || "$suites" == *dpnp* ]]; then
        packages+=(dpnp==0.20.0 dpcpp-cpp-rt==2026.2.0 intel-openmp==2026.2.0 mkl==2026.2.0
            onemkl-sycl-blas==2026.2.0 onemkl-sycl-dft==2026.2.0 onemkl-sycl-lapack==2026.2.0
            onemkl-sycl-rng==2026.2.0 onemkl-sycl-vm==2026.2.0)
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
    # Intel's OpenCL CPU runtime as a platform beside the system's PoCL.
    scripts/intel-opencl.sh
}

case "$what" in
install)
    install
    exit 0
    ;;
report) ;;
all)
    install
    # shellcheck disable=SC1091
    source "${UR_RS_INTEL_OPENCL:-$root/.intel-opencl}/env.sh"
    # The runner itself first: crashes, hangs and failures recorded as such.
    python3 scripts/clients.py selftest --python "$venv/bin/python"
    for suite in $suites; do
        for config in $configs; do
            python3 scripts/clients.py run --python "$venv/bin/python" --config "$config" --suite "$suite" \
                --libs "$libs" --out "$out" --test-timeout "${CLIENTS_TEST_TIMEOUT:-300}" \
                ${CLIENTS_FILES:+--files "$CLIENTS_FILES"}
        done
    done
    ;;
*)
    echo "usage: scripts/clients.sh [all|install|report]" >&2
    exit 2
    ;;
esac
mkdir -p "$out"
python3 scripts/clients.py report --out "$out" | tee "$out/report.md"
