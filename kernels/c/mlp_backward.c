/* mlp_backward (naive): backward of the gated MLP y = (silu(A) * B) W_down
 * with A = x^ W_gate, B = x^ W_up (x^: n x d, W_gate/W_up: d x f, W_down:
 * f x d).  Given only x^ and dy (no stored activations, as the cost model's
 * bytes and the torch kernel assume), the timed call recomputes A and B
 * (4 n d f FLOPs beyond the 12 n d f counted as useful) and computes
 *   H = silu(A) * B, dH = dy W_down^T, dA = dH * B * silu'(A), dB = dH * silu(A),
 *   dW_down = H^T dy, dW_gate = x^T dA, dW_up = x^T dB,
 *   dx^ = dA W_gate^T + dB W_up^T.
 * Pass 1 is parallel over rows (dx^, and H, dA, dB into n x f buffers);
 * pass 2 parallel over column blocks of f (the weight gradients). */
#include <omp.h>
#include <stdlib.h>

#include "harness.h"
#include "kcommon.h"

#define ROWS 16   /* rows per static chunk of pass 1 */
#define FB 64     /* columns of f per static chunk of pass 2 */

static const char *const variants[] = {"naive", NULL};

typedef struct {
    harness_cfg cfg;
    long n, d, f;
    float *xh, *dy, *wg, *wu, *wd;                  /* inputs */
    float *a, *b;                                   /* recomputed A, B (n x f) */
    float *h, *da, *db;                             /* n x f workspace */
    float *dxh, *dwg, *dwu, *dwd;                   /* outputs */
} state;

static void st_free(state *s)
{
    float *all[] = {s->xh, s->dy, s->wg, s->wu, s->wd, s->a, s->b, s->h, s->da, s->db,
                    s->dxh, s->dwg, s->dwu, s->dwd};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) hfree(all[i]);
    free(s);
}

static void *setup(const harness_cfg *cfg)
{
    state *s = calloc(1, sizeof *s);
    s->cfg = *cfg;
    long n = s->n = cfg->n, d = s->d = cfg->d, f = s->f = cfg->ff;
    size_t nd = (size_t)n * (size_t)d * 4, df = (size_t)d * (size_t)f * 4, nf = (size_t)n * (size_t)f * 4;
    s->xh = halloc(nd); s->dy = halloc(nd); s->dxh = halloc(nd);
    s->wg = halloc(df); s->wu = halloc(df); s->wd = halloc(df);
    s->dwg = halloc(df); s->dwu = halloc(df); s->dwd = halloc(df);
    s->a = halloc(nf); s->b = halloc(nf); s->h = halloc(nf); s->da = halloc(nf); s->db = halloc(nf);
    if (!(s->xh && s->dy && s->dxh && s->wg && s->wu && s->wd && s->dwg && s->dwu && s->dwd &&
          s->a && s->b && s->h && s->da && s->db)) {
        st_free(s);
        return NULL;
    }
    fill_normal(s->xh, n, d, ROWS, cfg->seed, 1);
    fill_normal(s->dy, n, d, ROWS, cfg->seed, 2);
    fill_normal(s->wg, d, f, 1, cfg->seed, 3);
    fill_normal(s->wu, d, f, 1, cfg->seed, 4);
    fill_normal(s->wd, f, d, 1, cfg->seed, 5);
    scale_weights(s->wg, s->wu, s->wd, d, f);
    fill_nan(s->dxh, n, d, ROWS);
    fill_nan(s->dwg, d, f, 1);
    fill_nan(s->dwu, d, f, 1);
    fill_nan(s->dwd, f, d, FB);
    fill_nan(s->a, n, f, ROWS);
    fill_nan(s->b, n, f, ROWS);
    fill_nan(s->h, n, f, ROWS);
    fill_nan(s->da, n, f, ROWS);
    fill_nan(s->db, n, f, ROWS);
    return s;
}

static void poison(void *p)
{
    state *s = p;
    fill_nan(s->dxh, s->n, s->d, ROWS);
    fill_nan(s->dwg, s->d, s->f, 1);
    fill_nan(s->dwu, s->d, s->f, 1);
    fill_nan(s->dwd, s->f, s->d, FB);
}

static void run(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d, f = s->f;
    const long chunks = (n + ROWS - 1) / ROWS, fblocks = (f + FB - 1) / FB;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++)
            for (long r = ch * ROWS; r < (ch + 1) * ROWS && r < n; r++) {
                float *restrict ar = s->a + r * f, *restrict br = s->b + r * f;
                const float *restrict dyr = s->dy + r * d, *restrict xr = s->xh + r * d;
                for (long j = 0; j < f; j++) { ar[j] = 0; br[j] = 0; }
                for (long k = 0; k < d; k++) {
                    const float xk = xr[k];
                    const float *restrict wgk = s->wg + k * f, *restrict wuk = s->wu + k * f;
#pragma omp simd
                    for (long j = 0; j < f; j++) {
                        ar[j] += xk * wgk[j];
                        br[j] += xk * wuk[j];
                    }
                }
                float *restrict hr = s->h + r * f, *restrict dar = s->da + r * f, *restrict dbr = s->db + r * f;
                for (long j = 0; j < f; j++) {
                    const float *restrict wdj = s->wd + j * d;
                    float dh = 0;
#pragma omp simd reduction(+ : dh)
                    for (long c = 0; c < d; c++) dh += dyr[c] * wdj[c];
                    dar[j] = dh;
                }
#pragma omp simd
                for (long j = 0; j < f; j++) {
                    const float sig = 1.0f / (1.0f + exp_fast(-ar[j])), silu = ar[j] * sig;
                    const float dh = dar[j];
                    hr[j] = silu * br[j];
                    dar[j] = dh * br[j] * sig * (1.0f + ar[j] * (1.0f - sig));
                    dbr[j] = dh * silu;
                }
                float *restrict dxr = s->dxh + r * d;
                for (long k = 0; k < d; k++) {
                    const float *restrict wgk = s->wg + k * f, *restrict wuk = s->wu + k * f;
                    float acc = 0;
#pragma omp simd reduction(+ : acc)
                    for (long j = 0; j < f; j++) acc += dar[j] * wgk[j] + dbr[j] * wuk[j];
                    dxr[k] = acc;
                }
            }
