/* decode (naive): one query q (d) against a KV cache K, V (n x d):
 * o = softmax(K q / sqrt(d)) V.  Parallel over the n keys: each thread runs
 * an online softmax over its static share of key blocks (running max m, sum
 * l, partial o), and the partials are merged with their max-rescaling at the
 * end.  Memory is O(n d) for the cache plus O(threads d): scales to n >> 1e6. */
#include <float.h>
#include <omp.h>
#include <stdlib.h>

#include "harness.h"
#include "kcommon.h"

static const char *const variants[] = {"naive", NULL};

/* keys per block: scores of a block are computed, then exp'd together */
#define KB 256

typedef struct {
    harness_cfg cfg;
    long n, d, slot, nt_max;   /* slot: per-thread floats/doubles, padded to 64 bytes */
    float *q, *k, *v, *o, *part;
    double *dpart;     /* per thread: acc[d], m, l in double across blocks */
} state;

static void st_free(state *s)
{
    hfree(s->q); hfree(s->k); hfree(s->v); hfree(s->o); hfree(s->part); hfree(s->dpart);
    free(s);
}

static void *setup(const harness_cfg *cfg)
{
    state *s = calloc(1, sizeof *s);
    s->cfg = *cfg;
    long n = s->n = cfg->n, d = s->d = cfg->d;
    s->slot = ((d + 2 + KB) + 15) / 16 * 16;   /* block acc[d], scores[KB] */
    size_t nd = (size_t)n * (size_t)d * sizeof(float);
    int nt = omp_get_max_threads();
    s->q = halloc((size_t)d * sizeof(float)); s->o = halloc((size_t)d * sizeof(float));
    s->k = halloc(nd); s->v = halloc(nd);
    s->part = halloc((size_t)nt * (size_t)s->slot * sizeof(float));
    s->nt_max = nt;
    s->dpart = halloc((size_t)(nt + 1) * (size_t)s->slot * sizeof(double));   /* + merge */
    if (!(s->q && s->o && s->k && s->v && s->part && s->dpart)) { st_free(s); return NULL; }
    fill_normal(s->q, 1, d, 1, cfg->seed, 1);
    fill_normal(s->k, n, d, KB, cfg->seed, 2);   /* same static block schedule as run */
    fill_normal(s->v, n, d, KB, cfg->seed, 3);
    fill_nan(s->part, nt, s->slot, 1);
    for (long e = 0; e < s->slot; e++) s->dpart[(size_t)nt * (size_t)s->slot + e] = 0;
#pragma omp parallel
    for (long e = 0; e < s->slot; e++) s->dpart[(size_t)omp_get_thread_num() * (size_t)s->slot + e] = 0;
    fill_nan(s->o, 1, d, 1);
    return s;
}

static void poison(void *p)
{
    state *s = p;
    for (long c = 0; c < s->d; c++) s->o[c] = NAN;
}

static void run(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d, blocks = (n + KB - 1) / KB;
    const float scale = 1.0f / sqrtf((float)d);
    const float *restrict q = s->q;
    int nt = 1;
#pragma omp parallel
    {
        /* float within a block of KB keys, double across blocks: the sum
         * over n = 1e6+ keys must not lose fp32 precision. */
        float *restrict acc = s->part + (size_t)omp_get_thread_num() * (size_t)s->slot;
        float *restrict sc = acc + d;
        double *restrict dacc = s->dpart + (size_t)omp_get_thread_num() * (size_t)s->slot;
        float m = -FLT_MAX;
        double l = 0;
        for (long c = 0; c < d; c++) dacc[c] = 0;
#pragma omp single
        nt = omp_get_num_threads();
#pragma omp for schedule(static)
        for (long b = 0; b < blocks; b++) {
            const long j0 = b * KB, nj = n - j0 < KB ? n - j0 : KB;
            float mx = m;
            for (long j = 0; j < nj; j++) {
                const float *restrict kj = s->k + (j0 + j) * d;
                float dot = 0;
#pragma omp simd reduction(+ : dot)
                for (long c = 0; c < d; c++) dot += q[c] * kj[c];
                sc[j] = dot * scale;
                mx = sc[j] > mx ? sc[j] : mx;
            }
            const double corr = exp((double)m - (double)mx);
            float sum = 0;
#pragma omp simd reduction(+ : sum)
            for (long j = 0; j < nj; j++) {
                sc[j] = exp_fast(sc[j] - mx);
                sum += sc[j];
            }
            for (long c = 0; c < d; c++) acc[c] = 0;
            for (long j = 0; j < nj; j++) {
                const float pj = sc[j];
                const float *restrict vj = s->v + (j0 + j) * d;
#pragma omp simd
                for (long c = 0; c < d; c++) acc[c] += pj * vj[c];
            }
            l = l * corr + sum;
            m = mx;
            for (long c = 0; c < d; c++) dacc[c] = dacc[c] * corr + acc[c];
        }
        dacc[d] = m;
        dacc[d + 1] = l;
    }
    /* merge the per-thread partials (a thread without blocks has l = 0) */
    double M = -INFINITY, L = 0;
    for (int t = 0; t < nt; t++) {
        const double *pt = s->dpart + (size_t)t * (size_t)s->slot;
        if (pt[d + 1] > 0 && pt[d] > M) M = pt[d];
    }
    double *o = s->dpart + (size_t)s->nt_max * (size_t)s->slot;
    for (long c = 0; c < d; c++) o[c] = 0;
    for (int t = 0; t < nt; t++) {
        const double *pt = s->dpart + (size_t)t * (size_t)s->slot;
        if (!(pt[d + 1] > 0)) continue;
        const double w = exp(pt[d] - M);
        L += w * pt[d + 1];
        for (long c = 0; c < d; c++) o[c] += w * pt[c];
    }
    for (long c = 0; c < d; c++) s->o[c] = (float)(o[c] / L);
}

/* All n keys: the float64 reference costs O(n d). */
static double check(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d;
    const double scale = 1.0 / sqrt((double)d);
    double *sc = malloc(sizeof(double) * (size_t)n), ref[d];
    double mx = -INFINITY, sum = 0;
#pragma omp parallel for reduction(max : mx)
    for (long j = 0; j < n; j++) {
        double acc = 0;
        for (long c = 0; c < d; c++) acc += (double)s->q[c] * (double)s->k[j * d + c];
        sc[j] = acc * scale;
        mx = sc[j] > mx ? sc[j] : mx;
    }
    for (long c = 0; c < d; c++) ref[c] = 0;
    for (long j = 0; j < n; j++) {
        double pj = exp(sc[j] - mx);
        sum += pj;
        for (long c = 0; c < d; c++) ref[c] += pj * (double)s->v[j * d + c];
    }
    for (long c = 0; c < d; c++) ref[c] /= sum;
    free(sc);
    return rel_err(s->o, ref, (size_t)d);
}

static int dump(void *p, const char *dir)
{
    state *s = p;
    dumper *dp = dump_open(dir, "decode", "naive", &s->cfg);
    long shape[2] = {s->n, s->d}, qshape[1] = {s->d};
    dump_array(dp, "q", s->q, 1, qshape);
    dump_array(dp, "k", s->k, 2, shape);
    dump_array(dp, "v", s->v, 2, shape);
    dump_array(dp, "o", s->o, 1, qshape);
    return dump_close(dp);
}

static void teardown(void *p) { st_free(p); }

int main(int argc, char **argv)
{
    const kernel_def k = {"decode", variants, 0, setup, poison, run, check, dump, teardown};
    return harness_main(argc, argv, &k);
}
