#!/usr/bin/env bash
# Builds every fuzz target and runs each for SECS seconds (default 60).
#
#   fuzz/run.sh [SECS] [TARGET...]
#
# Works from any directory and on a fresh machine (installs cargo-fuzz if
# `cargo fuzz` is missing; needs a C/C++ compiler for libFuzzer and zstd).
# Only the stable toolchain is needed: RUSTC_BOOTSTRAP=1 lets cargo-fuzz use
# the nightly flags it needs (-Zsanitizer=address and friends).
#
# Corpora grow in fuzz/corpus/<target>/ (gitignored); the committed inputs in
# fuzz/seeds/<target>/ and fuzz/regressions/<target>/ are read as extra corpus
# directories. On a crash (or OOM, timeout, leak) the input is minimised when
# possible and copied to fuzz/regressions/<target>/, the remaining targets
# still run, and the script exits 1. `cargo test --all-features` replays
# fuzz/regressions/ through codec/tests/fuzz_regressions.rs.
#
# -len_control=0: the properties read structured input with arbitrary, so
# long inputs (bigger schemas and snapshots) pay off from the start.
#
# Environment: TMIN=0 skips minimisation. Logs: fuzz/target/run-logs/.
set -euo pipefail

secs=${1:-60}
if ! [[ $secs =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
    echo "usage: $0 [SECS] [TARGET...]" >&2
    exit 2
fi
shift || true

cd "$(dirname "${BASH_SOURCE[0]}")"
export RUSTC_BOOTSTRAP=1
# With a nightly-looking rustc, the cc crate builds zstd (and libFuzzer) with
# -fsanitize=address too. GCC's use-after-scope checks then report false
# positives against rustc's ASan runtime (a constant local array in zstd_opt.c
# that GCC promotes to a global, poisoned as out of scope), so turn just that
# check off; overflow and use-after-free checks in the C code stay on.
export CFLAGS="${CFLAGS:+$CFLAGS }-fno-sanitize-address-use-after-scope"
export CXXFLAGS="${CXXFLAGS:+$CXXFLAGS }-fno-sanitize-address-use-after-scope"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

echo "== building fuzz targets"
cargo fuzz build

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi

logs=target/run-logs
mkdir -p "$logs"
failed=()
summary=()

for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    extra=()
    for d in "seeds/$t" "regressions/$t"; do
        if [ -d "$d" ]; then extra+=("$d"); fi
    done
    marker=$(mktemp)
    echo "== $t: ${secs}s"
    set +e
    cargo fuzz run "$t" "corpus/$t" "${extra[@]}" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -len_control=0 \
        -print_final_stats=1 2>&1 | tee "$logs/$t.log" |
        grep -E '^#[0-9]+.*(DONE|pulse)|==ERROR|panicked|SUMMARY|Test unit written'
    status=${PIPESTATUS[0]}
    set -e

    runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$logs/$t.log" | grep -Eo '[0-9]+$' | tail -1 || true)
    cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$logs/$t.log" | tail -1 || true)
    summary+=("$(printf '%-18s %10s execs  %s' "$t" "${runs:-?}" "${cov:-}")")

    if [ "$status" -ne 0 ]; then
        failed+=("$t")
        mkdir -p "regressions/$t"
        found=0
        while IFS= read -r -d '' f; do
            found=1
            name=$(basename "$f")
            known=""
            for r in "regressions/$t"/*; do
                if [ -f "$r" ] && cmp -s "$r" "$f"; then known=$r; fi
            done
            if [ -n "$known" ]; then
                echo "== $t: committed regression fuzz/$known still fails"
                continue
            fi
            keep=$f
            if [ "${TMIN:-1}" != 0 ] && [[ $name == crash-* ]]; then
                echo "== $t: minimising $name"
                tmin_marker=$(mktemp)
                cargo fuzz tmin -r 2000 "$t" "$f" >"$logs/$t.tmin.log" 2>&1 || true
                min=$(find "artifacts/$t" -name 'minimized-from-*' -newer "$tmin_marker" -type f | head -1)
                rm -f "$tmin_marker"
                if [ -n "$min" ]; then keep=$min; fi
            fi
            dest="regressions/$t/${name%%-*}-$(sha1sum "$keep" | cut -c1-16)"
            cp "$keep" "$dest"
            echo "== $t: saved $(wc -c <"$keep") bytes to fuzz/$dest"
        done < <(find "artifacts/$t" -type f \( -name 'crash-*' -o -name 'oom-*' \
            -o -name 'timeout-*' -o -name 'leak-*' \) -newer "$marker" -print0)
        if [ "$found" -eq 0 ]; then
            echo "== $t: failed (exit $status) without an artifact; see fuzz/$logs/$t.log"
        fi
    fi
    rm -f "$marker"
done

echo "== summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "== FAILED: ${failed[*]}"
    exit 1
fi
echo "== all targets ran ${secs}s without a failure"
