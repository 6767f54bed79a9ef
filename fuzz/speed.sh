#!/bin/sh
# speed.sh FUZZ_DIR SECONDS ROUNDS: the same harness under AFL++ in
# persistent mode (test cases in shared memory, no fork an input) and in
# fork mode (a fork and a read of stdin an input), alternating, SECONDS a
# run, ROUNDS times, from the same seeds. Prints the best execs/s of each and
# their ratio: the best round is the one least disturbed by other load on
# the machine, the same for both modes.
set -u
dir=$1
seconds=$2
rounds=$3
. fuzz/afl_env.sh

seeds "$dir/speed-in"
best_p=0
best_f=0
r=1
while [ $r -le "$rounds" ]; do
    for mode in persistent fork; do
        out=$dir/speed-$mode
        rm -rf "$out"
        afl-fuzz -V "$seconds" -i "$dir/speed-in" -o "$out" -- "$dir/afl-$mode" \
            > "$dir/speed-$mode.log" 2>&1 || { tail -n 20 "$dir/speed-$mode.log"; exit 1; }
        eps=$(stat "$out/default/fuzzer_stats" execs_per_sec)
        echo "fuzz-speed: round $r $mode $eps execs/s"
        if [ "$mode" = persistent ]; then
            best_p=$(awk -v a="$best_p" -v b="$eps" 'BEGIN { print (b > a) ? b : a }')
        else
            best_f=$(awk -v a="$best_f" -v b="$eps" 'BEGIN { print (b > a) ? b : a }')
        fi
    done
    r=$((r + 1))
done
echo "fuzz: persistent_execs_per_sec $best_p"
echo "fuzz: fork_execs_per_sec $best_f"
awk -v p="$best_p" -v f="$best_f" 'BEGIN { printf "fuzz: persistent_over_fork %.1f\n", p / f;
                                           exit !(p >= 10 * f) }' ||
    { echo "fuzz-speed: persistent mode is less than 10 times fork mode"; exit 1; }
