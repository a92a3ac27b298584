/* Packing and float64 references shared by the C attention kernels. */
#include <float.h>
#include <omp.h>
#include <stdlib.h>

#include "harness.h"
#include "kcommon.h"

void pack_tiles(const float *restrict x, float *restrict out, long n, long d)
{
    long tiles = (n + BK - 1) / BK;
#pragma omp parallel for schedule(static)
    for (long t = 0; t < tiles; t++) {
        float *o = out + t * d * BK;
        long nj = n - t * BK < BK ? n - t * BK : BK;
        for (long k = 0; k < d; k++) {
            for (long j = 0; j < nj; j++) o[k * BK + j] = x[(t * BK + j) * d + k];
            for (long j = nj; j < BK; j++) o[k * BK + j] = 0.0f;
        }
    }
}

/* One query tile (rows i0..i1) against all key tiles: S = Q K^T on BK keys,
 * online softmax (running max m, running sum l), O += P V.  kp holds K packed
 * by pack_tiles.  lse (may be NULL) receives m + log(l) per row. */
static void memopt_tile(const float *restrict q, const float *restrict kp,
                        const float *restrict v, float *restrict o, float *restrict lse,
                        long n, long d, long i0, long i1, float *restrict scr)
{
    const float scale = 1.0f / sqrtf((float)d);
    const long tiles = (n + BK - 1) / BK;
    float *restrict m = scr + BQ * BK, *restrict l = m + BQ;
    for (long i = i0; i < i1; i++) {
        m[i - i0] = -FLT_MAX;
        l[i - i0] = 0;
        for (long c = 0; c < d; c++) o[i * d + c] = 0;
    }
    for (long t = 0; t < tiles; t++) {
        const float *restrict kt = kp + t * d * BK;
        const long j0 = t * BK, nj = n - j0 < BK ? n - j0 : BK;
        for (long i = i0; i < i1; i++) {
            float *restrict sr = scr + (i - i0) * BK;
            const float *restrict qi = q + i * d;
            for (int j = 0; j < BK; j++) sr[j] = 0;
            for (long c = 0; c < d; c++) {
                const float qc = qi[c] * scale;
                const float *restrict kc = kt + c * BK;
#pragma omp simd
                for (int j = 0; j < BK; j++) sr[j] += qc * kc[j];
            }
            for (long j = nj; j < BK; j++) sr[j] = -FLT_MAX;
            float mx = m[i - i0];
#pragma omp simd reduction(max : mx)
            for (int j = 0; j < BK; j++) mx = sr[j] > mx ? sr[j] : mx;
            const float corr = exp_fast(m[i - i0] - mx);
            float sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j < BK; j++) {
                sr[j] = exp_fast(sr[j] - mx);
                sum += sr[j];
            }
            m[i - i0] = mx;
            l[i - i0] = l[i - i0] * corr + sum;
            float *restrict oi = o + i * d;
            if (corr != 1.0f) {
#pragma omp simd
                for (long c = 0; c < d; c++) oi[c] *= corr;
            }
            const float *restrict vt = v + j0 * d;
            for (long j = 0; j < nj; j++) {
                const float pj = sr[j];
                const float *restrict vj = vt + j * d;
#pragma omp simd
                for (long c = 0; c < d; c++) oi[c] += pj * vj[c];
            }
        }
    }
    for (long i = i0; i < i1; i++) {
        const float inv = 1.0f / l[i - i0];
        for (long c = 0; c < d; c++) o[i * d + c] *= inv;
        if (lse) lse[i] = m[i - i0] + logf(l[i - i0]);
    }
}

void memopt_forward(const float *q, const float *k, const float *v, float *o, float *lse,
                    float *kp, float *scratch, long n, long d)
{
    pack_tiles(k, kp, n, d);
    const long qtiles = (n + BQ - 1) / BQ;
#pragma omp parallel
    {
        float *scr = scratch + (size_t)omp_get_thread_num() * MEMOPT_SCRATCH;
#pragma omp for schedule(static)
        for (long t = 0; t < qtiles; t++)
            memopt_tile(q, kp, v, o, lse, n, d, t * BQ, (t + 1) * BQ < n ? (t + 1) * BQ : n, scr);
    }
}

