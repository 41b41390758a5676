#!/usr/bin/env bash
# Installs the Unified Runtime loader, its validation layers and DPC++'s SYCL
# runtime (Intel's PyPI wheels, pinned) into .oneapi/ at the repository root,
# where the ABI tests look for them (or set UR_RS_ONEAPI to another prefix
# holding include/unified-runtime and lib/).
#
#   scripts/oneapi-venv.sh            # creates or updates .oneapi/
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="${UR_RS_ONEAPI:-$root/.oneapi}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
    intel-sycl-rt==2026.2.0 intel-cmplr-lib-ur==2026.2.0 intel-cmplr-lib-rt==2026.2.0
test -f "$venv/include/unified-runtime/ur_api.h"
test -f "$venv/lib/libur_loader.so.0"
test -f "$venv/lib/libsycl.so.9"
echo "UR loader and SYCL runtime in $venv"
