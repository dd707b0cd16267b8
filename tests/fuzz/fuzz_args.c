/* fuzz_args.c — benchmark .args files and the option parser: the bytes as
 * CONFIGS/fuzz.args, read by kgl_benchmark_load_config; the words it
 * accepts then go through the CLI's option parser (train/args.c: --name
 * value, --name=value, whole numbers, numbers, seeds, flags), as kgl train
 * would read them. (make fuzz runs it with -close_fd_mask=2: its messages
 * are not shown, libFuzzer's and the sanitizers' are.) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "kgl.h"
#include "../../train/cli.h"

FUZZ_TARGET(args)
{
    /* a folder of this process's, made and removed around each input: a
       run (or the replay in make test) leaves nothing in /tmp */
    char dir[64], path[96], err[2048];
    snprintf(dir, sizeof dir, "/tmp/kgl_fuzz_args.%ld", (long)getpid());
    snprintf(path, sizeof path, "%s/fuzz.args", dir);
    mkdir(dir, 0700);
    FILE *f = fopen(path, "wb");
    if (!f) {
        rmdir(dir);
        return 0;
    }
    fwrite(data, 1, size, f);
    fclose(f);
    kgl_benchmark_dataset d;
    if (kgl_benchmark_load_config(&d, dir, "fuzz", err, sizeof err) == KGL_BENCHMARK_CONFIG_OK) {
        char *argv[KGL_BENCHMARK_MAX_ARGS + 1];
        argv[0] = "train";
        for (int i = 0; i < d.argc; i++) argv[i + 1] = d.argv[i];
        cli_args a;
        cli_init(&a, "train", d.argc + 1, argv);
        while (cli_next(&a)) {
            long l;
            double x;
            uint64_t u;
            if (cli_is(&a, "--steps") || cli_is(&a, "--dim") || cli_is(&a, "--eval-every")) {
                if (!cli_int(&a, 0, 100000000, &l)) break;
            } else if (cli_is(&a, "--lr") || cli_is(&a, "--dropout")) {
                if (!cli_double(&a, 0, 1e6, &x)) break;
            } else if (cli_is(&a, "--batch-seed")) {
                if (!cli_u64(&a, &u)) break;
            } else if (cli_is(&a, "--json") || cli_is(&a, "--quiet")) {
                if (!cli_flag(&a)) break;
            } else if (a.opt[0] == '-' && a.opt[1] == '-') {
                if (!cli_value(&a)) break;
            } else {
                cli_unknown(&a);
                break;
            }
        }
    }
    kgl_benchmark_dataset_free(&d);
    unlink(path);
    rmdir(dir);
    return 0;
}
