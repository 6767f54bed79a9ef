#!/bin/sh
# speed.sh FUZZ_DIR EXECS ROUNDS: the same harness under AFL++ in persistent
# mode (test cases in shared memory, no fork an input) and in fork mode (a
# fork and a read of stdin an input), alternating, ROUNDS times: EXECS
# executions a fork-mode run, ten times as many a persistent one
# (afl-fuzz -E). Two seed sets, side by side in the same rounds:
#
#   all        the whole corpus and the regression inputs (what make fuzz
#              starts from): tasks, channels and doors included, so many
#              inputs start a thread and hand each operation to it and back;
#   allocator  the region and chunk-cache profiles only (fills-*, reuse-*,
#              deep-*, zeros-*): no thread, little work an input, so the
#              figure is mostly AFL++'s own cost an execution in each mode.
#
# Two figures a mode, the best round of each: AFL++'s own execs/s (wall
# time), and executions per CPU second (user + system time of afl-fuzz and
# every process under it, the forked children included). The machine is
# shared, and other load stretches wall time, not CPU time: the gate, at
# least 10 times, is on the CPU figure of the whole corpus; the rest is
# printed beside it.
set -u
dir=$1
execs=$2
rounds=$3
. fuzz/afl_env.sh

seeds "$dir/speed-in-all"
rm -rf "$dir/speed-in-allocator"
mkdir -p "$dir/speed-in-allocator"
cp fuzz/corpus/fills-* fuzz/corpus/reuse-* fuzz/corpus/deep-* fuzz/corpus/zeros-* \
    "$dir/speed-in-allocator"/
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
for set in all allocator; do
    for mode in persistent fork; do
        eval "wall_${set}_$mode=0 cpu_${set}_$mode=0"
    done
done
r=1
while [ "$r" -le "$rounds" ]; do
    for set in all allocator; do
        for mode in persistent fork; do
            out=$dir/speed-$set-$mode
            n=$execs
            [ "$mode" = persistent ] && n=$((execs * 10))
            rm -rf "$out"
            /usr/bin/time -f "%U %S" -o "$out.time" \
                afl-fuzz -E "$n" -i "$dir/speed-in-$set" -o "$out" -- "$dir/afl-$mode" \
                > "$out.log" 2>&1 || { tail -n 20 "$out.log"; exit 1; }
            done_=$(afl_stat "$out/default/fuzzer_stats" execs_done)
            wall=$(afl_stat "$out/default/fuzzer_stats" execs_per_sec)
            cpu=$(awk -v n="$done_" '{ printf "%.0f", n / ($1 + $2) }' "$out.time")
            echo "fuzz-speed: round $r $set $mode: $done_ execs, $wall execs/s, $cpu execs/CPU-s"
            eval "wall_${set}_$mode=\$(best \$wall_${set}_$mode $wall)"
            eval "cpu_${set}_$mode=\$(best \$cpu_${set}_$mode $cpu)"
        done
    done
    r=$((r + 1))
done
for set in all allocator; do
    eval "wp=\$wall_${set}_persistent wf=\$wall_${set}_fork"
    eval "cp=\$cpu_${set}_persistent cf=\$cpu_${set}_fork"
    echo "fuzz: $set persistent_execs_per_sec $wp, fork_execs_per_sec $wf"
    echo "fuzz: $set persistent_execs_per_cpu_sec $cp, fork_execs_per_cpu_sec $cf"
    awk -v p="$wp" -v f="$wf" -v s="$set" 'BEGIN { printf "fuzz: %s persistent_over_fork_wall %.1f\n", s, p / f }'
    awk -v p="$cp" -v f="$cf" -v s="$set" 'BEGIN { printf "fuzz: %s persistent_over_fork_cpu %.1f\n", s, p / f }'
done
awk -v p="$cpu_all_persistent" -v f="$cpu_all_fork" 'BEGIN { exit !(p >= 10 * f) }' ||
    { echo "fuzz-speed: persistent mode is less than 10 times fork mode on the whole corpus"; exit 1; }
