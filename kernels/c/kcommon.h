/* Pieces the C kernels share: a vectorizable exp, tile sizes, packing and the
 * float64 attention references used by --check. */
#ifndef CAMPAIGN_KCOMMON_H
#define CAMPAIGN_KCOMMON_H

#include <math.h>
#include <stddef.h>

/* Keys per tile of the memory-optimal attention kernels (compile-time so the
 * inner loops have a fixed trip count), and query rows per tile. */
#define BK 64
#define BQ 32

/* exp(x) in float, a few ulp (Cephes expf polynomial), written so that gcc
 * vectorizes loops calling it: libm's expf is not vectorized without
 * -ffast-math and would dominate softmax at d = 64. */
static inline float exp_fast(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504088896341f;
    float r = (t + 12582912.0f) - 12582912.0f; /* round to nearest integer */
    float f = x - r * 0.693359375f;
    f = f + r * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * f + 1.3981999507e-3f;
    p = p * f + 8.3334519073e-3f;
    p = p * f + 4.1665795894e-2f;
    p = p * f + 1.6666665459e-1f;
    p = p * f + 5.0000001201e-1f;
    float y = p * f * f + f + 1.0f;
    union { int i; float f; } s;
    s.i = ((int)r + 127) << 23;
    return y * s.f;
}

/* Pack X (n x d, row-major) into tiles of BK rows, each transposed to
 * [d][BK] and zero padded: out[(t*d + k)*BK + j] = X[(t*BK + j)*d + k]. */
void pack_tiles(const float *restrict x, float *restrict out, long n, long d);

/* Per-thread scratch (floats) of memopt_forward: BQ x BK scores, m, l, and
 * the BQ x d output tile; a multiple of 16 floats (64 bytes). */
static inline long memopt_scratch(long d) { return (BQ * BK + 2 * BQ + BQ * d + 15) / 16 * 16; }
/* Tiled forward with online softmax, parallel over BQ-row query tiles
 * (schedule static).  kp: ceil(n/BK)*BK*d floats; scratch: threads *
 * memopt_scratch(d) floats.  lse (n, may be NULL): log-sum-exp of each row's
 * scaled scores, for a backward that recomputes P = exp(S - lse). */
void memopt_forward(const float *q, const float *k, const float *v, float *o, float *lse,
                    float *kp, float *scratch, long n, long d);

/* float64 references (straightforward, parallel over rows). */
/* O rows for the listed query rows (nrows of them): out[r*d + c]. */
void ref_attention_rows(const float *q, const float *k, const float *v, long n, long d,
                        const long *rows, long nrows, double *out);
/* dQ, dK, dV (each n x d) of O = softmax(Q K^T / sqrt(d)) V given dO. */
void ref_attention_backward(const float *q, const float *k, const float *v, const float *dout,
                            long n, long d, double *dq, double *dk, double *dv);
/* Rows a forward check covers: all if n <= CHECK_ALL_ROWS, else CHECK_ROWS
 * rows spread evenly (first and last included), because the float64
 * reference costs O(n d) per row.  Returns a malloc'd list, its length in
 * *count. */
#define CHECK_ALL_ROWS 4096
#define CHECK_ROWS 512
long *check_rows(long n, long *count);

#endif
