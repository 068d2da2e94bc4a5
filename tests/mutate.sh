#!/bin/bash
# mutate.sh: check that tests can fail.  Applies a one-line change (a mutant)
# to a source file, rebuilds what the named tests need in a build directory,
# runs those tests, says KILLED (they went red) or SURVIVED (they stayed
# green), and puts the file back exactly as it was.  See docs/testing.md,
# "Checking that the tests can fail".
#
#   tests/mutate.sh [OPTIONS] FILE LINE SED-EXPR TEST...
#   tests/mutate.sh [OPTIONS] -f MUTANTS [-f MUTANTS...]
#
# FILE is relative to the source directory; LINE is a line number; SED-EXPR
# is a sed command applied to that line only (usually s/OLD/NEW/); each TEST
# is a name in the Makefile's TESTS, e.g. tests/unit/settle.test.  A MUTANTS file
# holds one mutant a line:
#
#   FILE LINE SED-EXPR TESTS
#
# where TESTS, the last field, is a comma-separated list without spaces and
# SED-EXPR is everything between LINE and TESTS (it may hold spaces).  Blank
# lines and lines starting with # are skipped.
#
# Options:
#   -B DIR   the build directory (default: $JET_BUILDDIR, else .)
#   -t SECS  a test run longer than this is stopped and counts as KILLED
#            (default 300)
#   -n       skip the baseline (the unmutated tests must pass first)
#   -k       keep going after a mutant that is stale or does not build
#   -c       only check that each mutant applies (no build, no tests)
#   -S       work on a private copy: copy the source tree (without its build
#            directories and .git) to a temporary directory, configure it as
#            the build directory was configured, and mutate only the copy
#
# Exit status: 0 every mutant was killed, 1 at least one survived, 2 an
# error (bad usage, a red baseline, a stale mutant, a failed restore).
#
# The source tree may be shared: the file is changed only while the mutant
# compiles, then put back byte for byte with its old modification time so
# the tests still run the mutant's objects; once the tests are done it is
# touched, so any build that compiled the mutant meanwhile compiles it again.
# If the file changed under us, only our line is put back, or nothing is and
# the saved copy is named.
set -u

builddir=${JET_BUILDDIR:-.}
timeout_s=300
baseline=1
keep_going=0
snapshot=0
check_only=0
files=()

usage() {
    sed -n '8,9p' "$0" | sed 's/^# *//' >&2
    echo "see the comment at the top of $0" >&2
    exit 2
}