long *check_rows(long n, long *count)
{
    long m = n <= CHECK_ALL_ROWS ? n : CHECK_ROWS;
    long *rows = malloc(sizeof(long) * (size_t)m);
    for (long r = 0; r < m; r++) rows[r] = m == n ? r : (long)((double)r * (double)(n - 1) / (double)(m - 1));
    *count = m;
    return rows;
}

/* One row of softmax(q K^T s) in double: p (n), returns nothing; p sums to 1. */
static void ref_probs(const float *qi, const float *k, long n, long d, double *p)
{
    double s = 1.0 / sqrt((double)d), mx = -INFINITY, sum = 0;
    for (long j = 0; j < n; j++) {
        double acc = 0;
        for (long c = 0; c < d; c++) acc += (double)qi[c] * (double)k[j * d + c];
        p[j] = acc * s;
        if (p[j] > mx) mx = p[j];
    }
    for (long j = 0; j < n; j++) { p[j] = exp(p[j] - mx); sum += p[j]; }
    for (long j = 0; j < n; j++) p[j] /= sum;
}

void ref_attention_rows(const float *q, const float *k, const float *v, long n, long d,
                        const long *rows, long nrows, double *out)
{
#pragma omp parallel
    {
        double *p = malloc(sizeof(double) * (size_t)n);
#pragma omp for schedule(dynamic, 4)
        for (long r = 0; r < nrows; r++) {
            long i = rows[r];
            ref_probs(q + i * d, k, n, d, p);
            for (long c = 0; c < d; c++) {
                double acc = 0;
                for (long j = 0; j < n; j++) acc += p[j] * (double)v[j * d + c];
                out[r * d + c] = acc;
            }
        }
        free(p);
    }
}

/* Textbook backward with P materialised one row at a time:
 * dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(P * dP)), dQ = dS K s,
 * dK = dS^T Q s.  dK and dV are accumulated per thread, then summed. */
void ref_attention_backward(const float *q, const float *k, const float *v, const float *dout,
                            long n, long d, double *dq, double *dk, double *dv)
{
    double s = 1.0 / sqrt((double)d);
    int nt = omp_get_max_threads();
    double *part = calloc((size_t)nt * 2 * (size_t)n * (size_t)d, sizeof(double));
#pragma omp parallel
    {
        double *p = malloc(sizeof(double) * (size_t)n);
        double *dp = malloc(sizeof(double) * (size_t)n);
        double *pk = part + (size_t)omp_get_thread_num() * 2 * (size_t)n * (size_t)d;
        double *pv = pk + (size_t)n * (size_t)d;
#pragma omp for schedule(dynamic, 4)
        for (long i = 0; i < n; i++) {
            const float *qi = q + i * d, *gi = dout + i * d;
            ref_probs(qi, k, n, d, p);
            double dsum = 0;
            for (long j = 0; j < n; j++) {
                double acc = 0;
                for (long c = 0; c < d; c++) acc += (double)gi[c] * (double)v[j * d + c];
                dp[j] = acc;
                dsum += p[j] * acc;
            }
            for (long c = 0; c < d; c++) dq[i * d + c] = 0;
            for (long j = 0; j < n; j++) {
                double ds = p[j] * (dp[j] - dsum);
                for (long c = 0; c < d; c++) {
                    dq[i * d + c] += s * ds * (double)k[j * d + c];
                    pk[j * d + c] += s * ds * (double)qi[c];
                    pv[j * d + c] += p[j] * (double)gi[c];
                }
            }
        }
        free(p);
        free(dp);
    }
    for (long e = 0; e < n * d; e++) { dk[e] = 0; dv[e] = 0; }
    for (int t = 0; t < nt; t++) {
        const double *pk = part + (size_t)t * 2 * (size_t)n * (size_t)d;
        for (long e = 0; e < n * d; e++) { dk[e] += pk[e]; dv[e] += pk[(size_t)n * (size_t)d + e]; }
    }
    free(part);
}
