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

/* Register-blocked micro-kernels: MR = 4 query rows x NR = 2 vectors of
 * columns, i.e. 8 vector accumulators, streaming the reduction dimension.
 * With GCC/Clang vector types the accumulators are registers by construction
 * (as arrays, gcc spills them to the stack: 3x slower); other
 * compilers get the same loops on arrays. */
#define MR 4

#if defined(__GNUC__)
#include <string.h>
/* the vector width the target enables: a 32-byte type without AVX is
 * lowered element by element (50x slower) */
#if defined(__AVX512F__)
#define VW 16
#elif defined(__AVX__)
#define VW 8
#else
#define VW 4
#endif
#define NR (2 * VW)
typedef float v8 __attribute__((vector_size(VW * sizeof(float))));
/* unaligned load/store; macros, because functions passing 32-byte vectors
 * by value draw ABI notes from gcc when built without -mavx */
#define ld8(p) __extension__({ v8 r_; memcpy(&r_, (p), sizeof r_); r_; })
#define st8(p, x) do { v8 x_ = (x); memcpy((p), &x_, sizeof x_); } while (0)

/* s[r][j] (stride BK) = scale * q_r . k_j for the MR rows q0..q3 and the BK
 * keys of one packed tile kt[d][BK]. */
static inline void scores_block(const float *restrict q0, const float *restrict q1,
                                const float *restrict q2, const float *restrict q3,
                                const float *restrict kt, long d, float scale, float *restrict s)
{
    for (int j0 = 0; j0 < BK; j0 += NR) {
        v8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
        for (long k = 0; k < d; k++) {
            const v8 k0 = ld8(kt + k * BK + j0), k1 = ld8(kt + k * BK + j0 + VW);
            const float a0 = q0[k], a1 = q1[k], a2 = q2[k], a3 = q3[k];
            c00 += a0 * k0; c01 += a0 * k1;
            c10 += a1 * k0; c11 += a1 * k1;
            c20 += a2 * k0; c21 += a2 * k1;
            c30 += a3 * k0; c31 += a3 * k1;
        }
        st8(s + j0, c00 * scale); st8(s + j0 + VW, c01 * scale);
        st8(s + BK + j0, c10 * scale); st8(s + BK + j0 + VW, c11 * scale);
        st8(s + 2 * BK + j0, c20 * scale); st8(s + 2 * BK + j0 + VW, c21 * scale);
        st8(s + 3 * BK + j0, c30 * scale); st8(s + 3 * BK + j0 + VW, c31 * scale);
    }
}

/* o[r][:] (stride d) += sum_j p[r][j] v_j for the MR rows, nj keys. */
static inline void pv_block(const float *restrict p, const float *restrict v, long nj, long d,
                            float *restrict o)
{
    long c0 = 0;
    float *restrict o0 = o, *restrict o1 = o + d, *restrict o2 = o + 2 * d, *restrict o3 = o + 3 * d;
    for (; c0 + NR <= d; c0 += NR) {
        v8 x00 = ld8(o0 + c0), x01 = ld8(o0 + c0 + VW), x10 = ld8(o1 + c0), x11 = ld8(o1 + c0 + VW);
        v8 x20 = ld8(o2 + c0), x21 = ld8(o2 + c0 + VW), x30 = ld8(o3 + c0), x31 = ld8(o3 + c0 + VW);
        for (long j = 0; j < nj; j++) {
            const v8 v0 = ld8(v + j * d + c0), v1 = ld8(v + j * d + c0 + VW);
            const float a0 = p[j], a1 = p[BK + j], a2 = p[2 * BK + j], a3 = p[3 * BK + j];
            x00 += a0 * v0; x01 += a0 * v1;
            x10 += a1 * v0; x11 += a1 * v1;
            x20 += a2 * v0; x21 += a2 * v1;
            x30 += a3 * v0; x31 += a3 * v1;
        }
        st8(o0 + c0, x00); st8(o0 + c0 + VW, x01); st8(o1 + c0, x10); st8(o1 + c0 + VW, x11);
        st8(o2 + c0, x20); st8(o2 + c0 + VW, x21); st8(o3 + c0, x30); st8(o3 + c0 + VW, x31);
    }
    for (int r = 0; r < MR; r++)   /* d not a multiple of NR */
        for (long j = 0; j < nj; j++)
            for (long c = c0; c < d; c++) o[r * d + c] += p[r * BK + j] * v[j * d + c];
}
#else
#define NR 16
/* s[r][j] (stride BK) = scale * q_r . k_j for the MR rows q0..q3 and the BK
 * keys of one packed tile kt[d][BK]. */
static inline void scores_block(const float *restrict q0, const float *restrict q1,
                                const float *restrict q2, const float *restrict q3,
                                const float *restrict kt, long d, float scale, float *restrict s)
{
    for (int j0 = 0; j0 < BK; j0 += NR) {
        float c0[NR] = {0}, c1[NR] = {0}, c2[NR] = {0}, c3[NR] = {0};
        /* no unroll: gcc spills the accumulators of an unrolled copy */
#pragma GCC unroll 1
        for (long k = 0; k < d; k++) {
            const float *restrict kr = kt + k * BK + j0;
            const float a0 = q0[k], a1 = q1[k], a2 = q2[k], a3 = q3[k];
#pragma omp simd
            for (int j = 0; j < NR; j++) {
                const float kj = kr[j];
                c0[j] += a0 * kj;
                c1[j] += a1 * kj;
                c2[j] += a2 * kj;
                c3[j] += a3 * kj;
            }
        }
#pragma omp simd
        for (int j = 0; j < NR; j++) {
            s[j0 + j] = c0[j] * scale;
            s[BK + j0 + j] = c1[j] * scale;
            s[2 * BK + j0 + j] = c2[j] * scale;
            s[3 * BK + j0 + j] = c3[j] * scale;
        }
    }
}

