/* kgl/engine.h — the autodiff engine: an explicit RNG, the arena, tensors and
 * the tape, the ops (each with its forward, backward and gradient-check spec
 * in src/engine/ops.c), the op registry and the gradient checker, parameters
 * and the optimisers. It knows nothing of knowledge graphs.
 *
 * Reading order: RNG -> arena -> tensor and tape -> ops -> registry and
 * checks -> parameters -> optimiser.
 *
 * Matrices are row-major; a vector is a 1 x n matrix; a scalar is 1 x 1.
 *
 * Precision. The library is built in one floating-point type, kgl_real:
 * IEEE double by default, float when compiled with -DKGL_FLOAT32 (the
 * Makefile builds both: build/libkgl.a with the program build/kgl, and
 * build/f32/libkgl.a with build/kgl-f32, which `kgl --precision f32` runs).
 * Tensors, parameters, gradients and Adam's moments are kgl_real; scalars in
 * the API (learning rate, scale factors, the loss a caller reads) stay double,
 * and so does every reduction's accumulator (README, "The model, exactly",
 * "Precision"). The two builds share their names, so a program links one. */
#ifndef KGL_ENGINE_H
#define KGL_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef KGL_FLOAT32
typedef float kgl_real;
#define KGL_PRECISION "f32"
#define KGL_REAL_DIGITS 9 /* significant digits that read back to the same kgl_real */
#else
typedef double kgl_real;
#define KGL_PRECISION "f64"
#define KGL_REAL_DIGITS 17
#endif

/* ------------------------------------------------------------------ RNG --
 * Explicit, seeded, no global state. xoshiro256** seeded through splitmix64
 * (the seeding its authors recommend). Every draw is documented so that a
 * reference implementation can reproduce our initial parameters:
 *   uniform  = (next() >> 11) * 2^-53                      in [0, 1)
 *   normal   = sqrt(-2 ln(1 - u1)) * cos(2 pi u2)          two uniforms per draw
 *   below(n) = Lemire's multiply-shift with rejection       in [0, n)          */
typedef struct kgl_rng {
    uint64_t s[4];
} kgl_rng;

void kgl_rng_seed(kgl_rng *rng, uint64_t seed);
uint64_t kgl_rng_next(kgl_rng *rng);
double kgl_rng_uniform(kgl_rng *rng);
/* keep[i] = (kgl_rng_uniform(rng) >= p) for i = 0 … n − 1, the same draws in the same order: a dropout mask. */
void kgl_rng_keep_mask(kgl_rng *rng, unsigned char *keep, size_t n, double p);
/* The state n draws on, as if n draws were made (jump-ahead: the stream's
 * characteristic polynomial, rng.c), in microseconds. */
void kgl_rng_advance(kgl_rng *rng, uint64_t n);
/* kgl_rng_keep_mask on the pool's threads (NULL: here): the same mask and the
 * same state after it, each thread drawing a block from a jumped copy. */
typedef struct kgl_pool kgl_pool; /* the threads, below */
void kgl_rng_keep_mask_on(kgl_pool *pool, kgl_rng *rng, unsigned char *keep, size_t n, double p);
double kgl_rng_normal(kgl_rng *rng);
uint32_t kgl_rng_below(kgl_rng *rng, uint32_t n);
/* perm = a uniform permutation of 0 … n − 1: the identity, then Fisher–Yates
 * from the end, swapping k with kgl_rng_below(rng, k + 1) for k = n − 1 … 1. */
void kgl_rng_permutation(kgl_rng *rng, int *perm, int n);

/* -------------------------------------------------------- out of memory --
 * When an allocation fails, the library calls the handler set here with what
 * it was allocating and the bytes it asked for. The handler must not return
 * (it exits, or longjmps); the kgl program's prints "kgl: out of memory: ..."
 * and exits with status 2. Without one, the library prints "kgl: out of
 * memory: WHAT (N bytes)" and aborts. Set it once, before any other call.
 * The library allocates through the functions below, which a program may use
 * too: malloc, calloc, realloc and strdup that never return NULL (0 bytes
 * → 1); the short forms name the calling function as `what`. */
typedef void (*kgl_out_of_memory_handler)(const char *what, size_t bytes);
void kgl_set_out_of_memory_handler(kgl_out_of_memory_handler handler);
void *kgl_xmalloc_for(size_t n, const char *what);
void *kgl_xcalloc_for(size_t n, size_t size, const char *what);
void *kgl_xrealloc_for(void *p, size_t n, const char *what);
#define kgl_xmalloc(n) kgl_xmalloc_for((n), __func__)
#define kgl_xcalloc(n, size) kgl_xcalloc_for((n), (size), __func__)
char *kgl_strdup(const char *s);

/* ---------------------------------------------------------------- arena --
 * Activations and the tape live in an arena: a bump allocator over a chain of
 * blocks that is reset, not freed, between steps. While the first step runs
 * the chain grows; a reset goes back to its first block and keeps every
 * block, so from then on a step of the same shape lands in the same blocks:
 * it calls malloc zero times and touches no page for the first time.
 * `mallocs` counts the blocks ever requested (tests read it). */
