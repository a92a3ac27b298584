/* Shared harness of the C kernel programs; see harness.h. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- arguments --------------------------------------------------------- */

typedef struct {
    long *ns;
    int nn;
    long d, ff;
    int threads;          /* 0: leave OpenMP's default */
    long repeats, warmup;
    int check;
    uint32_t seed;
    int variant;
    const char *out;
    const char *dump;
} args_t;

static const char *prog_name = "kernel";

static void usage_line(FILE *f, const kernel_def *k)
{
    fprintf(f, "usage: %s --n N[,N...] --out FILE.csv [--d D] [--threads T] "
               "[--repeats R] [--warmup W] [--device cpu] [--dtype fp32] "
               "[--variant ", k->name);
    for (int i = 0; k->variants[i]; i++)
        fprintf(f, "%s%s", i ? "|" : "", k->variants[i]);
    fprintf(f, "] [--check] [--seed S] [--dump DIR]%s", k->takes_ff ? " [--ff F]" : "");
}

/* One line on stderr: what is wrong, then the usage; exit 2. */
static void usage_error(const kernel_def *k, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "%s: error: ", prog_name);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (");
    usage_line(stderr, k);
    fprintf(stderr, ")\n");
    exit(2);
}

static int parse_long(const char *s, long lo, long *out)
{
    if (!s || !*s) return -1;
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < lo) return -1;
    *out = v;
    return 0;
}

static void parse_ns(const kernel_def *k, const char *s, args_t *a)
{
    int count = 1;
    for (const char *p = s; *p; p++) count += (*p == ',');
    a->ns = malloc(sizeof(long) * (size_t)count);
    a->nn = 0;
    char *copy = strdup(s);
    char *save = NULL;
    /* strtok would skip empty fields ("64,,128"); walk by hand instead. */
    char *field = copy;
    for (;;) {
        char *comma = strchr(field, ',');
        if (comma) *comma = '\0';
        long v;
        if (parse_long(field, 1, &v) != 0)
            usage_error(k, "--n: '%s' is not a comma-separated list of positive integers%s", s, "");
        a->ns[a->nn++] = v;
        if (!comma) break;
        field = comma + 1;
    }
    (void)save;
    free(copy);
}

static void parse_args(int argc, char **argv, const kernel_def *k, args_t *a)
{
    memset(a, 0, sizeof *a);
    a->d = 64;
    a->ff = 0;
    a->repeats = 5;
    a->warmup = 1;
    int have_n = 0;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        const char *val = NULL;
        char keybuf[64];
        const char *eq = strchr(opt, '=');
        if (strncmp(opt, "--", 2) == 0 && eq && (size_t)(eq - opt) < sizeof keybuf) {
            memcpy(keybuf, opt, (size_t)(eq - opt));
            keybuf[eq - opt] = '\0';
            val = eq + 1;
            opt = keybuf;
        }
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            usage_line(stdout, k);
            fputc('\n', stdout);
            exit(0);
        }
        if (!strcmp(opt, "--check")) {
            if (val) usage_error(k, "--check takes no value%s%s", "", "");
            a->check = 1;
            continue;
        }
        int known = !strcmp(opt, "--n") || !strcmp(opt, "--d") || !strcmp(opt, "--threads") ||
                    !strcmp(opt, "--repeats") || !strcmp(opt, "--warmup") ||
                    !strcmp(opt, "--device") || !strcmp(opt, "--dtype") ||
                    !strcmp(opt, "--variant") || !strcmp(opt, "--seed") ||
                    !strcmp(opt, "--out") || !strcmp(opt, "--dump") ||
                    (k->takes_ff && !strcmp(opt, "--ff"));
        if (!known) usage_error(k, "unknown argument '%s'%s", argv[i], "");
        if (!val) {
            if (i + 1 >= argc) usage_error(k, "%s needs a value%s", opt, "");
            val = argv[++i];
        }
        long v;
        if (!strcmp(opt, "--n")) {
            free(a->ns);
            parse_ns(k, val, a);
            have_n = 1;
        } else if (!strcmp(opt, "--d")) {
            if (parse_long(val, 1, &a->d)) usage_error(k, "--d: '%s' is not a positive integer%s", val, "");
        } else if (!strcmp(opt, "--ff")) {
            if (parse_long(val, 1, &a->ff)) usage_error(k, "--ff: '%s' is not a positive integer%s", val, "");
        } else if (!strcmp(opt, "--threads")) {
            if (parse_long(val, 1, &v) || v > INT_MAX)
                usage_error(k, "--threads: '%s' is not a positive integer%s", val, "");
            a->threads = (int)v;
        } else if (!strcmp(opt, "--repeats")) {
            if (parse_long(val, 1, &a->repeats)) usage_error(k, "--repeats: '%s' is not a positive integer%s", val, "");
        } else if (!strcmp(opt, "--warmup")) {
            if (parse_long(val, 0, &a->warmup)) usage_error(k, "--warmup: '%s' is not a non-negative integer%s", val, "");
        } else if (!strcmp(opt, "--seed")) {
            if (parse_long(val, 0, &v) || v > UINT32_MAX)
                usage_error(k, "--seed: '%s' is not an integer in 0..4294967295%s", val, "");
            a->seed = (uint32_t)v;
        } else if (!strcmp(opt, "--device")) {
            if (strcmp(val, "cpu"))
                usage_error(k, "--device '%s' is not supported: the C implementation runs on cpu only%s", val, "");
        } else if (!strcmp(opt, "--dtype")) {
            if (strcmp(val, "fp32"))
                usage_error(k, "--dtype '%s' is not supported: the C implementation is fp32 only%s", val, "");
        } else if (!strcmp(opt, "--variant")) {
            int found = -1;
            for (int j = 0; k->variants[j]; j++)
                if (!strcmp(val, k->variants[j])) found = j;
            if (found < 0) usage_error(k, "--variant '%s' is not a variant of %s", val, k->name);
            a->variant = found;
        } else if (!strcmp(opt, "--out")) {
            if (!*val) usage_error(k, "--out needs a file name%s%s", "", "");
            a->out = val;
        } else if (!strcmp(opt, "--dump")) {
            if (!*val) usage_error(k, "--dump needs a directory%s%s", "", "");
            a->dump = val;
        }
    }
    if (!have_n) usage_error(k, "--n is required%s%s", "", "");
    if (!a->out) usage_error(k, "--out is required%s%s", "", "");
    if (k->takes_ff && a->ff == 0) a->ff = default_ff(a->d);
}

