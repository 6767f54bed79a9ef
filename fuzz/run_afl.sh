#!/bin/sh
# run_afl.sh FUZZ_DIR SECONDS: runs AFL++ on the persistent harness for
# SECONDS, with the CmpLog build beside it and the dictionary, from the seed
# corpus and the regression inputs; then replays every input it kept
# through the ASan build. Prints execs, execs/s and edges covered.
# Each crash (of the fuzzer, or of the ASan replay) is minimised with
# afl-tmin into fuzz/regressions/, where make check replays it from then
# on; a hang is kept under FUZZ_DIR/hangs/. Then every crash and hang gets
# its stack, replayed under gdb (scripts/stacks.py triage), one entry a
# distinct stack. Exits non-zero if anything crashed or hung, or if
# afl-fuzz failed.
#
# A hang is an input that runs past FUZZ_HANG_MS (500 ms by default), a
# guard, not a speed bound: afl-fuzz would otherwise calibrate it to 20 ms
# from the corpus, and on this shared machine an input that spawns tasks
# now and then takes longer than that without hanging.
set -u
dir=$1
seconds=$2
. fuzz/afl_env.sh

out=$dir/afl
seeds "$dir/afl-in"
rm -rf "$out" "$dir/hangs"
echo "fuzz: AFL++ for $seconds s on $dir/afl-persistent (CmpLog: $dir/afl-cmplog), log $dir/afl.log"
afl-fuzz -V "$seconds" -t "${FUZZ_HANG_MS:-500}" -i "$dir/afl-in" -o "$out" -x fuzz/ops.dict -c "$dir/afl-cmplog" \
    -- "$dir/afl-persistent" > "$dir/afl.log" 2>&1
status=$?
stats=$out/default/fuzzer_stats
if [ $status -ne 0 ] || [ ! -f "$stats" ]; then
    tail -n 20 "$dir/afl.log"
    echo "fuzz: afl-fuzz failed (status $status)"
    exit 1
fi

# keep FILE WHY: minimises a failing input into fuzz/regressions/, and keeps
# it as found under FUZZ_DIR/triage-crashes/ for the triage below.
crashes=0
rm -rf "$dir/triage-crashes"
mkdir -p "$dir/triage-crashes"
keep() {
    crashes=$((crashes + 1))
    cp "$1" "$dir/triage-crashes/"
    name=crash-$(sha1sum < "$1" | cut -c1-12)
    afl-tmin -i "$1" -o "fuzz/regressions/$name" -- "$dir/afl-asan" > /dev/null 2>&1 ||
        cp "$1" "fuzz/regressions/$name"
    echo "fuzz: $2, kept minimised as fuzz/regressions/$name:"
    "$dir/afl-asan" "fuzz/regressions/$name" 2>&1 | grep -m1 -E 'refrt|ERROR|runtime error' |
        sed 's/^/  /'
}
for f in "$out"/default/crashes/id:*; do
    [ -f "$f" ] && keep "$f" "crash found by afl-fuzz"
done
replayed=0
for f in "$out"/default/queue/id:*; do
    [ -f "$f" ] || continue
    replayed=$((replayed + 1))
    "$dir/afl-asan" "$f" > /dev/null 2>&1 || keep "$f" "input fails under ASan"
done
hangs=0
for f in "$out"/default/hangs/id:*; do
    [ -f "$f" ] || continue
    hangs=$((hangs + 1))
    mkdir -p "$dir/hangs"
    cp "$f" "$dir/hangs/"
done

echo "fuzz: execs $(afl_stat "$stats" execs_done)"
echo "fuzz: execs/s $(afl_stat "$stats" execs_per_sec)"
echo "fuzz: edges $(afl_stat "$stats" edges_found) of $(afl_stat "$stats" total_edges)"
echo "fuzz: corpus $(afl_stat "$stats" corpus_count), stability $(afl_stat "$stats" stability)"
echo "fuzz: $replayed inputs replayed under ASan"
echo "fuzz: crashes $crashes, hangs $hangs"
# The triage: each crash and hang replayed under gdb with the ASan build
# (fork mode, the input as its argument), one line a distinct stack (the
# hash of its top frames), then "triage: N crashes, M hangs".
ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 "${PYTHON:-python3}" scripts/stacks.py triage \
    --harness "$dir/afl-asan" --crashes "$dir/triage-crashes" --hangs "$out/default/hangs"
[ $crashes -eq 0 ] && [ $hangs -eq 0 ]