typedef struct kgl_arena_block kgl_arena_block;
typedef struct kgl_arena {
    kgl_arena_block *blocks; /* the chain, oldest first */
    kgl_arena_block *current; /* the block allocations come from now */
    kgl_arena_block *last;   /* the end of the chain */
    size_t used;             /* bytes handed out since the last reset */
    size_t high_water;       /* most bytes ever in use between two resets */
    size_t mallocs;          /* blocks obtained from malloc so far */
} kgl_arena;

void *kgl_arena_alloc(kgl_arena *a, size_t bytes);  /* 64-byte aligned, not zeroed */
void *kgl_arena_zalloc(kgl_arena *a, size_t bytes); /* zeroed */
void kgl_arena_reset(kgl_arena *a);
void kgl_arena_free(kgl_arena *a);

/* --------------------------------------------------------------- tensor --
 * A dense row-major matrix of doubles. `grad` is NULL for a tensor that needs
 * no gradient; otherwise it has the same shape as `data`. An op's output
 * starts with its gradient unset (grad_unset: not yet written, to be read
 * as zeros; see kgl_grad_claim); after kgl_backward every gradient is set. */
typedef struct kgl_tensor {
    int rows, cols;
    kgl_real *data;
    kgl_real *grad;
    bool grad_unset;
} kgl_tensor;

static inline size_t kgl_numel(const kgl_tensor *t) { return (size_t)t->rows * (size_t)t->cols; }
/* *m = max(*m, v), where a NaN, once in, stays (nothing compares above it), so that a check on *m fails. */
static inline void kgl_keep_max(double *m, double v)
{
    if (!(v <= *m) && *m == *m) *m = v;
}
/* Copies between kgl_real and double arrays (exact to double; to float, rounded
 * to nearest): results the caller keeps in double, inputs it gives in double.
 * Never memcpy between the two, whose sizes differ in the f32 build. */
void kgl_real_from_double(kgl_real *dst, const double *src, size_t n);
void kgl_real_to_double(double *dst, const kgl_real *src, size_t n);

/* -------------------------------------------------------------- machine --
 * What this process may use of the machine's memory (src/engine/machine.c),
 * read before a run allocates: the least of what this machine has
 * available (MemAvailable), what its address-space limit leaves (RLIMIT_AS,
 * ulimit -v, less what it maps already: VmSize) and what the limits of its
 * memory cgroups leave (v2 memory.max − memory.current, v1
 * memory.limit_in_bytes − memory.usage_in_bytes, of its cgroup and each
 * ancestor, less the page cache the kernel can drop); *limit names the
 * limit that binds ("its address-space limit (ulimit -v)", "its cgroup's
 * memory limit"; NULL: the machine's memory). The environment variable
 * KGL_MEMORY_MB overrides it all. INFINITY when nothing is known. */
double kgl_memory_available(const char **limit);
/* KGL_MEMORY_MB in bytes, or -1 when it is not set (or not a number above 0). */
double kgl_memory_override(void);
/* The "KEY: N kB" line of a /proc file (/proc/meminfo, /proc/self/status), in
 * bytes; -1 when the file or the key is absent. */
double kgl_proc_bytes(const char *path, const char *key);
/* What RLIMIT_AS leaves beside what the process maps (INFINITY: no limit). */
double kgl_memory_rlimit_headroom(void);
/* `root` prefixes /proc/self/cgroup and /sys/fs/cgroup ("" on a real system;
 * tests give a fake tree); INFINITY when no limit is found. */
double kgl_memory_cgroup_headroom(const char *root);

/* -------------------------------------------------------------- threads --
 * A persistent pool of threads (src/engine/pool.c): the caller plus
 * threads − 1 pthread workers, created once. Kernels split their work into
 * tasks that write disjoint outputs and compute every output element with
 * the same operations whatever thread runs it, so every result is the same
 * bits for any number of threads. A pool serves one caller at a time.
 * (kgl_pool is declared with the generator, above.) */
#define KGL_MAX_THREADS 256
/* threads >= 1, or 0 for one per online core (at most KGL_MAX_THREADS).
 * Aborts with a message if the threads cannot be created. */
kgl_pool *kgl_pool_create(int threads);
/* The online cores, 1 to KGL_MAX_THREADS: the threads a pool of 0 gets. */
int kgl_cores(void);
void kgl_pool_free(kgl_pool *p); /* NULL is fine */
int kgl_pool_threads(const kgl_pool *p);
/* Runs fn(ctx, task, worker) for task = 0 … n_tasks − 1 on the pool's
 * threads (the caller takes part) and returns when all are done; worker in
 * [0, threads) names the thread, for per-thread scratch. */
void kgl_pool_run(kgl_pool *p, int n_tasks, void (*fn)(void *ctx, int task, int worker), void *ctx);
/* The kernels' instruction set: "avx512", "avx2" or "portable" (chosen at
 * run time from the CPU; the environment variable KGL_ISA=portable|avx2 can
 * lower it). */
const char *kgl_kernels_isa(void);

/* ----------------------------------------------------------------- jobs --
 * Several trainings at once, the one way (src/engine/jobs.c): an
 * ensemble's members, the saturation grid's runs and kgl benchmark's
 * `kgl train` processes are jobs of this runner. Jobs 0 … n − 1 start in
 * that order, at most `at_most` at a time, each run by
 * run(jobs, job, worker, ctx) on a worker in [0, workers) (the calling
 * thread is worker 0). A job that returns non-zero has failed: no job
 * starts after it, and kgl_jobs_halted() turns true for the ones running,
 * which poll it. Progress is counters, never text: a job says its steps
 * done and to do (kgl_jobs_report) and the callback reads the sums and
 * each job's own. */