/* ---- results and CSV ----------------------------------------------------- */

typedef struct {
    long n;
    long repeat;
    double time_s, first_call_s, rel_err;
    int checked;
} row_t;

typedef struct {
    row_t *rows;
    size_t count, cap;
} rows_t;

static void rows_add(rows_t *r, row_t row)
{
    if (r->count == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->rows = realloc(r->rows, r->cap * sizeof(row_t));
        if (!r->rows) { perror("realloc"); exit(1); }
    }
    r->rows[r->count++] = row;
}

/* Env values such as OMP_PLACES="{0,1},{2,3}" hold commas: quote per RFC 4180. */
static void csv_field(FILE *f, const char *s)
{
    if (!s) return;
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The CSV is FILE.tmp while the kernel runs: each n's rows are appended and
   flushed as soon as they are measured (a job stopped by its walltime, a
   cancel or OOM leaves the finished n behind for the ledger), and the file is
   renamed to FILE only at the end, so a killed job never leaves a file that
   looks complete. */
typedef struct {
    FILE *f;
    char *tmp;
    const char *path;
} csv_t;

static int csv_open(csv_t *c, const char *path, const kernel_def *k)
{
    size_t len = strlen(path);
    c->path = path;
    c->tmp = malloc(len + 5);
    memcpy(c->tmp, path, len);
    memcpy(c->tmp + len, ".tmp", 5);
    c->f = fopen(c->tmp, "w");
    if (!c->f) {
        fprintf(stderr, "%s: error: cannot write %s: %s\n", prog_name, c->tmp, strerror(errno));
        free(c->tmp);
        c->tmp = NULL;
        return -1;
    }
    fputs("kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,"
          "rel_err,gpu_model,omp_proc_bind,omp_places,l2_flush,backend", c->f);
    if (k->takes_ff) fputs(",ff", c->f);
    fputc('\n', c->f);
    return fflush(c->f) == 0 ? 0 : -1;
}

/* Rows [from, r->count) of one n, then flush: they survive a kill from here on. */
static int csv_append(csv_t *c, const kernel_def *k, const args_t *a, int threads,
                      const rows_t *r, size_t from)
{
    if (!c->f) return -1;
    FILE *f = c->f;
    const char *bind = getenv("OMP_PROC_BIND");
    const char *places = getenv("OMP_PLACES");
    for (size_t i = from; i < r->count; i++) {
        const row_t *w = &r->rows[i];
        fprintf(f, "%s,c,%s,cpu,fp32,%ld,%ld,%d,%ld,%.9e,%.9e,", k->name,
                k->variants[a->variant], w->n, a->d, threads, w->repeat, w->time_s,
                w->first_call_s);
        if (w->checked) {
            if (isnan(w->rel_err)) fputs("nan", f);
            else fprintf(f, "%.6e", w->rel_err);
        }
        fputs(",,", f);   /* gpu_model empty on CPU */
        csv_field(f, bind);
        fputc(',', f);
        csv_field(f, places);
        fputs(",0,", f);  /* l2_flush 0, backend empty */
        if (k->takes_ff) fprintf(f, ",%ld", a->ff);
        fputc('\n', f);
    }
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

static int csv_close(csv_t *c)
{
    if (!c->f) return -1;
    int bad = ferror(c->f);
    int rc = 0;
    if (fclose(c->f) != 0 || bad || rename(c->tmp, c->path) != 0) {
        fprintf(stderr, "%s: error: cannot write %s: %s\n", prog_name, c->path, strerror(errno));
        rc = -1;
    }
    free(c->tmp);
    c->f = NULL;
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int harness_main(int argc, char **argv, const kernel_def *k)
{
    const char *slash = strrchr(argv[0], '/');
    prog_name = slash ? slash + 1 : argv[0];
    args_t a;
    parse_args(argc, argv, k, &a);
    if (a.threads > 0) omp_set_num_threads(a.threads);
    int threads = omp_get_max_threads();

    rows_t rows = {0};
    int status = 0;
    csv_t csv = {0};
    if (csv_open(&csv, a.out, k) != 0) {
        free(a.ns);
        return 1;
    }
    for (int in = 0; in < a.nn; in++) {
        harness_cfg cfg = {.n = a.ns[in], .d = a.d, .ff = a.ff, .variant = a.variant,
                           .seed = a.seed, .check = a.check};
        void *st = k->setup(&cfg);
        if (!st) {
            fprintf(stderr, "%s: error: out of memory at n=%ld d=%ld; rows of smaller n are kept in %s\n",
                    prog_name, cfg.n, cfg.d, a.out);
            status = 1;
            break;
        }
        k->poison(st);
        double t0 = now_s();
        k->run(st);
        double first = now_s() - t0;
        for (long w = 0; w < a.warmup; w++) {
            k->poison(st);
            k->run(st);
        }
        size_t first_row = rows.count;
        for (long r = 0; r < a.repeats; r++) {
            k->poison(st);
            t0 = now_s();
            k->run(st);
            double t = now_s() - t0;
            rows_add(&rows, (row_t){.n = cfg.n, .repeat = r, .time_s = t, .first_call_s = first});
        }
        if (a.check) {
            double err = k->check(st);
            if (isnan(err) || err != HARNESS_NOT_CHECKED)
                for (size_t i = first_row; i < rows.count; i++) {
                    rows.rows[i].rel_err = err;
                    rows.rows[i].checked = 1;
                }
        }
        if (csv_append(&csv, k, &a, threads, &rows, first_row) != 0) status = 1;
        if (a.dump && in == a.nn - 1 && k->dump(st, a.dump) != 0) {
            fprintf(stderr, "%s: error: cannot write the dump to %s\n", prog_name, a.dump);
            status = 1;
        }
        k->teardown(st);
    }
    if (csv_close(&csv) != 0) status = 1;
    free(rows.rows);
    free(a.ns);
    return status;
}

/* ---- helpers --------------------------------------------------------------- */

void *halloc(size_t bytes)
{
    void *p = NULL;
    if (bytes == 0) bytes = 64;
    if (posix_memalign(&p, 64, bytes) != 0) return NULL;
    return p;
}

void hfree(void *p) { free(p); }

long default_ff(long d) { return 64 * ((8 * d + 3 * 64 - 1) / (3 * 64)); }

/* lowbias32 (Chris Wellons): a 32-bit mixer that harness.f90 reproduces
 * exactly with int64 arithmetic. */
static inline uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static inline uint32_t bits_at(uint32_t key, uint64_t i)
{
    return mix32((uint32_t)i ^ mix32((uint32_t)(i >> 32) + key));
}

double normal_at(uint32_t seed, uint32_t stream, uint64_t idx)
{
    uint32_t key = mix32(seed ^ mix32(stream * 0x9e3779b9U + 0x632be5abU));
    double u1 = ((double)bits_at(key, 2 * idx) + 0.5) * 0x1p-32;
    double u2 = (double)bits_at(key, 2 * idx + 1) * 0x1p-32;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void fill_normal(float *x, long rows, long cols, long chunk, uint32_t seed, uint32_t stream)
{
    long blocks = (rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < blocks; b++) {
        long r1 = (b + 1) * chunk < rows ? (b + 1) * chunk : rows;
        for (long r = b * chunk; r < r1; r++)
            for (long c = 0; c < cols; c++)
                x[r * cols + c] = (float)normal_at(seed, stream, (uint64_t)(r * cols + c));
    }
}

void scale_weights(float *wg, float *wu, float *wd, long d, long f)
{
    const float sd = 1.0f / sqrtf((float)d), sf = 1.0f / sqrtf((float)f);
    for (long e = 0; e < d * f; e++) {
        wg[e] *= sd;
        wu[e] *= sd;
        wd[e] *= sf;
    }
}

void fill_nan(float *x, long rows, long cols, long chunk)
{
    long blocks = (rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < blocks; b++) {
        long r1 = (b + 1) * chunk < rows ? (b + 1) * chunk : rows;
        for (long i = b * chunk * cols; i < r1 * cols; i++) x[i] = NAN;
    }
}

void rel_acc(rel_accum *a, const float *out, const double *ref, size_t count)
{
    double d2 = 0, r2 = 0;
    int nan = 0;
    for (size_t i = 0; i < count; i++) {
        if (isnan(out[i])) nan = 1;
        double e = (double)out[i] - ref[i];
        d2 += e * e;
        r2 += ref[i] * ref[i];
    }
    a->diff2 += d2;
    a->ref2 += r2;
    a->nan |= nan;
}

double rel_final(const rel_accum *a)
{
    if (a->nan) return NAN;
    return a->ref2 > 0 ? sqrt(a->diff2 / a->ref2) : sqrt(a->diff2);
}

double rel_err(const float *out, const double *ref, size_t count)
{
    rel_accum a = {0};
    rel_acc(&a, out, ref, count);
    return rel_final(&a);
}

double rel_worst(double a, double b)
{
    if (isnan(a) || isnan(b)) return NAN;
    return a > b ? a : b;
}

/* ---- dump ------------------------------------------------------------------- */

struct dumper {
    char *dir;
    FILE *meta;
    int count;
    int failed;
};

dumper *dump_open(const char *dir, const char *kernel, const char *variant, const harness_cfg *cfg)
{
    mkdir(dir, 0777);   /* may exist already */
    dumper *dp = calloc(1, sizeof *dp);
    dp->dir = strdup(dir);
    size_t len = strlen(dir) + 32;
    char *path = malloc(len);
    snprintf(path, len, "%s/meta.json", dir);
    dp->meta = fopen(path, "w");
    free(path);
    if (!dp->meta) { dp->failed = 1; return dp; }
    fprintf(dp->meta, "{\"kernel\": \"%s\", \"impl\": \"c\", \"variant\": \"%s\", "
                      "\"n\": %ld, \"d\": %ld, \"ff\": %ld, \"seed\": %u, "
                      "\"dtype\": \"float32\", \"byteorder\": \"little\", \"arrays\": {",
            kernel, variant, cfg->n, cfg->d, cfg->ff, cfg->seed);
    return dp;
}

void dump_array(dumper *dp, const char *name, const float *x, int ndim, const long *shape)
{
    if (dp->failed) return;
    size_t count = 1;
    for (int i = 0; i < ndim; i++) count *= (size_t)shape[i];
    size_t len = strlen(dp->dir) + strlen(name) + 16;
    char *path = malloc(len);
    snprintf(path, len, "%s/%s.f32", dp->dir, name);
    FILE *f = fopen(path, "wb");
    free(path);
    /* x86-64 and aarch64 are little-endian: the raw bytes are the format. */
    if (!f || fwrite(x, sizeof(float), count, f) != count) dp->failed = 1;
    if (f && fclose(f) != 0) dp->failed = 1;
    fprintf(dp->meta, "%s\"%s\": {\"file\": \"%s.f32\", \"shape\": [", dp->count ? ", " : "", name, name);
    for (int i = 0; i < ndim; i++) fprintf(dp->meta, "%s%ld", i ? ", " : "", shape[i]);
    fputs("]}", dp->meta);
    dp->count++;
}

int dump_close(dumper *dp)
{
    int failed = dp->failed;
    if (dp->meta) {
        fputs("}}\n", dp->meta);
        if (fclose(dp->meta) != 0) failed = 1;
    }
    free(dp->dir);
    free(dp);
    return failed ? -1 : 0;
}
