/* attention_forward: O = softmax(Q K^T / sqrt(d)) V, one head, fp32.
 *   naive  - materialises the n x n probabilities (heap), parallel over rows.
 *   memopt - key tiles of BK with an online softmax, parallel over query
 *            tiles of BQ rows; O(n d) memory, no n x n buffer. */
#include <float.h>
#include <omp.h>
#include <stdlib.h>

#include "harness.h"
#include "kcommon.h"

static const char *const variants[] = {"naive", "memopt", NULL};
enum { NAIVE, MEMOPT };

typedef struct {
    harness_cfg cfg;
    long n, d;
    float *q, *k, *v, *o;
    float *p;        /* naive: n x n */
    float *kp;       /* memopt: K packed in transposed tiles */
    float *scratch;  /* memopt: per-thread BQ x BK scores + 2 BQ (m, l) */
} state;

static void st_free(state *s)
{
    hfree(s->q); hfree(s->k); hfree(s->v); hfree(s->o);
    hfree(s->p); hfree(s->kp); hfree(s->scratch);
    free(s);
}

static void *setup(const harness_cfg *cfg)
{
    state *s = calloc(1, sizeof *s);
    s->cfg = *cfg;
    long n = s->n = cfg->n, d = s->d = cfg->d;
    size_t nd = (size_t)n * (size_t)d * sizeof(float);
    long tiles = (n + BK - 1) / BK;
    s->q = halloc(nd); s->k = halloc(nd); s->v = halloc(nd); s->o = halloc(nd);
    int ok = s->q && s->k && s->v && s->o;
    if (cfg->variant == NAIVE) {
        s->p = halloc((size_t)n * (size_t)n * sizeof(float));
        ok = ok && s->p;
    } else {
        s->kp = halloc((size_t)tiles * BK * (size_t)d * sizeof(float));
        s->scratch = halloc((size_t)omp_get_max_threads() * memopt_scratch(d) * sizeof(float));
        ok = ok && s->kp && s->scratch;
    }
    if (!ok) { st_free(s); return NULL; }
    /* first touch with the compute's schedule: rows (naive), BQ-row tiles (memopt) */
    long chunk = cfg->variant == NAIVE ? 1 : BQ;
    fill_normal(s->q, n, d, chunk, cfg->seed, 1);
    fill_normal(s->k, n, d, chunk, cfg->seed, 2);
    fill_normal(s->v, n, d, chunk, cfg->seed, 3);
    fill_nan(s->o, n, d, chunk);
    if (s->p) fill_nan(s->p, n, n, 1);
    if (s->kp) fill_nan(s->kp, tiles, BK * d, 1);
    if (s->scratch) {
#pragma omp parallel
        for (long e = 0; e < memopt_scratch(d); e++) s->scratch[omp_get_thread_num() * memopt_scratch(d) + e] = 0;
    }
    return s;
}

static void poison(void *p)
{
    state *s = p;
    fill_nan(s->o, s->n, s->d, s->cfg.variant == NAIVE ? 1 : BQ);
}

static void run_naive(state *s)
{
    const long n = s->n, d = s->d;
    const float scale = 1.0f / sqrtf((float)d);
    const float *restrict q = s->q, *restrict k = s->k, *restrict v = s->v;
    float *restrict o = s->o;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float *restrict pr = s->p + (size_t)i * (size_t)n;
        const float *restrict qi = q + i * d;
        float mx = -FLT_MAX;
        for (long j = 0; j < n; j++) {
            const float *restrict kj = k + j * d;
            float acc = 0;
#pragma omp simd reduction(+ : acc)
            for (long c = 0; c < d; c++) acc += qi[c] * kj[c];
            pr[j] = acc * scale;
            mx = pr[j] > mx ? pr[j] : mx;
        }
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (long j = 0; j < n; j++) {
            pr[j] = exp_fast(pr[j] - mx);
            sum += pr[j];
        }
        float *restrict oi = o + i * d;
        for (long c = 0; c < d; c++) oi[c] = 0;
        for (long j = 0; j < n; j++) {
            const float pj = pr[j] / sum;
            pr[j] = pj;
            const float *restrict vj = v + j * d;
#pragma omp simd
            for (long c = 0; c < d; c++) oi[c] += pj * vj[c];
        }
    }
}

static void run_memopt(state *s)
{
    memopt_forward(s->q, s->k, s->v, s->o, NULL, s->kp, s->scratch, s->n, s->d);
}

static void run(void *p)
{
    state *s = p;
    if (s->cfg.variant == NAIVE) run_naive(s);
    else run_memopt(s);
}

/* All rows for n <= CHECK_ALL_ROWS, else CHECK_ROWS evenly spread rows. */
static double check(void *p)
{
    state *s = p;
    long nrows;
    long *rows = check_rows(s->n, &nrows);
    double *ref = malloc(sizeof(double) * (size_t)nrows * (size_t)s->d);
    ref_attention_rows(s->q, s->k, s->v, s->n, s->d, rows, nrows, ref);
    rel_accum a = {0};
    for (long r = 0; r < nrows; r++) rel_acc(&a, s->o + rows[r] * s->d, ref + r * s->d, (size_t)s->d);
    free(rows);
    free(ref);
    return rel_final(&a);
}

static int dump(void *p, const char *dir)
{
    state *s = p;
    dumper *dp = dump_open(dir, "attention_forward", variants[s->cfg.variant], &s->cfg);
    long shape[2] = {s->n, s->d};
    dump_array(dp, "q", s->q, 2, shape);
    dump_array(dp, "k", s->k, 2, shape);
    dump_array(dp, "v", s->v, 2, shape);
    dump_array(dp, "o", s->o, 2, shape);
    return dump_close(dp);
}

static void teardown(void *p) { st_free(p); }

int main(int argc, char **argv)
{
    const kernel_def k = {"attention_forward", variants, 0, setup, poison, run, check, dump, teardown};
    return harness_main(argc, argv, &k);
}