typedef struct kgl_jobs kgl_jobs;

typedef struct kgl_job_steps {
    long done, total; /* its steps done and to do (total: the plan, job_steps, until it says) */
    bool reported;    /* it has said its steps */
    bool running, ended;
} kgl_job_steps;

typedef struct kgl_jobs_progress {
    long steps_done, steps; /* every job's, summed */
    int jobs_done, jobs, running;
    const kgl_job_steps *job; /* [jobs]: each job's */
} kgl_jobs_progress;

typedef struct kgl_jobs_spec {
    int n;          /* jobs 0 … n − 1 */
    int at_most;    /* at a time (< 1: 1; at most n) */
    long job_steps; /* each job's steps planned, its total until it reports (0: not known) */
    /* runs job `job` on worker `worker`: 0 done, else a failure (its status) */
    int (*run)(kgl_jobs *jobs, int job, int worker, void *ctx);
    /* NULL, or asked before each job starts: true starts no more */
    bool (*stop)(void *ctx);
    /* NULL, or called after each report and each job's end, from any
       worker, one call at a time (under the runner's lock: it must not
       call kgl_jobs_report) */
    void (*progress)(const kgl_jobs_progress *at, void *ctx);
    void *ctx;
} kgl_jobs_spec;

typedef struct kgl_jobs_result {
    int status;     /* 0, or the status of the failed job first in job order */
    int failed;     /* that job (-1: none failed) */
    int started;    /* jobs 0 … started − 1 ran; the rest did not start (a failure, or stop) */
    double seconds; /* wall time */
} kgl_jobs_result;

/* Runs the jobs and returns when every job started has returned. */
kgl_jobs_result kgl_jobs_run(const kgl_jobs_spec *spec);
/* The workers kgl_jobs_run will use: at_most, within 1 … max(n, 1). */
int kgl_jobs_workers(const kgl_jobs_spec *spec);
/* Whether a job has failed: a job running stops at its next poll. */
bool kgl_jobs_halted(const kgl_jobs *jobs);
/* Job `job` has done `done` of `total` steps (total may shrink: steps it
   will not take); then the progress callback. */
void kgl_jobs_report(kgl_jobs *jobs, int job, long done, long total);

/* ------------------------------------------------------------- children --
 * Jobs that are other programs (src/engine/children.c): kgl benchmark's
 * runs, each a `kgl train` process, which must fail alone (kgl_die exits
 * the whole process). A child starts in a process group of its own, in a
 * slot of the runner's (its worker's, 0 … KGL_CHILD_SLOTS − 1), and gets
 * the stop signals through kgl_children_signal, never from the terminal
 * twice; its steps come down a pipe as lines "DONE TOTAL" (the protocol
 * KGL_PROGRESS_FD names: kgl_child_send_steps writes them, kgl_child_follow
 * reads them), never parsed out of its messages. */
#define KGL_CHILD_SLOTS 64

/* Starts argv (argv[0] a path) with stdin from /dev/null, stdout and stderr
   on out_fd and err_fd, the environment `envp`, `steps_fd` (unless -1) as
   its descriptor 3, in a process group of its own and in slot `slot`. The
   pid; 0 when a stop signal came first (nothing started); -1 with errno
   when it cannot start. */
pid_t kgl_child_spawn(char **argv, int out_fd, int err_fd, int steps_fd, char **envp, int slot);
/* The same with a pipe for its steps on its descriptor 3 (made and started
   one child at a time, so that no other child inherits it); *steps_fd is
   the pipe's end to read (kgl_child_follow), -1 when nothing started. */
pid_t kgl_child_spawn_steps(char **argv, int out_fd, int err_fd, char **envp, int slot, int *steps_fd);
/* Reads the child's steps until its pipe ends (it has exited), each line
   "DONE TOTAL" job `job`'s count (kgl_jobs_report; DONE above TOTAL is
   TOTAL, other lines are skipped), then its steps are what its last line
   said, all it did; closes steps_fd and waits for it (kgl_child_wait). */
int kgl_child_follow(int steps_fd, int slot, kgl_jobs *jobs, int job);
/* Waits for the child in `slot` to end, through signals; it leaves the
   slot before it is reaped. Its status (waitpid's). */
int kgl_child_wait(int slot);

typedef enum kgl_child_outcome {
    KGL_CHILD_ENDED,       /* it ran: *status is its status */
    KGL_CHILD_NOT_STARTED, /* a stop signal came first */
    KGL_CHILD_NO_PIPE,     /* no pipe (or /dev/null) for it: errno says why */
    KGL_CHILD_CANNOT_START /* errno says why */
} kgl_child_outcome;
/* Runs argv in slot `slot` to its end, its stdout to /dev/null and what it
   writes on stderr into *said (kgl_xmalloc'd, NUL-terminated; free it; NULL
   for KGL_CHILD_NO_PIPE). */
kgl_child_outcome kgl_child_capture(char **argv, char **envp, int slot, char **said, int *status);

/* Passes `sig` on to every child going, and to any started after it
   catches up; kgl_child_spawn starts nothing more. Async-signal-safe: a
   SIGINT/SIGTERM handler. */