/* o[r][:] (stride d) += sum_j p[r][j] v_j for the MR rows, nj keys. */
static inline void pv_block(const float *restrict p, const float *restrict v, long nj, long d,
                            float *restrict o)
{
    long c0 = 0;
    float *restrict o0 = o, *restrict o1 = o + d, *restrict o2 = o + 2 * d, *restrict o3 = o + 3 * d;
    for (; c0 + NR <= d; c0 += NR) {
        float x0[NR], x1[NR], x2[NR], x3[NR];
#pragma omp simd
        for (int c = 0; c < NR; c++) {
            x0[c] = o0[c0 + c];
            x1[c] = o1[c0 + c];
            x2[c] = o2[c0 + c];
            x3[c] = o3[c0 + c];
        }
#pragma GCC unroll 1
        for (long j = 0; j < nj; j++) {
            const float *restrict vr = v + j * d + c0;
            const float a0 = p[j], a1 = p[BK + j], a2 = p[2 * BK + j], a3 = p[3 * BK + j];
#pragma omp simd
            for (int c = 0; c < NR; c++) {
                const float vc = vr[c];
                x0[c] += a0 * vc;
                x1[c] += a1 * vc;
                x2[c] += a2 * vc;
                x3[c] += a3 * vc;
            }
        }
#pragma omp simd
        for (int c = 0; c < NR; c++) {
            o0[c0 + c] = x0[c];
            o1[c0 + c] = x1[c];
            o2[c0 + c] = x2[c];
            o3[c0 + c] = x3[c];
        }
    }
    for (int r = 0; r < MR; r++)   /* d not a multiple of NR */
        for (long j = 0; j < nj; j++)
            for (long c = c0; c < d; c++) o[r * d + c] += p[r * BK + j] * v[j * d + c];
}

#endif

/* One query tile (rows i0..i1, at most BQ) against all key tiles:
 * S = Q K^T on BK keys, online softmax (running max m, running sum l),
 * O += P V, accumulated in a per-thread tile and written once at the end.
 * Rows past n in the last tile repeat row n-1 and are never written. */
static void memopt_tile(const float *restrict q, const float *restrict kp,
                        const float *restrict v, float *restrict o, float *restrict lse,
                        long n, long d, long i0, long i1, float *restrict scr)
{
    const float scale = 1.0f / sqrtf((float)d);
    const long tiles = (n + BK - 1) / BK, rows = i1 - i0;
    const long rows_mr = (rows + MR - 1) / MR * MR;
    float *restrict sc = scr, *restrict m = sc + BQ * BK, *restrict l = m + BQ;
    float *restrict ot = l + BQ;   /* BQ x d */
    for (long r = 0; r < rows_mr; r++) {
        m[r] = -FLT_MAX;
        l[r] = 0;
        for (long c = 0; c < d; c++) ot[r * d + c] = 0;
    }
    for (long t = 0; t < tiles; t++) {
        const float *restrict kt = kp + t * d * BK;
        const long j0 = t * BK, nj = n - j0 < BK ? n - j0 : BK;
        for (long r0 = 0; r0 < rows_mr; r0 += MR) {
            const float *qr[MR];
            for (int r = 0; r < MR; r++) {
                long i = i0 + r0 + r;
                qr[r] = q + (i < n ? i : n - 1) * d;
            }
            scores_block(qr[0], qr[1], qr[2], qr[3], kt, d, scale, sc + r0 * BK);
        }
        for (long r = 0; r < rows_mr; r++) {
            float *restrict sr = sc + r * BK;
            for (long j = nj; j < BK; j++) sr[j] = -FLT_MAX;
            float mx = m[r];
#pragma omp simd reduction(max : mx)
            for (int j = 0; j < BK; j++) mx = sr[j] > mx ? sr[j] : mx;
            const float corr = exp_fast(m[r] - mx);
            float sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j < BK; j++) {
                sr[j] = exp_fast(sr[j] - mx);
                sum += sr[j];
            }
            m[r] = mx;
            l[r] = l[r] * corr + sum;
            if (corr != 1.0f) {
                float *restrict orow = ot + r * d;
#pragma omp simd
                for (long c = 0; c < d; c++) orow[c] *= corr;
            }
        }
        for (long r0 = 0; r0 < rows_mr; r0 += MR)
            pv_block(sc + r0 * BK, v + j0 * d, nj, d, ot + r0 * d);
    }
    for (long r = 0; r < rows; r++) {
        const float inv = 1.0f / l[r];
        for (long c = 0; c < d; c++) o[(i0 + r) * d + c] = ot[r * d + c] * inv;
        if (lse) lse[i0 + r] = m[r] + logf(l[r]);
    }
}

void memopt_forward(const float *q, const float *k, const float *v, float *o, float *lse,
                    float *kp, float *scratch, long n, long d)
{
    pack_tiles(k, kp, n, d);
    const long qtiles = (n + BQ - 1) / BQ;
#pragma omp parallel
    {
        float *scr = scratch + (size_t)omp_get_thread_num() * memopt_scratch(d);
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
