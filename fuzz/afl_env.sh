# afl_env.sh: what afl-fuzz needs to run unattended in a container, sourced
# by run_afl.sh and speed.sh.
#
# - AFL_SKIP_CPUFREQ: the container cannot read or set the CPU governor.
# - AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES: core_pattern is the host's; afl-fuzz
#   would refuse to start if it pipes core dumps to a helper.
# - AFL_NO_AFFINITY: other jobs share the two cores; do not pin one.
# - AFL_NO_UI: no terminal; a status line now and then instead.
# - AFL_SKIP_CRASHES: an input of the corpus that crashes is reported, not fatal
#   to the start (the replay in make check has already named it).
export AFL_SKIP_CPUFREQ=1
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_AFFINITY=1
export AFL_NO_UI=1
export AFL_SKIP_CRASHES=1

# afl_stat FILE KEY: a value of afl-fuzz's fuzzer_stats.
afl_stat() {
    sed -n "s/^$2 *: *//p" "$1"
}

# seeds DIR: a fresh input folder with the corpus and the regression inputs.
seeds() {
    rm -rf "$1"
    mkdir -p "$1"
    cp fuzz/corpus/* "$1"/
    for f in fuzz/regressions/*; do
        [ -f "$f" ] && [ "${f##*/}" != README.md ] && cp "$f" "$1/regression-${f##*/}"
    done
    return 0
}
