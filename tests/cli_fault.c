/* cli_fault.c — runs tests/fault_kill_save.sh: `kgl train --save` killed at
 * random moments (24 times, SIGKILL and SIGTERM); the checkpoint is always
 * the old or the new one, loadable, and no temporary outlives the next save. */
#include "test.h"

TEST(cli_fault_kill_during_save)
{
    static char out[65536], err[65536];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sh tests/fault_kill_save.sh '%s' '%s' 24", T->kgl, T->tmp);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0)) printf("%s%s", out, err);
}
