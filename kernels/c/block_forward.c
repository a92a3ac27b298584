/* block_forward (naive): y = x + W_down^T (silu(x^ W_gate) * (x^ W_up)),
 * x^ = RMSNorm(x) * g = x / sqrt(mean(x^2) + eps) * g, eps = 1e-6.
 * x, y: n x d; g: d; W_gate, W_up: d x f; W_down: f x d (row-major).
 * Parallel over rows; per-thread scratch of d + 2 f floats, no n x f buffer. */
#include <omp.h>
#include <stdlib.h>

#include "harness.h"
#include "kcommon.h"

#define RMS_EPS 1e-6f
#define ROWS 16   /* rows per static chunk (first touch and compute) */

static const char *const variants[] = {"naive", NULL};

typedef struct {
    harness_cfg cfg;
    long n, d, f, slot;
    float *x, *g, *wg, *wu, *wd, *y, *scratch;
} state;

static void st_free(state *s)
{
    hfree(s->x); hfree(s->g); hfree(s->wg); hfree(s->wu); hfree(s->wd); hfree(s->y);
    hfree(s->scratch);
    free(s);
}

static void *setup(const harness_cfg *cfg)
{
    state *s = calloc(1, sizeof *s);
    s->cfg = *cfg;
    long n = s->n = cfg->n, d = s->d = cfg->d, f = s->f = cfg->ff;
    s->slot = (d + 2 * f + 15) / 16 * 16;
    size_t nd = (size_t)n * (size_t)d * sizeof(float), df = (size_t)d * (size_t)f * sizeof(float);
    s->x = halloc(nd); s->y = halloc(nd); s->g = halloc((size_t)d * sizeof(float));
    s->wg = halloc(df); s->wu = halloc(df); s->wd = halloc(df);
    s->scratch = halloc((size_t)omp_get_max_threads() * (size_t)s->slot * sizeof(float));
    if (!(s->x && s->y && s->g && s->wg && s->wu && s->wd && s->scratch)) { st_free(s); return NULL; }
    fill_normal(s->x, n, d, ROWS, cfg->seed, 1);
    fill_normal(s->g, 1, d, 1, cfg->seed, 2);
    fill_normal(s->wg, d, f, 1, cfg->seed, 3);
    fill_normal(s->wu, d, f, 1, cfg->seed, 4);
    fill_normal(s->wd, f, d, 1, cfg->seed, 5);
    scale_weights(s->wg, s->wu, s->wd, d, f);
    fill_nan(s->y, n, d, ROWS);
    fill_nan(s->scratch, omp_get_max_threads(), s->slot, 1);
    return s;
}

static void poison(void *p)
{
    state *s = p;
    fill_nan(s->y, s->n, s->d, ROWS);
}

static void run(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d, f = s->f, chunks = (n + ROWS - 1) / ROWS;
#pragma omp parallel
    {
        float *restrict xh = s->scratch + (size_t)omp_get_thread_num() * (size_t)s->slot;
        float *restrict a = xh + d, *restrict b = a + f;
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++)
            for (long r = ch * ROWS; r < (ch + 1) * ROWS && r < n; r++) {
                const float *restrict xr = s->x + r * d;
                float ss = 0;
#pragma omp simd reduction(+ : ss)
                for (long c = 0; c < d; c++) ss += xr[c] * xr[c];
                const float inv = 1.0f / sqrtf(ss / (float)d + RMS_EPS);
                for (long c = 0; c < d; c++) xh[c] = xr[c] * inv * s->g[c];
                for (long j = 0; j < f; j++) { a[j] = 0; b[j] = 0; }
                for (long k = 0; k < d; k++) {
                    const float xk = xh[k];
                    const float *restrict wgk = s->wg + k * f, *restrict wuk = s->wu + k * f;
#pragma omp simd
                    for (long j = 0; j < f; j++) {
                        a[j] += xk * wgk[j];
                        b[j] += xk * wuk[j];
                    }
                }
#pragma omp simd
                for (long j = 0; j < f; j++) a[j] = a[j] / (1.0f + exp_fast(-a[j])) * b[j];
                float *restrict yr = s->y + r * d;
                for (long c = 0; c < d; c++) yr[c] = xr[c];
                for (long j = 0; j < f; j++) {
                    const float hj = a[j];
                    const float *restrict wdj = s->wd + j * d;
#pragma omp simd
                    for (long c = 0; c < d; c++) yr[c] += hj * wdj[c];
                }
            }
    }
}

/* All rows: the float64 reference costs O(n d f). */
static double check(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d, f = s->f;
    rel_accum total = {0};
#pragma omp parallel
    {
        double *xh = malloc(sizeof(double) * (size_t)(d + f + d));
        double *h = xh + d, *yr = h + f;
        rel_accum part = {0};
#pragma omp for schedule(static)
        for (long r = 0; r < n; r++) {
            const float *xr = s->x + r * d;
            double ss = 0;
            for (long c = 0; c < d; c++) ss += (double)xr[c] * xr[c];
            double inv = 1.0 / sqrt(ss / (double)d + (double)RMS_EPS);
            for (long c = 0; c < d; c++) xh[c] = xr[c] * inv * s->g[c];
            for (long j = 0; j < f; j++) {
                double a = 0, b = 0;
                for (long k = 0; k < d; k++) {
                    a += xh[k] * s->wg[k * f + j];
                    b += xh[k] * s->wu[k * f + j];
                }
                h[j] = a / (1.0 + exp(-a)) * b;
            }
            for (long c = 0; c < d; c++) {
                double acc = xr[c];
                for (long j = 0; j < f; j++) acc += h[j] * s->wd[j * d + c];
                yr[c] = acc;
            }
            rel_acc(&part, s->y + r * d, yr, (size_t)d);
        }
#pragma omp critical
        {
            total.diff2 += part.diff2;
            total.ref2 += part.ref2;
            total.nan |= part.nan;
        }
        free(xh);
    }
    return rel_final(&total);
}

static int dump(void *p, const char *dir)
{
    state *s = p;
    dumper *dp = dump_open(dir, "block_forward", "naive", &s->cfg);
    long xs[2] = {s->n, s->d}, gs[1] = {s->d}, ws[2] = {s->d, s->f}, ds[2] = {s->f, s->d};
    dump_array(dp, "x", s->x, 2, xs);
    dump_array(dp, "g", s->g, 1, gs);
    dump_array(dp, "w_gate", s->wg, 2, ws);
    dump_array(dp, "w_up", s->wu, 2, ws);
    dump_array(dp, "w_down", s->wd, 2, ds);
    dump_array(dp, "y", s->y, 2, xs);
    return dump_close(dp);
}

static void teardown(void *p) { st_free(p); }

int main(int argc, char **argv)
{
    const kernel_def k = {"block_forward", variants, 1, setup, poison, run, check, dump, teardown};
    return harness_main(argc, argv, &k);
}
