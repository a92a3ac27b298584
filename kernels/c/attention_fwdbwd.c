/* attention_fwdbwd (fused): forward and backward of one attention head with
 * no n x n buffer.  The forward is the tiled online-softmax memopt kernel and
 * also keeps lse = logsumexp of each row; the backward recomputes the scores
 * tile by tile, P = exp(S - lse):
 *   D_i = dO_i . O_i
 *   dK/dV pass, parallel over key tiles: dV += P^T dO, dK += dS^T Q s
 *   dQ pass, parallel over query rows:   dQ += dS K s
 * with dS = P * (dO V^T - D).  Two recompute passes avoid races on dQ. */
#include <float.h>
#include <omp.h>
#include <stdlib.h>

#include "harness.h"
#include "kcommon.h"

static const char *const variants[] = {"fused", NULL};

typedef struct {
    harness_cfg cfg;
    long n, d;
    float *q, *k, *v, *dout, *o, *lse, *dsum, *dq, *dk, *dv;
    float *kp, *vp, *scratch;
} state;

#define SCR (memopt_scratch(d) > 2 * BK ? memopt_scratch(d) : 2 * BK)

static void st_free(state *s)
{
    hfree(s->q); hfree(s->k); hfree(s->v); hfree(s->dout); hfree(s->o); hfree(s->lse);
    hfree(s->dsum); hfree(s->dq); hfree(s->dk); hfree(s->dv); hfree(s->kp); hfree(s->vp);
    hfree(s->scratch);
    free(s);
}

static void *setup(const harness_cfg *cfg)
{
    state *s = calloc(1, sizeof *s);
    s->cfg = *cfg;
    long n = s->n = cfg->n, d = s->d = cfg->d;
    long tiles = (n + BK - 1) / BK;
    size_t nd = (size_t)n * (size_t)d * sizeof(float), pk = (size_t)tiles * BK * (size_t)d * sizeof(float);
    s->q = halloc(nd); s->k = halloc(nd); s->v = halloc(nd); s->dout = halloc(nd);
    s->o = halloc(nd); s->dq = halloc(nd); s->dk = halloc(nd); s->dv = halloc(nd);
    s->lse = halloc((size_t)n * sizeof(float)); s->dsum = halloc((size_t)n * sizeof(float));
    s->kp = halloc(pk); s->vp = halloc(pk);
    s->scratch = halloc((size_t)omp_get_max_threads() * SCR * sizeof(float));
    if (!(s->q && s->k && s->v && s->dout && s->o && s->dq && s->dk && s->dv && s->lse &&
          s->dsum && s->kp && s->vp && s->scratch)) {
        st_free(s);
        return NULL;
    }
    /* query-side arrays by BQ-row tiles, key-side arrays by BK-row tiles */
    fill_normal(s->q, n, d, BQ, cfg->seed, 1);
    fill_normal(s->k, n, d, BK, cfg->seed, 2);
    fill_normal(s->v, n, d, BK, cfg->seed, 3);
    fill_normal(s->dout, n, d, BQ, cfg->seed, 4);
    fill_nan(s->o, n, d, BQ);
    fill_nan(s->dq, n, d, BQ);
    fill_nan(s->lse, n, 1, BQ);
    fill_nan(s->dsum, n, 1, BQ);
    fill_nan(s->dk, n, d, BK);
    fill_nan(s->dv, n, d, BK);
    fill_nan(s->kp, tiles, BK * d, 1);
    fill_nan(s->vp, tiles, BK * d, 1);
#pragma omp parallel
    for (long e = 0; e < SCR; e++) s->scratch[omp_get_thread_num() * SCR + e] = 0;
    return s;
}

static void poison(void *p)
{
    state *s = p;
    fill_nan(s->o, s->n, s->d, BQ);
    fill_nan(s->dq, s->n, s->d, BQ);
    fill_nan(s->dk, s->n, s->d, BK);
    fill_nan(s->dv, s->n, s->d, BK);
}

/* Scores s_j = (q_i . k_j) * scale and dp_j = dO_i . v_j for one key tile. */
static inline void tile_rows(const float *restrict qi, const float *restrict gi,
                             const float *restrict kt, const float *restrict vt, long d,
                             float scale, float *restrict sr, float *restrict dp)
{
    for (int j = 0; j < BK; j++) { sr[j] = 0; dp[j] = 0; }
    for (long c = 0; c < d; c++) {
        const float qc = qi[c] * scale, gc = gi[c];
        const float *restrict kc = kt + c * BK, *restrict vc = vt + c * BK;
#pragma omp simd
        for (int j = 0; j < BK; j++) {
            sr[j] += qc * kc[j];
            dp[j] += gc * vc[j];
        }
    }
}

