/* options.c — every option of `kgl train`, one row each: its name, what it
 * takes, where its value lives, its checkpoint key and its help. The kgl
 * program parses, documents, merges on --resume and echoes by these rows;
 * checkpoint.c saves and loads by them; recipe.c refuses the file options.
 * Adding an option is a row here and a field in the struct of its kind
 * (data/report/code.md, "Adding an option"). */
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kgl/model.h"

/* The field of a row, by the struct its kind names. */
#define MODEL(field) .kind = KGL_OPTION_MODEL, .offset = offsetof(kgl_config, field), \
                     .size = sizeof(((kgl_config *)0)->field)
#define TRAINING(field) .kind = KGL_OPTION_TRAINING, .offset = offsetof(kgl_train_state, field), \
                        .size = sizeof(((kgl_train_state *)0)->field)
#define RUN(field) .kind = KGL_OPTION_RUN, .offset = offsetof(kgl_run_options, field), \
                   .size = sizeof(((kgl_run_options *)0)->field)
#define WORDS(list) .words = list, .n_words = (int)(sizeof list / sizeof list[0])

/* A word is stored as its index: in an enum, or in a bool for two words. */
_Static_assert(sizeof(kgl_context_kind) == sizeof(int) && sizeof(kgl_readout_kind) == sizeof(int) &&
                   sizeof(kgl_schedule_kind) == sizeof(int) && sizeof(kgl_optimizer_kind) == sizeof(int) &&
                   sizeof(kgl_scale_kind) == sizeof(int),
               "an enum option's field is an int");

/* The words a flag or a two-word option writes in a checkpoint, false first. */
static const char *const zero_one[] = {"0", "1"};
static const char *const temperatures[] = {"fixed", "learn"};
static const char *const queries[] = {"entity", "relation"};
static const char *const asked_edges[] = {"shown", "hidden"};
static const char *const frozen[] = {"", "entity_emb"};
static const char *const decayed[] = {"all", "matrices"};
static const char *const targets[] = {"1vsall", "kvsall"};
static const char *const scales[] = {"sqrt", "none"}; /* then a number: KGL_SCALE_VALUE */
static const char *const precisions[] = {"f64", "f32"};
static const char *const head_states[] = {"layer", "input"};