void kgl_children_signal(int sig);
/* The last signal kgl_children_signal passed on (0: none). */
int kgl_children_stop_signal(void);
/* The child's side of the steps' pipe: the descriptor its parent named in
   KGL_PROGRESS_FD (a number of 3 or more, open on a pipe), or -1 when none
   was named (not a child of a runner, or not a pipe). */
int kgl_child_steps_pipe(void);
/* Sends "DONE TOTAL" down the steps' pipe fd; false when the reader is gone
   (stop sending; a full pipe or an interrupted write only drops this line). */
bool kgl_child_send_steps(int fd, double done, double total);
/* This process's environment with `setting` ("NAME=VALUE") in place of any
   NAME it had: an array to free (its strings are the environment's and
   `setting`, which must outlive it). */
char **kgl_environment_with(const char *setting);

/* ----------------------------------------------------------------- tape --
 * Ops append a node to the tape as they compute their output. kgl_backward
 * walks the nodes newest to oldest and each node's backward adds its
 * contribution into its inputs' grad (+=, so a tensor used twice gets both;
 * an op output's gradient starts unset, read as zeros: kgl_grad_claim).
 * With recording off (evaluation) ops compute values only. */
typedef struct kgl_op kgl_op;
typedef struct kgl_node kgl_node;

typedef struct kgl_tape {
    kgl_arena arena; /* outputs, their grads, nodes and op scratch */
    kgl_node *last;  /* newest node */
    int n_nodes;
    bool recording;
    kgl_pool *pool;  /* the threads the ops run on (a 1-thread pool of its own by default) */
    bool owns_pool;
    /* Ops that can drop intermediate results when nothing will read them
     * (attention's weights on a tape that does not record) keep them while
     * this is true (the default): a caller reading kgl_forward's attn sets it. */
    bool keep_attention;
    /* Checks set this: an op output's unset gradient (kgl_grad_claim) is
     * filled with NaN, so a backward that adds into it unzeroed fails. */
    bool poison_unset;
} kgl_tape;

/* A boolean mask for softmax rows: none, causal (column j > row i is masked),
 * or explicit keep flags (rows*cols bytes, nonzero = keep). A row whose every
 * entry is masked yields all-zero weights and passes no gradient. */
typedef enum { KGL_MASK_NONE = 0, KGL_MASK_CAUSAL, KGL_MASK_KEEP } kgl_mask_kind;
typedef struct kgl_mask {
    kgl_mask_kind kind;
    const unsigned char *keep;
} kgl_mask;

/* One recorded op application. The attribute fields are the op's own: each
 * op documents which it uses. Index arrays are borrowed from the caller and
 * must live until backward has run. */
struct kgl_node {
    const kgl_op *op;
    kgl_node *prev;
    kgl_tensor *out;
    int n_in;
    kgl_tensor **in;
    const int *idx0, *idx1, *idx2; /* row indices (gather, trilinear, targets, the segment ops' tokens) */
    int n_idx;
    kgl_mask mask;
    double alpha; /* scalar attribute (scale factor, label smoothing) */
    int i0;       /* integer attribute (column offset) */
    kgl_real *saved; /* op scratch saved by forward for backward */
    kgl_real *scratch; /* more of it, for ops that need a second buffer */
    double *stats;   /* doubles: measurements for the caller (attention), statistics kept for backward (layernorm) */
    kgl_pool *pool;  /* the tape's threads, for backward */
};

void kgl_tape_init(kgl_tape *t);
void kgl_tape_reset(kgl_tape *t); /* forget nodes and activations; keep memory */
void kgl_tape_free(kgl_tape *t);
/* Runs the tape's ops on `pool` (borrowed: it must outlive the tape's use;
 * NULL goes back to a 1-thread pool of the tape's own). */
void kgl_tape_set_pool(kgl_tape *t, kgl_pool *pool);

/* New tensor in the tape's arena; its grad is allocated (zeroed) when
 * `with_grad` and the tape is recording. */
kgl_tensor *kgl_tensor_new(kgl_tape *t, int rows, int cols, bool with_grad);
/* An op's backward taking its input x's gradient (claims_grads ops only).
 * kgl_grad_claim: true when the gradient was unset, and then the caller
 * writes every element of it (=, as if it added into zeros); false: it adds.
 * kgl_grad_settle: zeroes an unset gradient (on the pool), for adding. */
bool kgl_grad_claim(kgl_tensor *x);
void kgl_grad_settle(kgl_pool *pool, kgl_tensor *x);
/* Marks x's gradient unset and fills it with NaN, as a checking tape makes
 * its ops' outputs: gradient checks start their inputs so, so that an op
 * claiming its gradients is checked writing every element it claims. */
void kgl_grad_poison(kgl_tensor *x);
/* Backward from a 1x1 root (its gradient seeded with 1), or from any tensor
 * with an explicit seed gradient of its shape. */
void kgl_backward(kgl_tape *t, kgl_tensor *root);
void kgl_backward_seeded(kgl_tape *t, kgl_tensor *root, const kgl_real *seed);

/* ------------------------------------------------------------------ ops --
 * Each returns a new tensor in the tape's arena. Shapes are checked; a wrong
 * shape is a programming error and aborts with a message naming the op. */
