/* attention_backward (naive): given Q, K, V, dO and the stored n x n
 * probabilities P of a forward (computed untimed in setup), compute
 *   dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(P * dP)),
 *   dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
 * dS is a second n x n heap buffer.  Only the backward is timed. */
#include <float.h>
#include <omp.h>
#include <stdlib.h>

#include "harness.h"
#include "kcommon.h"

static const char *const variants[] = {"naive", NULL};

typedef struct {
    harness_cfg cfg;
    long n, d;
    float *q, *k, *v, *dout, *p, *ds, *dq, *dk, *dv;
} state;

static void st_free(state *s)
{
    hfree(s->q); hfree(s->k); hfree(s->v); hfree(s->dout); hfree(s->p); hfree(s->ds);
    hfree(s->dq); hfree(s->dk); hfree(s->dv);
    free(s);
}

/* The stored P: row softmax of Q K^T / sqrt(d) (float, like a forward). */
static void forward_probs(state *s)
{
    const long n = s->n, d = s->d;
    const float scale = 1.0f / sqrtf((float)d);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float *restrict pr = s->p + (size_t)i * (size_t)n;
        const float *restrict qi = s->q + i * d;
        float mx = -FLT_MAX, sum = 0;
        for (long j = 0; j < n; j++) {
            const float *restrict kj = s->k + j * d;
            float acc = 0;
#pragma omp simd reduction(+ : acc)
            for (long c = 0; c < d; c++) acc += qi[c] * kj[c];
            pr[j] = acc * scale;
            mx = pr[j] > mx ? pr[j] : mx;
        }
        for (long j = 0; j < n; j++) { pr[j] = exp_fast(pr[j] - mx); sum += pr[j]; }
        for (long j = 0; j < n; j++) pr[j] /= sum;
    }
}

static void *setup(const harness_cfg *cfg)
{
    state *s = calloc(1, sizeof *s);
    s->cfg = *cfg;
    long n = s->n = cfg->n, d = s->d = cfg->d;
    size_t nd = (size_t)n * (size_t)d * sizeof(float), nn = (size_t)n * (size_t)n * sizeof(float);
    s->q = halloc(nd); s->k = halloc(nd); s->v = halloc(nd); s->dout = halloc(nd);
    s->dq = halloc(nd); s->dk = halloc(nd); s->dv = halloc(nd);
    s->p = halloc(nn); s->ds = halloc(nn);
    if (!(s->q && s->k && s->v && s->dout && s->dq && s->dk && s->dv && s->p && s->ds)) {
        st_free(s);
        return NULL;
    }
    fill_normal(s->q, n, d, 1, cfg->seed, 1);
    fill_normal(s->k, n, d, 1, cfg->seed, 2);
    fill_normal(s->v, n, d, 1, cfg->seed, 3);
    fill_normal(s->dout, n, d, 1, cfg->seed, 4);
    fill_nan(s->p, n, n, 1);
    fill_nan(s->ds, n, n, 1);
    fill_nan(s->dq, n, d, 1);
    fill_nan(s->dk, n, d, BK);
    fill_nan(s->dv, n, d, BK);
    forward_probs(s);
    return s;
}

static void poison(void *p)
{
    state *s = p;
    fill_nan(s->dq, s->n, s->d, 1);
    fill_nan(s->dk, s->n, s->d, BK);
    fill_nan(s->dv, s->n, s->d, BK);
}

static void run(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d;
    const float scale = 1.0f / sqrtf((float)d);
    /* pass 1, rows of dS and dQ */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const float *restrict pr = s->p + (size_t)i * (size_t)n;
        float *restrict dsr = s->ds + (size_t)i * (size_t)n;
        const float *restrict gi = s->dout + i * d;
        float dsum = 0;
        for (long j = 0; j < n; j++) {
            const float *restrict vj = s->v + j * d;
            float acc = 0;
#pragma omp simd reduction(+ : acc)
            for (long c = 0; c < d; c++) acc += gi[c] * vj[c];
            dsr[j] = acc;
            dsum += pr[j] * acc;
        }
        float *restrict dqi = s->dq + i * d;
        for (long c = 0; c < d; c++) dqi[c] = 0;
        for (long j = 0; j < n; j++) {
            const float dsj = pr[j] * (dsr[j] - dsum);
            dsr[j] = dsj;
            const float *restrict kj = s->k + j * d;
#pragma omp simd
            for (long c = 0; c < d; c++) dqi[c] += dsj * kj[c];
        }
        for (long c = 0; c < d; c++) dqi[c] *= scale;
    }
    /* pass 2, dK and dV: column sums, parallel over blocks of BK keys */
    const long blocks = (n + BK - 1) / BK;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < blocks; b++) {
        const long j0 = b * BK, j1 = j0 + BK < n ? j0 + BK : n;
        float *restrict dk = s->dk, *restrict dv = s->dv;
        for (long e = j0 * d; e < j1 * d; e++) { dk[e] = 0; dv[e] = 0; }
        for (long i = 0; i < n; i++) {
            const float *restrict pr = s->p + (size_t)i * (size_t)n;
            const float *restrict dsr = s->ds + (size_t)i * (size_t)n;
            const float *restrict qi = s->q + i * d, *restrict gi = s->dout + i * d;
            for (long j = j0; j < j1; j++) {
                const float pj = pr[j], dsj = dsr[j] * scale;
                float *restrict dkj = dk + j * d, *restrict dvj = dv + j * d;
#pragma omp simd
                for (long c = 0; c < d; c++) {
                    dvj[c] += pj * gi[c];
                    dkj[c] += dsj * qi[c];
                }
            }
        }
    }
}

/* Needs all rows (dK, dV sum over queries): only for n <= CHECK_ALL_ROWS. */
static double check(void *p)
{
    state *s = p;
    if (s->n > CHECK_ALL_ROWS) return HARNESS_NOT_CHECKED;
    size_t nd = (size_t)s->n * (size_t)s->d;
    double *ref = malloc(3 * nd * sizeof(double));
    ref_attention_backward(s->q, s->k, s->v, s->dout, s->n, s->d, ref, ref + nd, ref + 2 * nd);
    double e = rel_err(s->dq, ref, nd);
    e = rel_worst(e, rel_err(s->dk, ref + nd, nd));
    e = rel_worst(e, rel_err(s->dv, ref + 2 * nd, nd));
    free(ref);
    return e;
}

static int dump(void *p, const char *dir)
{
    state *s = p;
    dumper *dp = dump_open(dir, "attention_backward", "naive", &s->cfg);
    long shape[2] = {s->n, s->d}, pshape[2] = {s->n, s->n};
    dump_array(dp, "q", s->q, 2, shape);
    dump_array(dp, "k", s->k, 2, shape);
    dump_array(dp, "v", s->v, 2, shape);
    dump_array(dp, "do", s->dout, 2, shape);
    dump_array(dp, "p", s->p, 2, pshape);
    dump_array(dp, "dq", s->dq, 2, shape);
    dump_array(dp, "dk", s->dk, 2, shape);
    dump_array(dp, "dv", s->dv, 2, shape);
    return dump_close(dp);
}

static void teardown(void *p) { st_free(p); }

int main(int argc, char **argv)
{
    const kernel_def k = {"attention_backward", variants, 0, setup, poison, run, check, dump, teardown};
    return harness_main(argc, argv, &k);
}
