#!/bin/sh
# speed.sh FUZZ_DIR EXECS ROUNDS: the same harness under AFL++ in persistent
# mode (test cases in shared memory, no fork an input) and in fork mode (a
# fork and a read of stdin an input), alternating, from the same seeds,
# ROUNDS times: EXECS executions a fork-mode run, ten times as many a
# persistent one (afl-fuzz -E).
#
# Two figures a mode, the best round of each: AFL++'s own execs/s (wall
# time), and executions per CPU second (user + system time of afl-fuzz and
# every process under it, the forked children included). The machine is
# shared, and other load stretches wall time, not CPU time: the gate, at
# least 10 times, is on the CPU figure; the wall figure is printed beside.
set -u
dir=$1
execs=$2
rounds=$3
. fuzz/afl_env.sh

seeds "$dir/speed-in"
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
wall_p=0 wall_f=0 cpu_p=0 cpu_f=0
r=1
while [ "$r" -le "$rounds" ]; do
    for mode in persistent fork; do
        out=$dir/speed-$mode
        n=$execs
        [ "$mode" = persistent ] && n=$((execs * 10))
        rm -rf "$out"
        /usr/bin/time -f "%U %S" -o "$dir/speed-$mode.time" \
            afl-fuzz -E "$n" -i "$dir/speed-in" -o "$out" -- "$dir/afl-$mode" \
            > "$dir/speed-$mode.log" 2>&1 || { tail -n 20 "$dir/speed-$mode.log"; exit 1; }
        done_=$(afl_stat "$out/default/fuzzer_stats" execs_done)
        wall=$(afl_stat "$out/default/fuzzer_stats" execs_per_sec)
        cpu=$(awk -v n="$done_" '{ printf "%.0f", n / ($1 + $2) }' "$dir/speed-$mode.time")
        echo "fuzz-speed: round $r $mode: $done_ execs, $wall execs/s, $cpu execs/CPU-s"
        if [ "$mode" = persistent ]; then
            wall_p=$(best "$wall_p" "$wall") cpu_p=$(best "$cpu_p" "$cpu")
        else
            wall_f=$(best "$wall_f" "$wall") cpu_f=$(best "$cpu_f" "$cpu")
        fi
    done
    r=$((r + 1))
done
echo "fuzz: persistent_execs_per_sec $wall_p"
echo "fuzz: fork_execs_per_sec $wall_f"
echo "fuzz: persistent_execs_per_cpu_sec $cpu_p"
echo "fuzz: fork_execs_per_cpu_sec $cpu_f"
awk -v p="$wall_p" -v f="$wall_f" 'BEGIN { printf "fuzz: persistent_over_fork_wall %.1f\n", p / f }'
awk -v p="$cpu_p" -v f="$cpu_f" 'BEGIN { printf "fuzz: persistent_over_fork_cpu %.1f\n", p / f;
                                          exit !(p >= 10 * f) }' ||
    { echo "fuzz-speed: persistent mode is less than 10 times fork mode"; exit 1; }