kgl_tensor *kgl_matmul(kgl_tape *t, kgl_tensor *a, kgl_tensor *b);    /* A B   */
kgl_tensor *kgl_matmul_nt(kgl_tape *t, kgl_tensor *a, kgl_tensor *b); /* A Bᵀ  */
kgl_tensor *kgl_matmul_tn(kgl_tape *t, kgl_tensor *a, kgl_tensor *b); /* Aᵀ B  */
kgl_tensor *kgl_matmul_heads(kgl_tape *t, kgl_tensor *z, kgl_tensor *w, int heads); /* Z_h W_h, head by head */
kgl_tensor *kgl_add(kgl_tape *t, kgl_tensor *a, kgl_tensor *b);    /* same shape, or b is [1, cols] broadcast over rows */
kgl_tensor *kgl_mul(kgl_tape *t, kgl_tensor *a, kgl_tensor *b);    /* elementwise */
kgl_tensor *kgl_scale(kgl_tape *t, kgl_tensor *a, double alpha);   /* alpha * A */
kgl_tensor *kgl_gather_rows(kgl_tape *t, kgl_tensor *table, const int *rows, int n);
kgl_tensor *kgl_slice_cols(kgl_tape *t, kgl_tensor *a, int col0, int width);
kgl_tensor *kgl_concat_cols(kgl_tape *t, int n_parts, kgl_tensor *const *parts);
kgl_tensor *kgl_softmax_rows(kgl_tape *t, kgl_tensor *s, kgl_mask mask);
kgl_tensor *kgl_layernorm(kgl_tape *t, kgl_tensor *x, kgl_tensor *gamma, kgl_tensor *beta);
/* each of a row's `heads` blocks of cols/heads columns normalised on its own, one gamma, beta [1, cols/heads] */
kgl_tensor *kgl_layernorm_heads(kgl_tape *t, kgl_tensor *x, int heads, kgl_tensor *gamma, kgl_tensor *beta);
kgl_tensor *kgl_gelu(kgl_tape *t, kgl_tensor *x);
kgl_tensor *kgl_abs_cube(kgl_tape *t, kgl_tensor *x); /* |x|³ elementwise */
kgl_tensor *kgl_conjugate(kgl_tape *t, kgl_tensor *x); /* rows of d/2 complex numbers [re | im]: [re | −im] */
/* mean over rows b of  logsumexp_j z[b,j] - sum_j q[b,j] z[b,j],  with the
 * target distribution q = (1 - smoothing) onehot(targets[b]) + smoothing / cols. */
kgl_tensor *kgl_cross_entropy(kgl_tape *t, kgl_tensor *logits, const int *targets, double smoothing);
/* The same against a set of answers per row (1-N / KvsAll targets): row b's
 * answers are answers[answer_off[b] .. answer_off[b+1]) (at least one), and
 * q[b] = (1 - smoothing) multihot / (their count) + smoothing / cols. */
kgl_tensor *kgl_multilabel_ce(kgl_tape *t, kgl_tensor *logits, const int *answer_off, const int *answers,
                                    double smoothing);
/* logit[b, j] = sum_c C[heads[b], c] R[rels[b], c] E[j, c]   (the specified readout) */
kgl_tensor *kgl_trilinear(kgl_tape *t, kgl_tensor *c, kgl_tensor *r, kgl_tensor *e, const int *heads,
                          const int *rels, int n);
/* The complex readout: rows are d/2 complex numbers [re | im], and
 * logit[b, j] = Re sum_c C[heads[b], c] R[rels[b], c] conj(E[j, c]) = <C[heads[b]] R[rels[b]], E[j]>. */
kgl_tensor *kgl_trilinear_complex(kgl_tape *t, kgl_tensor *c, kgl_tensor *r, kgl_tensor *e, const int *heads,
                                  const int *rels, int n);
/* A query's vector in either readout: v = a ⊙ b, or the complex product when
 * `is_complex` (then v · E[j] is the score of candidate j; the evaluation and
 * kgl_predict_scores form it as the ops do). */
void kgl_readout_query(bool is_complex, const kgl_real *a, const kgl_real *b, kgl_real *v, int d);
/* Y = exp(s[0, k]) X: a learnable log-scale s (a [1, K] row) on X. */
kgl_tensor *kgl_scale_exp(kgl_tape *t, kgl_tensor *x, kgl_tensor *s, int k);
/* Dropout with a given mask: Y = X ⊙ keep / (1 − p), keep[i] ∈ {0, 1}
 * (borrowed; must live until backward). */
kgl_tensor *kgl_dropout_mask(kgl_tape *t, kgl_tensor *x, const unsigned char *keep, double p);
/* Dropout drawing its mask from `rng` (one uniform u per element, in
 * row-major order; kept iff u >= p) into the tape's arena. p = 0 or rng NULL
 * returns x itself and draws nothing. */
kgl_tensor *kgl_dropout(kgl_tape *t, kgl_tensor *x, double p, kgl_rng *rng);
/* Multi-head scaled dot-product attention in one op (the specified attention):
 * Q, K, V [n, d] with `heads` heads of dk = d / heads columns each;
 *   S_h = τ_h Q_h K_hᵀ,  τ_h = tau, or tau·e^{θ_h} with log_temp = θ [1, heads]
 *   A_h = softmax_rows(S_h),   O = [A_0 V_0 | … | A_{H−1} V_{H−1}]   [n, d].
 * attn (NULL, or heads tensors) receives views of the A_h (no gradient).
 * *stats (when stats is non-NULL) points to 2·heads doubles: max |S_h| now,
 * and ‖∂L/∂S_h‖_F once backward has run (NAN before); without stats max |S_h|
 * is not measured (a pass over every S_h fewer). */