#pragma omp for schedule(static)
        for (long fb = 0; fb < fblocks; fb++) {
            const long j0 = fb * FB, j1 = j0 + FB < f ? j0 + FB : f;
            for (long k = 0; k < d; k++)
                for (long j = j0; j < j1; j++) { s->dwg[k * f + j] = 0; s->dwu[k * f + j] = 0; }
            for (long e = j0 * d; e < j1 * d; e++) s->dwd[e] = 0;
            for (long r = 0; r < n; r++) {
                const float *restrict dar = s->da + r * f, *restrict dbr = s->db + r * f;
                const float *restrict hr = s->h + r * f, *restrict dyr = s->dy + r * d;
                for (long k = 0; k < d; k++) {
                    const float xk = s->xh[r * d + k];
                    float *restrict gk = s->dwg + k * f, *restrict uk = s->dwu + k * f;
#pragma omp simd
                    for (long j = j0; j < j1; j++) {
                        gk[j] += xk * dar[j];
                        uk[j] += xk * dbr[j];
                    }
                }
                for (long j = j0; j < j1; j++) {
                    const float hj = hr[j];
                    float *restrict wdj = s->dwd + j * d;
#pragma omp simd
                    for (long c = 0; c < d; c++) wdj[c] += hj * dyr[c];
                }
            }
        }
    }
}

/* All rows (the weight gradients sum over them): O(n d f) in float64.
 * A, B are recomputed from x^ in double, not taken from the float store. */
static double check(void *p)
{
    state *s = p;
    const long n = s->n, d = s->d, f = s->f;
    size_t nd = (size_t)n * (size_t)d, df = (size_t)d * (size_t)f;
    double *dx = calloc(nd, sizeof(double)), *dwg = calloc(df, sizeof(double));
    double *dwu = calloc(df, sizeof(double)), *dwd = calloc(df, sizeof(double));
    double *h = malloc(sizeof(double) * (size_t)n * (size_t)f);
    double *da = malloc(sizeof(double) * (size_t)n * (size_t)f), *db = malloc(sizeof(double) * (size_t)n * (size_t)f);
#pragma omp parallel for schedule(static)
    for (long r = 0; r < n; r++)
        for (long j = 0; j < f; j++) {
            double a = 0, b = 0, dh = 0;
            for (long k = 0; k < d; k++) {
                a += (double)s->xh[r * d + k] * s->wg[k * f + j];
                b += (double)s->xh[r * d + k] * s->wu[k * f + j];
                dh += (double)s->dy[r * d + k] * s->wd[j * d + k];
            }
            double sig = 1.0 / (1.0 + exp(-a));
            h[r * f + j] = a * sig * b;
            da[r * f + j] = dh * b * sig * (1.0 + a * (1.0 - sig));
            db[r * f + j] = dh * a * sig;
        }
#pragma omp parallel for schedule(static)
    for (long r = 0; r < n; r++)
        for (long k = 0; k < d; k++) {
            double acc = 0;
            for (long j = 0; j < f; j++) acc += da[r * f + j] * s->wg[k * f + j] + db[r * f + j] * s->wu[k * f + j];
            dx[r * d + k] = acc;
        }
#pragma omp parallel for schedule(static)
    for (long j = 0; j < f; j++)
        for (long r = 0; r < n; r++) {
            for (long k = 0; k < d; k++) {
                dwg[k * f + j] += (double)s->xh[r * d + k] * da[r * f + j];
                dwu[k * f + j] += (double)s->xh[r * d + k] * db[r * f + j];
                dwd[j * d + k] += h[r * f + j] * s->dy[r * d + k];
            }
        }
    double e = rel_err(s->dxh, dx, nd);
    e = rel_worst(e, rel_err(s->dwg, dwg, df));
    e = rel_worst(e, rel_err(s->dwu, dwu, df));
    e = rel_worst(e, rel_err(s->dwd, dwd, df));
    free(dx); free(dwg); free(dwu); free(dwd); free(h); free(da); free(db);
    return e;
}

static int dump(void *p, const char *dir)
{
    state *s = p;
    dumper *dp = dump_open(dir, "mlp_backward", "naive", &s->cfg);
    long xs[2] = {s->n, s->d}, ws[2] = {s->d, s->f}, ds[2] = {s->f, s->d};
    dump_array(dp, "xhat", s->xh, 2, xs);
    dump_array(dp, "dy", s->dy, 2, xs);
    dump_array(dp, "w_gate", s->wg, 2, ws);
    dump_array(dp, "w_up", s->wu, 2, ws);
    dump_array(dp, "w_down", s->wd, 2, ds);
    dump_array(dp, "dxhat", s->dxh, 2, xs);
    dump_array(dp, "dw_gate", s->dwg, 2, ws);
    dump_array(dp, "dw_up", s->dwu, 2, ws);
    dump_array(dp, "dw_down", s->dwd, 2, ds);
    return dump_close(dp);
}

static void teardown(void *p) { st_free(p); }

int main(int argc, char **argv)
{
    const kernel_def k = {"mlp_backward", variants, 1, setup, poison, run, check, dump, teardown};
    return harness_main(argc, argv, &k);
}