const kgl_option kgl_train_options[] = {
    /* data */
    {.name = "--train", .arg = "F", .type = KGL_OPTION_NAME, RUN(train), .flags = KGL_OPTION_FILE, .heading = "data",
     .help = "training triples (head<TAB>relation<TAB>tail)"},
    {.name = "--valid", .arg = "F", .type = KGL_OPTION_NAME, RUN(valid), .flags = KGL_OPTION_FILE,
     .help = "evaluation triples (ids are shared across the files)"},
    {.name = "--test", .arg = "F", .type = KGL_OPTION_NAME, RUN(test), .flags = KGL_OPTION_FILE},
    {.name = "--relations", .arg = "A,B", .type = KGL_OPTION_NAME, RUN(relations), .flags = KGL_OPTION_FILE,
     .help = "train and evaluate only these relations"},

    /* the model: a resumed run must agree with its checkpoint */
    {.name = "--dim", .arg = "D", .type = KGL_OPTION_WHOLE, MODEL(dim), .lo = 1, .hi = 4096, .file_lo = 1,
     .file_hi = 1 << 20, .key = "d_model", .flags = KGL_OPTION_REQUIRED, .heading = "model (README, The model, exactly)",
     .help = "d_model (default 8)"},
    {.name = "--heads", .arg = "H", .type = KGL_OPTION_WHOLE, MODEL(heads), .lo = 1, .hi = KGL_MAX_HEADS,
     .key = "n_heads", .flags = KGL_OPTION_REQUIRED, .help = "attention heads; must divide D (default 2)"},
    {.name = "--ffn", .arg = "F", .type = KGL_OPTION_WHOLE, MODEL(ffn), .lo = 0, .hi = 65536, .file_lo = 0,
     .file_hi = 1 << 20, .key = "ffn", .flags = KGL_OPTION_REQUIRED, .help = "FFN width, 0 for none (default 0)"},
    {.name = "--layers", .arg = "L", .type = KGL_OPTION_WHOLE, MODEL(layers), .lo = 1, .hi = KGL_MAX_LAYERS,
     .key = "layers", .flags = KGL_OPTION_ECHO, .help = "a stack of L layers, each on the output of the one before\n"
             "(default 1, at most 8; README, A stack of layers)"},
    /* DBL_TRUE_MIN: every positive double is a scale, zero is not */
    {.name = "--scale", .arg = "S", .type = KGL_OPTION_WORD_OR_NUMBER, MODEL(scale), WORDS(scales),
     .number_offset = offsetof(kgl_config, scale_value), .lo = DBL_TRUE_MIN, .hi = DBL_MAX, .file_lo = 1e-300,
     .file_hi = 1e300, .key = "scale", .flags = KGL_OPTION_REQUIRED,
     .help = "attention logit scale: sqrt (1/sqrt(dk), default), none, or a number"},
    {.name = "--init-scale", .arg = "S", .type = KGL_OPTION_REAL, MODEL(init_scale), .lo = 0, .hi = 1e6,
     .key = "init_scale", .flags = KGL_OPTION_REQUIRED, .help = "attention weights ~ N(0, (S/sqrt(d))^2) (default 1)"},
    {.name = "--no-reciprocal", .type = KGL_OPTION_FLAG, MODEL(reciprocal), .negated = true, WORDS(zero_one),
     .key = "reciprocal", .flags = KGL_OPTION_REQUIRED,
     .help = "no inverse relations; head prediction scores C[j].R[r].E[t]"},
    {.name = "--qk-norm", .type = KGL_OPTION_FLAG, MODEL(qk_norm), WORDS(zero_one), .key = "qk_norm",
     .help = "layer-normalise each head's queries and keys (a saturation remedy)"},
    {.name = "--temperature", .arg = "T", .type = KGL_OPTION_WORD, MODEL(learn_temperature), WORDS(temperatures),
     .key = "temperature", .help = "fixed (default) or learn: a learned log-scale per head on the logits"},
    {.name = "--readout", .arg = "K", .type = KGL_OPTION_WORD, MODEL(readout), WORDS(kgl_readout_names),
     .key = "readout",
     .help = "diagonal (default): C[i].R[r].E[j] feature by feature; complex:\n"
             "Re sum C[i] R[r] conj(E[j]) over d/2 complex numbers (ComplEx)"},
    {.name = "--context", .arg = "C", .type = KGL_OPTION_WORD, MODEL(context), WORDS(kgl_context_names),
     .key = "context", .flags = KGL_OPTION_ECHO,
     .help = "what each entity attends over: full (default: every entity,\n"
             "n x n per head), graph (itself and at most --neighbours of\n"
             "its edges in the training graph; scales to large graphs), or\n"
             "none (no layer: the readout on the embeddings, a baseline)"},
    {.name = "--neighbours", .arg = "K", .type = KGL_OPTION_WHOLE, MODEL(neighbours), .lo = 0,
     .hi = KGL_MAX_NEIGHBOURS, .key = "neighbours",
     .help = "the edges a graph context keeps (default 50): sampled per\n"
             "step in training, the first K in a fixed order in evaluation"},
    {.name = "--query-relation", .type = KGL_OPTION_FLAG, MODEL(query_relation), WORDS(queries), .key = "query",
     .help = "a graph context's query token also sees the asked relation:\n"
             "a state per (entity, relation) question, not per entity"},
    {.name = "--relation-token", .type = KGL_OPTION_FLAG, MODEL(relation_token), WORDS(zero_one),
     .key = "relation_token",
     .help = "with --query-relation: the asked relation is also a token of\n"
             "the question's segment, which the question attends to\n"
             "(--neighbours 0: the entity and the relation alone)"},
    {.name = "--outer-residual", .type = KGL_OPTION_FLAG, MODEL(outer_residual), WORDS(zero_one),
     .key = "outer_residual",
     .help = "each layer's input added to its output: C = x + LN(x + o Wo)\n"
             "(after the FFN, if any): the question's own embedding kept\n"
             "beside the layer's normalised state (default off)"},
    {.name = "--hide-asked-relation", .type = KGL_OPTION_FLAG, MODEL(hide_asked), WORDS(asked_edges),
     .key = "asked_edges",
     .help = "with --query-relation: a question (i, r) never sees i's\n"
             "edges of relation r, in training and in evaluation alike\n"
             "(1-N training hides them anyway: its answers are targets)"},
    {.name = "--candidate-states", .arg = "L", .type = KGL_OPTION_REAL, MODEL(candidate_states), .lo = 0, .hi = 1e6,
     .key = "candidate_states",
     .help = "with --query-relation: a head question (?, r, t) also scores\n"
             "each candidate j by its own question (j, r): L S(j,r).R[r].E[t]\n"
             "added to the score, in evaluation and prediction (default 0)"},
    {.name = "--head-state", .arg = "S", .type = KGL_OPTION_WORD, MODEL(head_state_input), WORDS(head_states),
     .key = "head_state",
     .help = "with --query-relation: layer (default), or input: a head\n"
             "question (?, r, t), asked as (t, r^-1, ?), takes its input row\n"
             "x = E[t] + P[2m] + Pq[r^-1] as its state, not the layer's\n"
             "output; tail questions keep the layer"},

    /* training: the checkpoint's unless given again */
    {.name = "--steps", .arg = "N", .type = KGL_OPTION_WHOLE, RUN(steps), .lo = 0, .hi = 100000000,
     .heading = "training", .help = "optimiser steps (default 300; with --resume: N more)"},
    /* the rate the schedule starts from; metadata lr is the last rate used */
    {.name = "--lr", .arg = "X", .type = KGL_OPTION_REAL, TRAINING(base_lr), .lo = 0, .hi = 1e6, .key = "base_lr",
     .help = "learning rate (default 0.01)"},
    {.name = "--batch", .arg = "B", .type = KGL_OPTION_WHOLE, TRAINING(batch), .lo = 1, .hi = 1L << 30, .key = "batch",
     .help = "examples per step (default 1024; all of them in file\n"
             "order when they fit, else a seeded shuffle per epoch)"},
    {.name = "--weight-decay", .arg = "W", .type = KGL_OPTION_REAL, TRAINING(optim.weight_decay), .lo = 0, .hi = 1e6,
     .key = "weight_decay", .help = "decoupled weight decay: AdamW (default 0)"},
    {.name = "--weight-decay-on", .arg = "P", .type = KGL_OPTION_WORD, TRAINING(optim.decay_matrices_only), WORDS(decayed),
     .key = "weight_decay_on",
     .help = "what --weight-decay shrinks: all (default) or matrices (not\n"
             "the layer norms' gains and shifts, biases, temperatures)"},
    {.name = "--layer-lr", .arg = "F", .type = KGL_OPTION_REAL, TRAINING(optim.layer_lr), .lo = 0, .hi = 1e6,
     .key = "layer_lr",
     .help = "the layers' learning rate as a multiple of the rate (their\n"
             "weights, norms and temperatures; not the embeddings or the\n"
             "readout), their weight decay with it (default 1)"},
    {.name = "--optimizer", .arg = "O", .type = KGL_OPTION_WORD, TRAINING(optim.kind), .words = kgl_optimizer_names,
     .n_words = KGL_N_OPTIMIZERS, .key = "optimizer",
     .help = "adam (default, as torch.optim.Adam), sgd, or adagrad (as\n"
             "torch.optim.Adagrad, eps 1e-10: Chen et al.'s and LibKGE's)"},
    {.name = "--momentum", .arg = "M", .type = KGL_OPTION_REAL, TRAINING(optim.momentum), .lo = 0, .hi = 1,
     .key = "momentum", .help = "SGD momentum (default 0)"},
    {.name = "--seed", .arg = "N", .type = KGL_OPTION_SEED, TRAINING(seed), .key = "seed", .flags = KGL_OPTION_REQUIRED,
     .help = "initialisation and shuffle seed (default 1)"},
    {.name = "--threads", .arg = "T", .type = KGL_OPTION_WHOLE, RUN(threads), .lo = 0, .hi = KGL_MAX_THREADS,
     .help = "threads (default 0: one per core); every result is the\n"
             "same bits for any T"},
    {.name = "--supervise-heads", .arg = "R=H,...", .type = KGL_OPTION_TEXT, TRAINING(supervise),
     .key = "supervise_heads", .help = "head supervision, e.g. advises=0,authored=1"},
    {.name = "--aux-weight", .arg = "L", .type = KGL_OPTION_REAL, TRAINING(aux_weight), .lo = 0, .hi = 1e6,
     .key = "aux_weight", .help = "weight of the supervision loss (default 1)"},
    {.name = "--freeze-embeddings", .type = KGL_OPTION_FLAG, TRAINING(freeze_embeddings), WORDS(frozen),
     .key = "frozen", .help = "keep entity_emb at its random initial value (fixed features)"},
    {.name = "--lookup", .type = KGL_OPTION_FLAG, TRAINING(lookup), WORDS(zero_one), .key = "lookup",
     .help = "attention as lookup: fixed features, Wv = Wo = I (frozen), and\n"
             "each relation reads whole heads (its vector tied within each\n"
             "head's columns); the setting in which heads specialise most\n"
             "without supervision (data/report/specialisation.md)"},
    {.name = "--until-fit", .type = KGL_OPTION_FLAG, RUN(until_fit),
     .help = "stop at the first step after which every training\n"
             "triple ranks first, tail and head"},

    /* regularisers and schedule: training options too; a checkpoint of a
       dropout written by a C program may hold up to 0.999999 */
    {.name = "--dropout", .arg = "P", .type = KGL_OPTION_REAL, TRAINING(reg.dropout), .lo = 0, .hi = 0.99, .file_lo = 0,
     .file_hi = 0.999999, .key = "dropout",
     .heading = "regularisers and schedule (extensions of the specified layer; off by default)",
     .help = "dropout on the input embeddings and before each residual"},
    {.name = "--attn-dropout", .arg = "P", .type = KGL_OPTION_REAL, TRAINING(reg.attn_dropout), .lo = 0, .hi = 0.99,
     .file_lo = 0, .file_hi = 0.999999, .key = "attn_dropout", .help = "dropout on the attention weights"},
    {.name = "--hidden-dropout", .arg = "P", .type = KGL_OPTION_REAL, TRAINING(reg.hidden_dropout), .lo = 0,
     .hi = 0.99, .file_lo = 0, .file_hi = 0.999999, .key = "hidden_dropout",
     .help = "dropout on each example's head state in the readout"},
    {.name = "--layer-dropout", .arg = "P", .type = KGL_OPTION_REAL, TRAINING(reg.layer_dropout), .lo = 0,
     .hi = 0.99, .file_lo = 0, .file_hi = 0.999999, .key = "layer_dropout",
     .help = "with --outer-residual: each training question's layer term\n"
             "dropped whole with probability P, its state then x alone (its\n"
             "embedding: the baseline's); kept terms scaled by 1/(1 - P)"},
    {.name = "--entity-dropout", .arg = "P", .type = KGL_OPTION_REAL, TRAINING(reg.entity_dropout), .lo = 0,
     .hi = 0.99, .file_lo = 0, .file_hi = 0.999999, .key = "entity_dropout",
     .help = "dropout on the readout's candidates: the whole entity table\n"
             "E, one mask a step (the query side keeps --dropout)"},
    {.name = "--edge-dropout", .arg = "P", .type = KGL_OPTION_REAL, TRAINING(reg.edge_dropout), .lo = 0, .hi = 0.99,
     .file_lo = 0, .file_hi = 0.999999, .key = "edge_dropout",
     .help = "with --context graph: drop each sampled edge of a training\n"
             "segment with probability P (evaluation keeps them all)"},
    {.name = "--source-dropout", .arg = "P", .type = KGL_OPTION_REAL, TRAINING(reg.source_dropout), .lo = 0,
     .hi = 0.99, .file_lo = 0, .file_hi = 0.999999, .key = "source_dropout",
     .help = "with --context graph: leave a training question's own\n"
             "entity out of its state with probability P (its edges stay)"},
    {.name = "--label-smoothing", .arg = "E", .type = KGL_OPTION_REAL, TRAINING(reg.label_smoothing), .lo = 0,
     .hi = 1, .key = "label_smoothing", .help = "cross entropy against (1 - E) onehot + E / n"},
    {.name = "--relation-loss", .arg = "L", .type = KGL_OPTION_REAL, TRAINING(reg.relation_loss), .lo = 0, .hi = 100,
     .key = "relation_loss",
     .help = "+ L x the cross entropy of predicting each example's\n"
             "relation from its head state and tail (default 0); with\n"
             "--targets kvsall, one tail a query, drawn from its answers"},
    {.name = "--n3", .arg = "L", .type = KGL_OPTION_REAL, TRAINING(reg.n3), .lo = 0, .hi = 100, .key = "n3",
     .help = "+ L x the mean over the batch of the summed cubes |x|^3 of\n"
             "each example's head state, relation and tail rows (N3)"},
    {.name = "--targets", .arg = "T", .type = KGL_OPTION_WORD, TRAINING(kvsall), WORDS(targets), .key = "targets",
     .help = "1vsall (default): each example's one tail; kvsall: each\n"
             "query (head, relation) against all its training tails at\n"
             "once (1-N, as ConvE); --batch then counts queries"},
    {.name = "--lr-schedule", .arg = "S", .type = KGL_OPTION_WORD, TRAINING(sched.kind), WORDS(kgl_schedule_names),
     .key = "lr_schedule", .help = "constant (default), cosine or linear decay"},
    {.name = "--decay-steps", .arg = "T", .type = KGL_OPTION_WHOLE, TRAINING(sched.total), .lo = 1, .hi = 100000000,
     .file_lo = 0, .file_hi = 1L << 40, .key = "lr_total", .help = "the decay ends at step T (default: --steps)"},
    {.name = "--warmup", .arg = "W", .type = KGL_OPTION_WHOLE, TRAINING(sched.warmup), .lo = 0, .hi = 100000000,
     .file_lo = 0, .file_hi = 1L << 40, .key = "lr_warmup",
     .help = "linear learning-rate warmup over the first W steps"},
    {.name = "--lr-floor", .arg = "F", .type = KGL_OPTION_REAL, TRAINING(sched.floor), .lo = 0, .hi = 1,
     .key = "lr_floor", .help = "the decay ends at F * lr (default 0)"},

    /* the run: never saved */
    {.name = "--eval-every", .arg = "K", .type = KGL_OPTION_WHOLE, RUN(eval_every), .lo = 1, .hi = 100000000,
     .heading = "model selection",
     .help = "every K steps (and at the last) rank the --valid triples\n"
             "(filtered MRR, both directions); the model that scores\n"
             "best is the one reported and saved. --test is ranked once,\n"
             "at the end, on that model"},
    {.name = "--patience", .arg = "P", .type = KGL_OPTION_WHOLE, RUN(patience), .lo = 1, .hi = 100000000,
     .help = "stop after P evaluations without a better valid MRR"},
    {.name = "--ensemble", .arg = "K", .type = KGL_OPTION_WHOLE, RUN(ensemble), .lo = 1, .hi = KGL_MAX_ENSEMBLE,
     .help = "train K models, member k with seed S + 1000 k (member 0 is\n"
             "the run without --ensemble), each selected on valid, and\n"
             "report the ensemble: each candidate scored by the mean of\n"
             "the members' probabilities (default 1). --save F and\n"
             "--log F write member k > 0 to F with .m<k> before its\n"
             "extension; F lists them, so kgl eval and kgl predict\n"
             "--checkpoint F ask the whole ensemble"},
    {.name = "--ensemble-jobs", .arg = "J", .type = KGL_OPTION_WHOLE, RUN(ensemble_jobs), .lo = 0,
     .hi = KGL_MAX_ENSEMBLE,
     .help = "members trained at the same time, the --threads shared\n"
             "among them (default 0: as many as threads); the results\n"
             "are the same bits for any J"},
    {.name = "--log", .arg = "F.csv", .type = KGL_OPTION_NAME, RUN(log_path), .flags = KGL_OPTION_FILE,
     .heading = "output", .help = "CSV log, one row per logged step"},
    {.name = "--log-every", .arg = "K", .type = KGL_OPTION_WHOLE, RUN(log_every), .lo = 1, .hi = 100000000,
     .help = "log every K steps (default 10)"},
    {.name = "--save", .arg = "F", .type = KGL_OPTION_NAME, RUN(save_path), .flags = KGL_OPTION_FILE,
     .help = "write a checkpoint (safetensors) at the end"},
    {.name = "--resume", .arg = "F", .type = KGL_OPTION_NAME, RUN(resume_path), .flags = KGL_OPTION_FILE,
     .help = "continue from a checkpoint (model options come from it;\n"
             "training options default to the checkpoint's; it runs\n"
             "in the checkpoint's precision unless --precision says)"},
    {.name = "--precision", .arg = "P", .type = KGL_OPTION_NAME, RUN(precision), WORDS(precisions),
     .help = "f64 (default) or f32: parameters, activations, gradients\n"
             "and Adam's moments in float32 (kgl-f32; README, Precision)"},
    {.name = "--recipe", .arg = "F", .type = KGL_OPTION_NAME, RUN(recipe_path), .flags = KGL_OPTION_FILE,
     .help = "options from file F, before those given here; a word\n"
             "=EXPR is a formula of n_entities, n_relations, n_train\n"
             "(e.g. --steps =max(1000,round(n_train/2)); data/report/manual.md);\n"
             "an option's value =EXPR on the command line is one too"},
    {.name = "--splits", .arg = "S,...", .type = KGL_OPTION_SPLITS, RUN(splits),
     .help = "the splits the final report ranks (train, valid, test; default\n"
             "every split given): valid,test leaves out the minutes of ranking\n"
             "the training triples on a graph of real size"},
    {.name = "--json", .type = KGL_OPTION_FLAG, RUN(json), .help = "print one JSON object instead of tables"},
    {.name = "--quiet", .type = KGL_OPTION_FLAG, RUN(quiet),
     .help = "no progress line; one line at the end (stderr) says what was\n"
             "trained, in how long, and the metrics of each split"},
    {.name = "--progress", .type = KGL_OPTION_FLAG, RUN(progress),
     .help = "the progress line on stderr with --json too (kgl benchmark's runs)"},
    {.name = "--check", .type = KGL_OPTION_FLAG, RUN(check), .flags = KGL_OPTION_FILE, /* a recipe's would stop every run */
     .help = "check the options, the files and the memory, then stop before\n"
             "training: exit 0 when the run would start (kgl benchmark's runs)"},
};
const int kgl_n_train_options = (int)(sizeof kgl_train_options / sizeof kgl_train_options[0]);
_Static_assert(sizeof kgl_train_options / sizeof kgl_train_options[0] <= KGL_TRAIN_OPTIONS_MAX,
               "more rows than KGL_TRAIN_OPTIONS_MAX");