#define KGL_ATTENTION_MAX_HEADS 64
kgl_tensor *kgl_attention(kgl_tape *t, kgl_tensor *q, kgl_tensor *k, kgl_tensor *v, int heads, double tau,
                          kgl_tensor *log_temp, kgl_tensor *attn, double **stats);
/* Attention over segments (src/engine/ops_segment.c; the neighbourhood
 * context): B queries, query b attending over the token rows
 * offsets[b] … offsets[b+1] − 1 (offsets [B+1], borrowed, every segment
 * non-empty, offsets[0] = 0, offsets[B] = T), `heads` heads of dk = d/heads
 * columns, one weight per token and head ([T, heads]):
 *   S[t, h] = τ_h ⟨Q_h[b(t)], K_h[t]⟩   τ_h = tau, or tau·e^{θ_h} with log_temp = θ [1, heads]
 *   A[·, h] = softmax of S[·, h] within each segment
 *   O[b, c] = Σ_{t ∈ segment b} A[t, c / dk] V[t, c]                          [B, d]
 * The token rows K[t] and V[t] are read through indices (kgl_token_rows), so
 * a batch's [T, d] keys and values are never written out: a token's row is
 * its entity's projection plus its relation's, gathered where it is used. */
typedef struct kgl_token_rows {
    kgl_tensor *a;  /* row t is a[ia[t]] (ia NULL: a[t], a has the T rows) */
    const int *ia;
    kgl_tensor *b;  /* plus b[ib[t]] (b and ib both NULL: nothing added) */
    const int *ib;
} kgl_token_rows;
/* The T rows of x themselves. */
static inline kgl_token_rows kgl_rows_of(kgl_tensor *x) { return (kgl_token_rows){x, NULL, NULL, NULL}; }
/* Y[k] = A[ia[k]] + B[ib[k]] for k < n (the arrays borrowed): two gathers and
 * their sum in one op (the distinct (entity, relation) pairs' keys). */
kgl_tensor *kgl_gather_sum_rows(kgl_tape *t, kgl_tensor *a, const int *ia, kgl_tensor *b, const int *ib, int n);
kgl_tensor *kgl_segment_scores(kgl_tape *t, kgl_tensor *q, kgl_token_rows k, const int *offsets, int segments,
                               int heads, double tau, kgl_tensor *log_temp);
kgl_tensor *kgl_segment_softmax(kgl_tape *t, kgl_tensor *s, const int *offsets, int segments);
kgl_tensor *kgl_segment_weighted_sum(kgl_tape *t, kgl_tensor *a, kgl_token_rows v, const int *offsets, int segments);
/* Z[b, h·w + c] = Σ_{t ∈ b} a[t, h] x[t, c]: each head's weighted sum of the
 * tokens' whole rows [T, w], Z [B, H·w] (then matmul_heads projects it). */
kgl_tensor *kgl_segment_head_sums(kgl_tape *t, kgl_tensor *a, kgl_token_rows x, const int *offsets, int segments);
kgl_tensor *kgl_sum(kgl_tape *t, kgl_tensor *x);
kgl_tensor *kgl_mean(kgl_tape *t, kgl_tensor *x);

#define KGL_LN_EPS 1e-5

/* The explicit softmax Jacobian, J = diag(p) - p pᵀ, for study and tests:
 * fills J (n*n, row-major). Backward never builds it: it uses J g = p ⊙ (g - <g, p>). */
void kgl_softmax_jacobian(const double *p, int n, double *J);
/* Softmax of one vector (max subtracted first). */
void kgl_softmax_vec(const double *z, int n, double *p);
/* ‖J‖_F (the closed form of README, "The model, exactly" sqrt(Σp² − 2Σp³ + (Σp²)²), summed so that it
 * does not cancel to 0 near one-hot). */
double kgl_softmax_jacobian_fro(const kgl_real *p, int n);

/* -------------------------------------------------- op registry, checks --
 * Every op is registered with the spec of its gradient check. kgl gradcheck
 * and the tests iterate over kgl_op_registry; the tests also fail if any op
 * recorded on a tape is missing from it. */
#define KGL_CHECK_MAX_INPUTS 8

typedef struct kgl_check_case {
    char label[64];                                /* shapes, e.g. "3x4·4x5" */
    int n_inputs;                                  /* differentiable inputs */
    kgl_tensor *inputs[KGL_CHECK_MAX_INPUTS];
    kgl_tensor *(*run)(kgl_tape *t, const struct kgl_check_case *c); /* applies the op */
    const int *idx0, *idx1, *idx2;                 /* attributes handed to the op */
    int n_idx;
    kgl_mask mask;
    double alpha;
    int i0, i1;
    double h; /* finite-difference step; 0 means 1e-5 */
} kgl_check_case;

