#!/usr/bin/env bash
# Builds a fresh project outside the workspace that depends on the facade
# crate by version, from the `cargo package` tarballs (not the workspace's
# paths), and runs the README's example in it: the check that the packed
# crates build on their own (docs/publishing.md).
#
#   scripts/package-check.sh        # packs the crates, builds and runs the project
#
# The crates are not on crates.io (their names are taken there), so the
# project reaches the tarballs' contents through `[patch.crates-io]`; the
# third-party dependencies come from crates.io as usual. The build shares the
# workspace's target folder (no second one), under its own fingerprints.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
crates=(ur cmdbuf-core cmdbuf-cpu cmdbuf-opencl cmdbuf-vulkan cmdbuf-cuda)
out="$root/target/package-check"

cargo package --no-verify --allow-dirty $(printf -- '-p %s ' "${crates[@]}")
rm -rf "$out"
mkdir -p "$out/crates" "$out/app/src"
for crate in "${crates[@]}"; do
    tar -xzf "target/package/$crate-$version.crate" -C "$out/crates"
done

{
    echo '[package]'
    echo 'name = "package-check"'
    echo 'version = "0.0.0"'
    echo 'edition = "2024"'
    echo 'publish = false'
    echo
    echo '[dependencies]'
    echo "ur = \"$version\""
    echo
    echo '# Its own workspace: not a member of the one it lies under.'
    echo '[workspace]'
    echo
    echo '[patch.crates-io]'
    for crate in "${crates[@]}"; do
        echo "$crate = { path = \"../crates/$crate-$version\" }"
    done
} > "$out/app/Cargo.toml"

# The README's example: the first Rust block after "## Using it".
awk '/^## Using it/ {found=1} found && /^```rust/ {inside=1; next} inside && /^```/ {exit} inside {print}' \
    README.md > "$out/app/src/main.rs"
test -s "$out/app/src/main.rs"

CARGO_TARGET_DIR="$root/target" cargo run --manifest-path "$out/app/Cargo.toml"
echo "ok: the README example built from the packed crates ($version) and ran"