const kgl_option *kgl_train_option_named(const char *name, size_t len)
{
    for (int k = 0; k < kgl_n_train_options; k++)
        if (strlen(kgl_train_options[k].name) == len && memcmp(kgl_train_options[k].name, name, len) == 0)
            return &kgl_train_options[k];
    return NULL;
}

void *kgl_option_value(const kgl_option *o, kgl_config *model, kgl_train_state *training, kgl_run_options *run)
{
    char *base = o->kind == KGL_OPTION_MODEL      ? (char *)model
                 : o->kind == KGL_OPTION_TRAINING ? (char *)training
                                                  : (char *)run;
    return base ? base + o->offset : NULL;
}

/* The index a word option holds: in a bool (two words) or an enum. */
static int word_index(const kgl_option *o, const void *field)
{
    if (o->size == sizeof(bool)) return *(const bool *)field;
    return *(const int *)field;
}

void kgl_option_format(const kgl_option *o, const void *field, char *out, size_t cap)
{
    switch (o->type) {
    case KGL_OPTION_WHOLE:
        if (o->size == sizeof(int)) snprintf(out, cap, "%d", *(const int *)field);
        else snprintf(out, cap, "%ld", *(const long *)field);
        break;
    case KGL_OPTION_SEED: snprintf(out, cap, "%" PRIu64, *(const uint64_t *)field); break;
    case KGL_OPTION_REAL: snprintf(out, cap, "%.17g", *(const double *)field); break;
    case KGL_OPTION_FLAG: snprintf(out, cap, "%s", o->words[*(const bool *)field]); break;
    case KGL_OPTION_WORD:
    case KGL_OPTION_WORD_OR_NUMBER: {
        int k = word_index(o, field);
        if (k >= 0 && k < o->n_words) snprintf(out, cap, "%s", o->words[k]);
        else snprintf(out, cap, "%.17g", *(const double *)((const char *)field - o->offset + o->number_offset));
        break;
    }
    case KGL_OPTION_TEXT: snprintf(out, cap, "%s", (const char *)field); break;
    case KGL_OPTION_NAME: snprintf(out, cap, "%s", *(const char *const *)field ? *(const char *const *)field : ""); break;
    case KGL_OPTION_SPLITS: {
        static const char *const split_names[] = {"train", "valid", "test"};
        const bool *named = field;
        size_t used = 0;
        if (cap) out[0] = 0;
        for (int s = 0; s < 3; s++)
            if (named[s] && used < cap)
                used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "," : "", split_names[s]);
        break;
    }
    }
}

void kgl_train_state_defaults(kgl_train_state *st)
{
    memset(st, 0, sizeof *st);
    kgl_optim_defaults(&st->optim);
    st->base_lr = st->optim.lr;
    st->batch = 1024;
    st->seed = 1;
    st->aux_weight = 1;
}

void kgl_run_options_defaults(kgl_run_options *run)
{
    memset(run, 0, sizeof *run);
    run->steps = 300;
    run->log_every = 10;
    run->ensemble = 1;
    run->precision = KGL_PRECISION;
}