typedef struct kgl_check_spec {
    int n_cases;
    /* Builds case `which` with inputs from `rng`, allocated in `keep`. */
    void (*make_case)(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c);
    double rel_tol;         /* pass iff every element's relative error <= rel_tol */
    const char *tol_reason; /* why this tolerance */
    /* The float32 twin (kgl_twin_compare): pass iff every compared array's
       normwise error (kgl_twin_compare) <= f32_tol: KGL_F32_DEFAULT_TOL
       and its reason unless the op measured otherwise. */
    double f32_tol;
    const char *f32_reason;
} kgl_check_spec;

#define KGL_F32_DEFAULT_TOL 1e-5
#define KGL_F32_DEFAULT_REASON                                                                               \
    "every check case sums at most ~64 products of O(1) terms: float32 round-off (u = 2^-24 = 6e-8) grows to " \
    "at most ~64u = 4e-6 of the largest element; a wrong formula or a missed term errs by O(1)"



struct kgl_op {
    const char *name;
    void (*backward)(kgl_node *node);
    kgl_check_spec check;
    /* false (the default): kgl_backward zeroes the node's inputs' unset
       gradients before its backward adds into them. true: the backward
       takes each input's gradient itself, with kgl_grad_claim (it writes
       every element when it was unset) or kgl_grad_settle (it adds). */
    bool claims_grads;
};

extern const kgl_op *const kgl_op_registry[];
extern const int kgl_op_registry_count;
const kgl_op *kgl_op_find(const char *name);

/* Relative error of one analytic partial a against its finite difference n:
 * |a - n| / max(|a|, |n|, KGL_REL_FLOOR). The floor keeps partials that are
 * zero in exact arithmetic (where both sides are round-off) from dividing by
 * round-off; above it the measure is the plain relative error. */
#define KGL_REL_FLOOR 1e-3
double kgl_rel_error(double analytic, double numeric);

/* The largest partial that still counts as zero. The checks run in double
 * precision on values of order one, where the round-off of a few hundred
 * operations is about 1e-14; a gradient whose every element is below 1e-10
 * carries nothing but round-off. "Nonzero" means above it: a backward that
 * forgot to write, or a parameter that no path reaches, fails the "all zero"
 * rule even when round-off makes its partials 1e-17 instead of 0. */
#define KGL_ZERO_FLOOR 1e-10

typedef struct kgl_check_result {
    char name[48];
    char shapes[256];
    long checks; /* elements compared */
    double max_abs_err, max_rel_err;
    double rel_tol;
    bool pass;
    char why[160]; /* first failure, for people */
} kgl_check_result;

/* Central differences for every element of every input of every case of
 * `op`, against the analytic gradient of f = Σ w ⊙ op(inputs) with fixed
 * random weights w. Returns res->pass. */
bool kgl_gradcheck_op(const kgl_op *op, uint64_t seed, kgl_check_result *res);

/* The generic comparison both checks use. `eval` returns the scalar f at the
 * current value of x; every perturbed element is restored. */
typedef double (*kgl_scalar_fn)(void *ctx);
typedef struct kgl_fd_stats {
    long checks;
    double max_abs_err, max_rel_err;
    long failures;
    bool nonzero;   /* some analytic partial was above KGL_ZERO_FLOOR */
    double max_abs_analytic, max_abs_numeric;
    long first_bad; /* index of the first failing element, or -1 */
    double first_bad_analytic, first_bad_numeric;
} kgl_fd_stats;
void kgl_fd_compare(kgl_real *x, const kgl_real *analytic, size_t n, double h, double rel_tol, kgl_scalar_fn eval,
                    void *ctx, kgl_fd_stats *st);
/* The same with each partial extrapolated from two central differences,
   (4 D(h/2) − D(h)) / 3: truncation error O(h⁴) instead of O(h²), for a
   whole model's loss, whose third derivatives grow with its depth. */
void kgl_fd_compare_richardson(kgl_real *x, const kgl_real *analytic, size_t n, double h, double rel_tol,
                               kgl_scalar_fn eval, void *ctx, kgl_fd_stats *st);

/* The float32 twin check (kgl gradcheck --precision f32). For every case of
 * an op's check spec, with its inputs and the projection weights W rounded
 * to float (so that both precisions compute from the same numbers): the
 * output Y, then the gradient of F = Σ W ⊙ Y with respect to each input,
 * each an array of doubles (converted from kgl_real). The float64 program
 * computes them as the reference, the float32 program as the twin. */
#define KGL_TWIN_MAX_ARRAYS 96
#define KGL_TWIN_FLOOR 0.1 /* the least scale an array's error is measured against (kgl_twin_compare) */
typedef struct kgl_twin {
    char op[48];
    int n;                                  /* arrays */
    char label[KGL_TWIN_MAX_ARRAYS][112];   /* "3x4·4x5: Y", "3x4·4x5: dF/dX1" */
    size_t count[KGL_TWIN_MAX_ARRAYS];
    double *values[KGL_TWIN_MAX_ARRAYS];    /* malloc'd; kgl_twin_free */
} kgl_twin;
void kgl_twin_op(const kgl_op *op, uint64_t seed, kgl_twin *out);
void kgl_twin_free(kgl_twin *t);
/* Compares a float32 twin with its float64 reference array by array: the
 * same labels and lengths, and normwise errors ‖y32 − y64‖∞ / max(‖y64‖∞,
 * KGL_TWIN_FLOOR) within tol (written !(err <= tol): a NaN fails). res gets the largest error, the arrays compared and
 * the first failure, for people. */
