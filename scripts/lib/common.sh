# shellcheck shell=bash
# The preamble the scripts share. Sourced, not executed: a script starts with
#
#   . "$(dirname "$0")/lib/common.sh"          (scripts/bench/*: "$(dirname "$0")/../lib/common.sh")
#
# Sourcing it sets `set -euo pipefail`, changes to the workspace root and sets:
#
#   repo     the workspace root (absolute)
#   target   ${CARGO_TARGET_DIR:-target}, made absolute (relative to the root)
#   peers    ${TSTORE_PEERS_DIR:-$target/peers}, made absolute: where scripts/fetch-peers puts
#            the real terraform and null provider
#
# and defines the functions below. It starts nothing and writes nothing by itself.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo="$(pwd)"
target="${CARGO_TARGET_DIR:-target}"
[[ "$target" = /* ]] || target="$repo/$target"
peers="${TSTORE_PEERS_DIR:-$target/peers}"
[[ "$peers" = /* ]] || peers="$repo/$peers"

# die MESSAGE...: print "SCRIPT: error: MESSAGE" on stderr and exit 1.
die() {
    echo "$(basename "$0"): error: $*" >&2
    exit 1
}

# build_tstore PROFILE [CARGO_ARGS...]: build the tstore binary (PROFILE is debug or release;
# CARGO_ARGS such as -q go to cargo) and set `tstore` to its path.
#
# The release build on Linux with glibc is the executable tstore ships: linked statically,
# at a fixed address (docs/decisions.md, "The released `tstore` executable is static").
# Only the executable's own link takes the flags (`cargo rustc ... --`): as flags for every
# crate (RUSTFLAGS) they would also reach the proc-macro crates, which cannot be static.
# Everything else the executable links is built as by `cargo build --release`.
build_tstore() {
    local profile="$1"
    shift
    if [[ "$profile" = release && "$(rustc -vV | sed -n 's/^host: //p')" = *-linux-gnu ]]; then
        cargo rustc --release "$@" -p tstore-installer --bin tstore -- \
            -C target-feature=+crt-static -C relocation-model=static
        tstore="$target/release/tstore"
        is_static "$tstore" ||
            die "$tstore is not a static executable: the release build lost its link flags"
    elif [[ "$profile" = release ]]; then
        cargo build --release "$@" -p tstore-installer --bin tstore
        tstore="$target/release/tstore"
    else
        cargo build "$@" -p tstore-installer --bin tstore
        tstore="$target/$profile/tstore"
    fi
}

# is_static FILE: whether the ELF executable FILE asks for no program interpreter (no
# dynamic loader runs before it); false when readelf cannot read it. (The headers are read
# whole first: `readelf | grep -q` under pipefail could turn grep's early exit into a
# failure of readelf, and a found INTERP into "static".)
is_static() {
    local headers
    headers=$(readelf --program-headers --wide "$1") || return 1
    [[ "$headers" != *INTERP* ]]
}

# fetch_peers: run scripts/fetch-peers (downloads only when missing, verifies always; its
# messages go to stderr) and set `terraform` and `null_provider` to the two peers in $peers.
fetch_peers() {
    scripts/fetch-peers >/dev/null
    terraform="$peers/terraform"
    null_provider="$peers/terraform-provider-null_v2.1.2_x4"
}

# remove_tree DIR: remove DIR as a script run leaves it: a FUSE mount at DIR/mount is
# unmounted first (lazily when busy), and the store's read-only views are made writable.
# Nothing happens when DIR does not exist.
remove_tree() {
    [[ -e "$1" ]] || return 0
    fusermount3 -u "$1/mount" 2>/dev/null || fusermount3 -u -z "$1/mount" 2>/dev/null || true
    chmod -R u+w "$1" 2>/dev/null || true
    rm -rf "$1"
}

# fresh_dir DIR [SUBDIR...]: DIR recreated empty (remove_tree, then mkdir), with SUBDIRs.
fresh_dir() {
    local dir="$1"
    shift
    remove_tree "$dir"
    mkdir -p "$dir"
    local sub
    for sub in "$@"; do mkdir -p "$dir/$sub"; done
}

# temp_bench_dir: make a new /tmp/tstore-bench-XXXXXX, set `bench_dir` to its path, and
# remove it (remove_tree) when the script exits (an EXIT trap: the script's own shell, not a
# $(...) subshell).
temp_bench_dir() {
    bench_dir="$(mktemp -d /tmp/tstore-bench-XXXXXX)"
    # shellcheck disable=SC2064 # expand now: the trap removes this very dir
    trap "remove_tree '$bench_dir'" EXIT
}

# isolate_env DIR: commands run from here on see only DIR: HOME=DIR/home,
# XDG_DATA_HOME/XDG_CONFIG_HOME/XDG_CACHE_HOME=DIR/xdg/data|config|cache (all created),
# TSTORE_HOME=DIR/store, TSTORE_MOUNT=DIR/mount (not created), CHECKPOINT_DISABLE=1
# (terraform's version check is a network call), and none of the caller's
# TF_PLUGIN_CACHE_DIR, TF_DATA_DIR, TF_CLI_ARGS, TF_CLI_ARGS_init, TF_CLI_ARGS_plan,
# TF_CLI_CONFIG_FILE.
isolate_env() {
    mkdir -p "$1"/{home,xdg/data,xdg/config,xdg/cache}
    unset TF_PLUGIN_CACHE_DIR TF_DATA_DIR TF_CLI_ARGS TF_CLI_ARGS_init TF_CLI_ARGS_plan TF_CLI_CONFIG_FILE
    export HOME="$1/home"
    export XDG_DATA_HOME="$1/xdg/data" XDG_CONFIG_HOME="$1/xdg/config" XDG_CACHE_HOME="$1/xdg/cache"
    export TSTORE_HOME="$1/store" TSTORE_MOUNT="$1/mount"
    export CHECKPOINT_DISABLE=1
}

# fs_mirror_cli_config FILE MIRROR: write a CLI config whose only provider installation
# method is the filesystem mirror MIRROR, and export TF_CLI_CONFIG_FILE=FILE.
fs_mirror_cli_config() {
    cat >"$1" <<EOF
provider_installation {
  filesystem_mirror {
    path = "$2"
  }
}
EOF
    export TF_CLI_CONFIG_FILE="$1"
}

# null_mirror_packed MIRROR: the real null provider 2.1.2 linux_amd64 (from $peers) in the
# packed layout of MIRROR (an absolute path):
# registry.terraform.io/hashicorp/null/terraform-provider-null_2.1.2_linux_amd64.zip
# (-X: no extra attributes, -j: no directories in entry names, -D: no directory entries).
null_mirror_packed() {
    local dir="$1/registry.terraform.io/hashicorp/null"
    mkdir -p "$dir"
    (cd "$peers" && zip -q -X -j -D "$dir/terraform-provider-null_2.1.2_linux_amd64.zip" \
        terraform-provider-null_v2.1.2_x4)
}

# null_mirror_unpacked MIRROR: the same (after fetch_peers) in the unpacked layout:
# registry.terraform.io/hashicorp/null/2.1.2/linux_amd64/terraform-provider-null_v2.1.2_x4.
null_mirror_unpacked() {
    local dir="$1/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64"
    mkdir -p "$dir"
    install -m 0755 "$null_provider" "$dir/"
}

# now: the current time, in nanoseconds since the epoch.
now() { date +%s%N; }

# ms T0 T1: whole milliseconds from T0 to T1 (two `now`s).
ms() { echo $((($2 - $1) / 1000000)); }

# secs T0 T1: seconds from T0 to T1 (two `now`s), with four decimals.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b - a) / 1e9 }'; }

# ratio A B: A / B with one decimal (B = 0 counts as 1).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) b = 1; printf "%.1f", a / b }'; }

# result NAME BASELINE_LABEL TSTORE... -- BASELINE...: print the machine-readable line
# `scripts/bench/all` gathers into its table, from paired samples (seconds, same count, the i-th
# of each measured together):
#
#   RESULT NAME TSTORE_MEDIAN BASELINE_MEDIAN RATIO MIN MAX RUNS BASELINE_LABEL
#
# RATIO is the median over the pairs of baseline / tstore (above 1: tstore is faster), MIN and
# MAX its extremes.
result() {
    local name="$1" label="$2"
    shift 2
    python3 - "$name" "$label" "$@" <<'PY'
import statistics, sys
name, label, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
cut = rest.index("--")
ours, base = [float(x) for x in rest[:cut]], [float(x) for x in rest[cut + 1:]]
assert ours and len(ours) == len(base), "result: paired samples of the same count"
ratios = [b / o for o, b in zip(ours, base)]
print(f"RESULT {name} {statistics.median(ours):.6f} {statistics.median(base):.6f} "
      f"{statistics.median(ratios):.3f} {min(ratios):.3f} {max(ratios):.3f} {len(ours)} {label}")
PY
}
