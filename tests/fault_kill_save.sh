#!/bin/sh
# fault_kill_save.sh KGL DIR [N] — kills `kgl train --resume F --save F` at
# random moments (N times, default 24; SIGKILL and SIGTERM in turn) and checks
# that the checkpoint at F is always the old or the new one (after SIGTERM,
# which stops after the current step and saves it, any step between) and
# loadable, and
# that no temporary file (F.PID.R.tmp) outlives the next save. Run by
# `make test` (tests/cli_fault.c); prints one line per failure, exits 1 on any.
set -u
kgl=$1
dir=$2
n=${3:-24}
ck=$dir/fault.st
fail=0
step_of() { "$kgl" eval --checkpoint "$1" --json 2>/dev/null | sed -n 's/^{"step":\([0-9]*\),.*/\1/p'; }
tmps() { ls "$ck".*.tmp 2>/dev/null | wc -l; }

rm -f "$ck" "$ck".*.tmp
"$kgl" train --dim 64 --ffn 256 --steps 1 --quiet --save "$ck" >/dev/null || { echo "fault: first save failed"; exit 1; }
i=1
while [ "$i" -le "$n" ]; do
    old=$(step_of "$ck")
    steps=$((1 + i % 4))
    sig=KILL
    [ $((i % 2)) = 0 ] && sig=TERM
    delay=$(awk -v s="$i$$" 'BEGIN { srand(s); printf "%.3f", rand() * 0.08 }')
    "$kgl" train --steps "$steps" --quiet --resume "$ck" --save "$ck" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    new=$(step_of "$ck")
    if [ -z "$new" ]; then
        echo "fault $i: SIG$sig after ${delay}s (exit $rc): $ck does not load"
        fail=1
    elif [ "$sig" = KILL ] && [ "$new" != "$old" ] && [ "$new" != $((old + steps)) ]; then
        echo "fault $i: SIGKILL after ${delay}s (exit $rc): step $new is neither the old $old nor the new $((old + steps))"
        fail=1
    elif [ "$sig" = TERM ] && { [ "$new" -lt "$old" ] || [ "$new" -gt $((old + steps)) ]; }; then
        # SIGTERM stops after the current step and saves it: any step from old to new
        echo "fault $i: SIGTERM after ${delay}s (exit $rc): step $new is not from the old $old to the new $((old + steps))"
        fail=1
    elif [ "$new" != "$old" ] && [ "$(tmps)" != 0 ]; then
        echo "fault $i: SIG$sig after ${delay}s (exit $rc): a save happened but temporaries remain: $(ls "$ck".*.tmp)"
        fail=1
    fi
    i=$((i + 1))
done
# one save that is not interrupted removes what every SIGKILL left
"$kgl" train --steps 1 --quiet --resume "$ck" --save "$ck" >/dev/null || { echo "fault: last save failed"; fail=1; }
if [ "$(tmps)" != 0 ]; then
    echo "fault: temporaries outlived the last save: $(ls "$ck".*.tmp)"
    fail=1
fi
exit $fail
