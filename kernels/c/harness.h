/* Shared harness of the C kernel programs: the kernel program contract of
 * docs/contracts.md (arguments, n-sweep, timing, CSV, --check, --dump).
 *
 * A kernel program fills a kernel_def with its callbacks and calls
 * harness_main().  The harness owns everything that must be identical across
 * kernels (and, in semantics, identical to kernels/fortran/harness.f90 and the
 * torch programs): argument parsing, first-call / warm-up / repeat timing with
 * a monotonic clock, poisoning outputs with NaN before each call, and the
 * atomic CSV write.
 */
#ifndef CAMPAIGN_HARNESS_H
#define CAMPAIGN_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* Everything a kernel needs to set up one problem size. */
typedef struct {
    long n;             /* sequence length / rows of this size */
    long d;             /* head / model dimension (--d) */
    long ff;            /* MLP width (--ff), only for kernels with takes_ff */
    int variant;        /* index into kernel_def.variants */
    uint32_t seed;      /* --seed */
    int check;          /* --check given: the kernel may keep extra data */
} harness_cfg;

/* Value a check callback returns when it did not check (rel_err stays empty). */
#define HARNESS_NOT_CHECKED (-1.0)

typedef struct {
    const char *name;              /* CSV `kernel` column, e.g. "attention_forward" */
    const char *const *variants;   /* NULL-terminated; the first is the default */
    int takes_ff;                  /* accepts --ff and writes an `ff` column */
    /* Allocate on the heap, first-touch, fill inputs; NULL if out of memory. */
    void *(*setup)(const harness_cfg *cfg);
    void (*poison)(void *st);      /* outputs := NaN (untimed, before each call) */
    void (*run)(void *st);         /* the timed computation */
    /* rel_err of the outputs against a float64 reference, NAN if an output is
     * NaN, HARNESS_NOT_CHECKED where the size is too large to check. */
    double (*check)(void *st);
    int (*dump)(void *st, const char *dir);   /* 0 on success */
    void (*teardown)(void *st);
} kernel_def;

int harness_main(int argc, char **argv, const kernel_def *k);

/* ---- helpers for kernels ---------------------------------------------- */

/* 64-byte aligned heap allocation (never the stack); NULL on failure. */
void *halloc(size_t bytes);
void hfree(void *p);

/* Default MLP width: 64 * ceil((8d/3) / 64). */
long default_ff(long d);

/* Fill x (rows x cols, row-major) with standard normal values that depend only
 * on (seed, stream, element index) — not on the thread count.  Parallel over
 * blocks of `chunk` rows with schedule(static): the same partition the
 * compute loop uses, so pages are first touched by the thread that uses them. */
void fill_normal(float *x, long rows, long cols, long chunk, uint32_t seed, uint32_t stream);
/* Weights as the torch kernels draw them: normal / sqrt(fan_in), i.e.
 * W_gate, W_up (d x f) by 1/sqrt(d), W_down (f x d) by 1/sqrt(f). */
void scale_weights(float *wg, float *wu, float *wd, long d, long f);
/* Set x to NaN with the same parallel schedule (first touch / poison). */
void fill_nan(float *x, long rows, long cols, long chunk);
/* The scalar the fill uses for element `idx`: shared with harness.f90. */
double normal_at(uint32_t seed, uint32_t stream, uint64_t idx);

/* ||out - ref||_2 / ||ref||_2 over `count` elements; NAN if out has a NaN. */
double rel_err(const float *out, const double *ref, size_t count);
/* Same, accumulated piecewise: call rel_acc for each piece, then rel_final. */
typedef struct { double diff2, ref2; int nan; } rel_accum;
void rel_acc(rel_accum *a, const float *out, const double *ref, size_t count);
double rel_final(const rel_accum *a);
/* Combine several outputs: the worst (largest, NaN wins) rel_err. */
double rel_worst(double a, double b);

/* --dump: raw little-endian float32 files plus meta.json with shapes. */
typedef struct dumper dumper;
dumper *dump_open(const char *dir, const char *kernel, const char *variant,
                  const harness_cfg *cfg);
/* shape: ndim dims (row-major, C order). */
void dump_array(dumper *dp, const char *name, const float *x, int ndim, const long *shape);
int dump_close(dumper *dp);   /* writes meta.json; 0 on success */

#endif