while getopts 'B:t:f:nkSch' opt; do
    case $opt in
    B) builddir=$OPTARG ;;
    t) timeout_s=$OPTARG ;;
    f) files+=("$OPTARG") ;;
    n) baseline=0 ;;
    k) keep_going=1 ;;
    S) snapshot=1 ;;
    c) check_only=1 baseline=0 snapshot=0 ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || [ ${#files[@]} -gt 0 ] || usage

builddir=$(cd "$builddir" 2>/dev/null && pwd) || { echo "mutate: no build directory" >&2; exit 2; }
[ -f "$builddir/Makefile" ] || { echo "mutate: $builddir has no Makefile (run configure)" >&2; exit 2; }
srcdir=$(sed -n 's/^abs_top_srcdir = //p' "$builddir/Makefile")
[ -d "$srcdir" ] || { echo "mutate: cannot read abs_top_srcdir from $builddir/Makefile" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/jethost-mutate.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

# --- the mutants: arrays m_file, m_line, m_sed, m_tests ----------------------
m_file=() m_line=() m_sed=() m_tests=()
add_mutant() { m_file+=("$1"); m_line+=("$2"); m_sed+=("$3"); m_tests+=("$4"); }

if [ ${#files[@]} -gt 0 ]; then
    [ $# -eq 0 ] || usage
    for f in "${files[@]}"; do
        [ -r "$f" ] || { echo "mutate: cannot read $f" >&2; exit 2; }
        n=0
        while IFS= read -r l || [ -n "$l" ]; do
            n=$((n + 1))
            case $l in '' | '#'*) continue ;; esac
            read -r mf ml rest <<<"$l"
            rest=${rest%"${rest##*[![:space:]]}"}        # trailing blanks
            mt=${rest##*[[:space:]]}
            ms=${rest%[[:space:]]*}
            ms=${ms%"${ms##*[![:space:]]}"}
            if [ -z "$mf" ] || ! [[ $ml =~ ^[0-9]+$ ]] || [ -z "$ms" ] || [ "$ms" = "$rest" ]; then
                echo "mutate: $f:$n: want FILE LINE SED-EXPR TESTS" >&2
                exit 2
            fi
            add_mutant "$mf" "$ml" "$ms" "${mt//,/ }"
        done <"$f"
    done
else
    [ $# -ge 4 ] || usage
    [[ $2 =~ ^[0-9]+$ ]] || usage
    add_mutant "$1" "$2" "$3" "${*:4}"
fi
[ ${#m_file[@]} -gt 0 ] || { echo "mutate: no mutants" >&2; exit 2; }

# --- a private copy (-S) ---------------------------------------------------------
if [ $snapshot -eq 1 ]; then
    snap=$work/src
    mkdir "$snap" "$work/build" || exit 2
    excl=(--exclude=./.git --exclude=./autom4te.cache)
    for d in "$srcdir"/*/; do
        [ -f "$d/config.status" ] && excl+=("--exclude=./$(basename "$d")")
    done
    tar -C "$srcdir" "${excl[@]}" -cf - . | tar -C "$snap" -xf - || exit 2
    eval "set -- $("$builddir/config.status" --config)"
    if ! (cd "$work/build" && "$snap/configure" -q "$@") >"$work/configure.log" 2>&1; then
        tail -n 20 "$work/configure.log" >&2
        echo "mutate: configuring the copy failed" >&2
        exit 2
    fi
    echo "private copy of $srcdir in $snap, built in $work/build"
    builddir=$work/build
    srcdir=$snap
fi

# --- restoring, whatever happens ---------------------------------------------
cur_src=''        # the file now holding a mutant ('' when none)
cur_saved=''      # its original, copied aside with cp -p
cur_mutant=''     # what we wrote into it
cur_line=0
touch_after=''    # a file restored early, to touch once its tests are done

restore() {       # puts cur_src back; returns non-zero when it could not
    [ -n "$cur_src" ] || return 0
    local src=$cur_src rc=0
    if cmp -s "$src" "$cur_mutant"; then
        cat "$cur_saved" >"$src" && touch -r "$cur_saved" "$src" || rc=1
    else
        # Someone edited the file meanwhile: put back our line only, if it is
        # still ours, and keep their change.
        local want have
        want=$(sed -n "${cur_line}p" "$cur_mutant")
        have=$(sed -n "${cur_line}p" "$src")
        if [ "$want" = "$have" ]; then
            local orig=$work/line
            sed -n "${cur_line}p" "$cur_saved" >"$orig"
            sed -i -e "${cur_line}{r $orig" -e 'd}' "$src" || rc=1
            echo "mutate: $src changed during the run; only line $cur_line was put back" >&2
        else
            rc=1
        fi
    fi
    if [ $rc -ne 0 ]; then
        local keep=$srcdir/.mutate-saved.$$
        cp -p "$cur_saved" "$keep"
        echo "mutate: COULD NOT RESTORE $src: its original is in $keep" >&2
    else
        touch_after=$src
    fi
    cur_src=''
    return $rc
}

finish() {
    restore
    [ -z "$touch_after" ] || touch "$touch_after"
    touch_after=''
    rm -rf "$work"
}
trap 'finish' EXIT
trap 'echo "mutate: interrupted" >&2; finish; trap - EXIT; exit 130' INT TERM HUP

# --- building and testing ------------------------------------------------------
mk() { make -C "$builddir" --no-print-directory "$@"; }

build() {         # $1: tests; output to $work/build.log
    # The daemon, the plugins and the mock library (some tests run them), the
    # fixtures, `jethost mock` alone (the mock's tests run it) and the named
    # tests: not the other test programs.
    local ltlibs
    ltlibs=$(mk -s -f Makefile -f - print-ltlibs <<<'print-ltlibs: ; @echo $(check_LTLIBRARIES)' 2>/dev/null)
    { mk all && mk $ltlibs tests/mock-cli $1; } >"$work/build.log" 2>&1
}

run_tests() {     # $1: tests; output to $work/test.log; 0 green, 1 red
    # check-TESTS with the check_* lists emptied runs the named tests without
    # first relinking every test program.
    timeout -k 10 "$timeout_s" make -C "$builddir" --no-print-directory check-TESTS \
        TESTS="$1" check_PROGRAMS= check_LTLIBRARIES= check_SCRIPTS= check_DATA= \
        >"$work/test.log" 2>&1
    local rc=$?
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "TIMEOUT: after ${timeout_s}s" >>"$work/test.log"
    [ $rc -eq 0 ]
}

first_failure() {
    grep -m1 -E '^(FAIL|ERROR|XPASS|TIMEOUT):' "$work/test.log" | cut -c1-120
}

if [ $baseline -eq 1 ]; then
    all_tests=$(printf '%s\n' ${m_tests[@]} | sort -u | tr '\n' ' ')
    if ! build "$all_tests"; then
        tail -n 30 "$work/build.log" >&2
        echo "mutate: the unmutated tree does not build in $builddir" >&2
        exit 2
    fi
    if ! run_tests "$all_tests"; then
        grep -E '^(FAIL|ERROR|XPASS|TIMEOUT):' "$work/test.log" >&2
        echo "mutate: baseline red: $all_tests fail without a mutant" >&2
        exit 2
    fi
    echo "baseline: $all_tests pass"
fi

killed=0 survived=0 bad=0
survivors=()
for i in "${!m_file[@]}"; do
    f=${m_file[$i]} ln=${m_line[$i]} sx=${m_sed[$i]} t=${m_tests[$i]}
    src=$srcdir/$f
    what="$f:$ln  $sx  [$t]"
    if [ ! -f "$src" ]; then
        echo "STALE     $what (no such file)"; bad=$((bad + 1))
        [ $keep_going -eq 1 ] && continue; exit 2
    fi

    saved=$work/saved
    mutant=$work/mutant
    cp -p "$src" "$saved" || exit 2
    if ! sed -e "${ln}{" -e "$sx" -e '}' "$saved" >"$mutant" 2>"$work/sed.log"; then
        echo "STALE     $what (sed: $(head -n1 "$work/sed.log"))"; bad=$((bad + 1))
        [ $keep_going -eq 1 ] && continue; exit 2
    fi
    changed=$(diff "$saved" "$mutant" | grep -c '^[<>]')
    if [ "$changed" -ne 2 ] || [ "$(wc -l <"$saved")" -ne "$(wc -l <"$mutant")" ]; then
        # Lines above it moved: when the expression changes exactly one
        # line of the file, that line is the mutant's, and it is said.
        moved=$(sed -e "$sx" "$saved" 2>/dev/null | diff "$saved" - | sed -n 's/^\([0-9][0-9]*\)c[0-9][0-9]*$/\1/p')
        if [ -n "$moved" ] && [ "$(printf '%s\n' "$moved" | wc -l)" -eq 1 ] &&
           sed -e "${moved}{" -e "$sx" -e '}' "$saved" >"$mutant" 2>/dev/null; then
            echo "MOVED     $what: now line $moved (update the mutant's line)"
            ln=$moved
            what="$f:$ln  $sx  [$t]"
        else
            echo "STALE     $what (line $ln is not what the mutant expects: $(sed -n "${ln}p" "$saved" | sed 's/^[[:space:]]*//'))"
            bad=$((bad + 1))
            [ $keep_going -eq 1 ] && continue; exit 2
        fi
    fi

    if [ $check_only -eq 1 ]; then
        echo "APPLIES   $what: $(diff "$saved" "$mutant" | sed -n 's/^> *//p')"
        continue
    fi
    cur_src=$src cur_saved=$saved cur_mutant=$mutant cur_line=$ln
    cat "$mutant" >"$src"
    build "$t"; built=$?
    restore || exit 2                      # the objects keep the mutant
    if [ $built -ne 0 ]; then
        touch "$touch_after"; touch_after=''
        if grep -q -F "${f##*/}:$ln:" "$work/build.log"; then
            # The compiler (with --enable-werror, a warning) caught it.
            echo "NOBUILD   $what"
            grep -m2 -E ': (error|warning):' "$work/build.log" | sed 's/^/          /'
        else
            echo "ERROR     $what: the build failed elsewhere:"
            grep -m3 -E ': (error|warning):|\*\*\*' "$work/build.log" | sed 's/^/          /'
        fi
        bad=$((bad + 1))
        [ $keep_going -eq 1 ] && continue; exit 2
    fi
    if run_tests "$t"; then
        echo "SURVIVED  $what"
        survived=$((survived + 1))
        survivors+=("$what")
    else
        echo "KILLED    $what  ($(first_failure))"
        killed=$((killed + 1))
    fi
    touch "$touch_after"; touch_after=''
done

[ $check_only -eq 0 ] || { [ $bad -eq 0 ] && exit 0; exit 2; }

# Leave the build directory built from the real sources.
all_tests=$(printf '%s\n' ${m_tests[@]} | sort -u | tr '\n' ' ')
build "$all_tests" || echo "mutate: rebuilding $builddir failed (see make)" >&2

echo "mutants: $((killed + survived + bad)), killed $killed, survived $survived, stale or not built $bad"
for s in "${survivors[@]}"; do echo "  survivor: $s"; done
[ $bad -eq 0 ] || exit 2
[ $survived -eq 0 ] || exit 1
exit 0