bool kgl_twin_compare(const kgl_twin *ref, const kgl_twin *f32, double tol, kgl_check_result *res);
/* A twin as text, what kgl-f32 sends kgl (`kgl-f32 gradcheck --emit-twin`):
 * "twin OP N", then per array "array COUNT LABEL" and a line of COUNT hex
 * floats (%a: exact). kgl_twin_read reads one such twin at *text and moves
 * *text past it; false on anything else (t then holds the arrays read so
 * far: kgl_twin_free it either way). */
void kgl_twin_write(FILE *f, const kgl_twin *t);
bool kgl_twin_read(char **text, kgl_twin *t);

/* ----------------------------------------------------------- parameters --
 * Every parameter, its gradient and its Adam moments live in one allocation. */
#define KGL_MAX_PARAMS 160 /* a stack of 8 layers with every option: 2 + 2 + 8 × 17 */
#define KGL_NAME_MAX 48

typedef struct kgl_param {
    char name[KGL_NAME_MAX];
    kgl_tensor t;    /* data and grad */
    kgl_real *m, *v; /* Adam moments */
    bool vector;   /* a [1, n] row stored with shape [n] */
    bool frozen;   /* skipped by the optimiser (no update, no decay) */
    bool layer;    /* one of the model's layers' own (the model marks them): --layer-lr scales its rate */
} kgl_param;

typedef struct kgl_params {
    int n;
    kgl_param p[KGL_MAX_PARAMS];
    kgl_real *block; /* the one allocation: data | grad | m | v of every parameter */
    size_t total;    /* elements per section */
} kgl_params;

/* Declare, then allocate once. Returns the parameter's tensor (stable). */
kgl_tensor *kgl_params_add(kgl_params *ps, const char *name, int rows, int cols);
kgl_tensor *kgl_params_add_vector(kgl_params *ps, const char *name, int n);
void kgl_params_alloc(kgl_params *ps);
void kgl_params_free(kgl_params *ps);
void kgl_params_zero_grad(kgl_params *ps);
/* The same on the pool's threads (NULL: here); the same bits. */
void kgl_params_zero_grad_on(kgl_params *ps, kgl_pool *pool);
void kgl_params_zero_state(kgl_params *ps); /* every optimiser buffer (m, v) to zero */
kgl_param *kgl_params_find(kgl_params *ps, const char *name);

/* ----------------------------------------------------------- optimiser --
 * Adam as torch.optim.Adam (bias-corrected, eps after the square root);
 * weight_decay > 0 makes it AdamW (decoupled, θ ← θ(1 − lr·wd) first), on
 * every parameter, or on the matrices alone with decay_matrices_only. A
 * parameter marked layer steps at layer_lr · lr, its decay θ(1 − layer_lr·lr·wd).
 * SGD as torch.optim.SGD (momentum buffer b ← μ b + g, θ ← θ − lr b).
 * Adagrad as torch.optim.Adagrad (no lr decay, the sum starting at 0):
 * s ← s + g², θ ← θ − lr · g / (√s + eps), s kept in each parameter's m. */
typedef enum { KGL_OPT_ADAM = 0, KGL_OPT_SGD, KGL_OPT_ADAGRAD, KGL_N_OPTIMIZERS } kgl_optimizer_kind;
#define KGL_ADAGRAD_EPS 1e-10 /* torch.optim.Adagrad's default eps (Adam's is 1e-8) */
extern const char *const kgl_optimizer_names[KGL_N_OPTIMIZERS]; /* "adam", "sgd", "adagrad" */
typedef struct kgl_optim {
    kgl_optimizer_kind kind;
    double lr, beta1, beta2, eps, weight_decay, momentum;
    bool decay_matrices_only; /* the decay skips every vector parameter (layer norms' gains and shifts, biases,
                                 temperatures): --weight-decay-on matrices */
    double layer_lr;          /* the rate of every parameter marked layer, as a multiple of lr (its decay
                                 too): --layer-lr; 1 by default */
    long step; /* updates already applied */
} kgl_optim;
void kgl_optim_defaults(kgl_optim *o);
/* Chooses the optimiser and its constants (torch's defaults: Adagrad's eps
 * 1e-10, Adam's 1e-8); lr, weight decay and momentum are kept. */
void kgl_optim_select(kgl_optim *o, kgl_optimizer_kind kind);
void kgl_optim_step(kgl_optim *o, kgl_params *ps);
/* The same update on the pool's threads, in spans of the parameter block
 * (NULL: here): every element's update is its own, so the bits are the
 * same for any number of threads. */
void kgl_optim_step_on(kgl_optim *o, kgl_params *ps, kgl_pool *pool);


/* The chapter's experiment: softmax of 5 seeded N(0,1) logits, the explicit
 * Jacobian against central differences of the softmax with step h. Fills
 * z[5], J[25] and J_fd[25] when non-NULL; returns max |J − J_fd|. */
double kgl_softmax_jacobian_experiment(uint64_t seed, double h, double *z, double *J, double *J_fd);

/* -------------------------------------------------------------- version --
 * The one place the version is written (`kgl --version`; the Makefile reads
 * KGL_VERSION from this line for the pkg-config file). */
#define KGL_VERSION "0.9.0"
#define KGL_VERSION_MAJOR 0
#define KGL_VERSION_MINOR 9
#define KGL_VERSION_PATCH 0

#endif