static void run(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d, tiles = (n + BK - 1) / BK, qtiles = (n + BQ - 1) / BQ;
    const float scale = 1.0f / sqrtf((float)d);
    memopt_forward(s->q, s->k, s->v, s->o, s->lse, s->kp, s->scratch, n, d);
    pack_tiles(s->v, s->vp, n, d);
#pragma omp parallel
    {
        float *restrict sr = s->scratch + (size_t)omp_get_thread_num() * SCR;
        float *restrict dp = sr + BK;
#pragma omp for schedule(static)
        for (long t = 0; t < qtiles; t++)
            for (long i = t * BQ; i < (t + 1) * BQ && i < n; i++) {
                float acc = 0;
                for (long c = 0; c < d; c++) acc += s->dout[i * d + c] * s->o[i * d + c];
                s->dsum[i] = acc;
            }
        /* dK, dV: each thread owns whole key tiles */
#pragma omp for schedule(static)
        for (long t = 0; t < tiles; t++) {
            const long j0 = t * BK, nj = n - j0 < BK ? n - j0 : BK;
            const float *restrict kt = s->kp + t * d * BK, *restrict vt = s->vp + t * d * BK;
            float *restrict dk = s->dk + j0 * d, *restrict dv = s->dv + j0 * d;
            for (long e = 0; e < nj * d; e++) { dk[e] = 0; dv[e] = 0; }
            for (long i = 0; i < n; i++) {
                const float *restrict qi = s->q + i * d, *restrict gi = s->dout + i * d;
                tile_rows(qi, gi, kt, vt, d, scale, sr, dp);
                const float lse = s->lse[i], di = s->dsum[i];
#pragma omp simd
                for (int j = 0; j < BK; j++) {
                    const float pj = exp_fast(sr[j] - lse);
                    sr[j] = pj;
                    dp[j] = pj * (dp[j] - di) * scale;
                }
                for (long j = 0; j < nj; j++) {
                    const float pj = sr[j], dsj = dp[j];
                    float *restrict dkj = dk + j * d, *restrict dvj = dv + j * d;
#pragma omp simd
                    for (long c = 0; c < d; c++) {
                        dvj[c] += pj * gi[c];
                        dkj[c] += dsj * qi[c];
                    }
                }
            }
        }
        /* dQ: each thread owns BQ-row query tiles */
#pragma omp for schedule(static)
        for (long qt = 0; qt < qtiles; qt++)
            for (long i = qt * BQ; i < (qt + 1) * BQ && i < n; i++) {
                const float *restrict qi = s->q + i * d, *restrict gi = s->dout + i * d;
                float *restrict dqi = s->dq + i * d;
                const float lse = s->lse[i], di = s->dsum[i];
                for (long c = 0; c < d; c++) dqi[c] = 0;
                for (long t = 0; t < tiles; t++) {
                    const long j0 = t * BK, nj = n - j0 < BK ? n - j0 : BK;
                    tile_rows(qi, gi, s->kp + t * d * BK, s->vp + t * d * BK, d, scale, sr, dp);
#pragma omp simd
                    for (int j = 0; j < BK; j++) dp[j] = exp_fast(sr[j] - lse) * (dp[j] - di) * scale;
                    for (long j = 0; j < nj; j++) {
                        const float dsj = dp[j];
                        const float *restrict kj = s->k + (j0 + j) * d;
#pragma omp simd
                        for (long c = 0; c < d; c++) dqi[c] += dsj * kj[c];
                    }
                }
            }
    }
}

/* O on the forward's check rows; the gradients need all rows (dK, dV sum
 * over queries), so the whole check is skipped for n > CHECK_ALL_ROWS. */
static double check(void *p)
{
    state *s = p;
    if (s->n > CHECK_ALL_ROWS) return HARNESS_NOT_CHECKED;
    size_t nd = (size_t)s->n * (size_t)s->d;
    long nrows;
    long *rows = check_rows(s->n, &nrows);
    double *ref = malloc(4 * nd * sizeof(double));
    ref_attention_rows(s->q, s->k, s->v, s->n, s->d, rows, nrows, ref);
    double e = rel_err(s->o, ref, nd);
    ref_attention_backward(s->q, s->k, s->v, s->dout, s->n, s->d, ref + nd, ref + 2 * nd, ref + 3 * nd);
    e = rel_worst(e, rel_err(s->dq, ref + nd, nd));
    e = rel_worst(e, rel_err(s->dk, ref + 2 * nd, nd));
    e = rel_worst(e, rel_err(s->dv, ref + 3 * nd, nd));
    free(rows);
    free(ref);
    return e;
}

static int dump(void *p, const char *dir)
{
    state *s = p;
    dumper *dp = dump_open(dir, "attention_fwdbwd", "fused", &s->cfg);
    long shape[2] = {s->n, s->d}, lshape[1] = {s->n};
    dump_array(dp, "q", s->q, 2, shape);
    dump_array(dp, "k", s->k, 2, shape);
    dump_array(dp, "v", s->v, 2, shape);
    dump_array(dp, "do", s->dout, 2, shape);
    dump_array(dp, "o", s->o, 2, shape);
    dump_array(dp, "lse", s->lse, 1, lshape);
    dump_array(dp, "dq", s->dq, 2, shape);
    dump_array(dp, "dk", s->dk, 2, shape);
    dump_array(dp, "dv", s->dv, 2, shape);
    return dump_close(dp);
}

static void teardown(void *p) { st_free(p); }

int main(int argc, char **argv)
{
    const kernel_def k = {"attention_fwdbwd", variants, 0, setup, poison, run, check, dump, teardown};
    return harness_main(argc, argv, &k);
}
