/* mpi_allreduce: an MPI program of the kernel program contract
 * (docs/design.md#kernel-program-contract, docs/contracts.md#mpi-and-multi-rank-programs).
 *
 * Variants (n = float32 elements):
 *   allreduce  MPI_Allreduce(SUM) of n floats per rank: latency (small n) and
 *              bandwidth (large n) over message sizes; communication only.
 *   ring       ranks-1 shifts of n floats around the ring (MPI_Sendrecv to
 *              rank+1, from rank-1): point-to-point bandwidth; comm only.
 *   strong     fixed total work: n elements split over the ranks, each does
 *              d multiply-add passes over its share (compute), then an
 *              MPI_Allreduce of 64 partial sums (comm).
 *   weak       fixed work per rank: n elements on every rank, d passes, then
 *              the same 64-float MPI_Allreduce.
 * Every rank times each repeat between two barriers; rank 0 writes one row
 * per repeat with the slowest rank's time (MPI_MAX), and the slowest rank's
 * compute and comm parts (`compute_s`, `comm_s`), `ranks` (world size),
 * `nodes` (distinct hosts: ranks sharing memory are one node) and
 * `msg_bytes` (bytes each rank sends per repeat's collective). --check: the
 * first call's result against a double reference (see check()), the worst rank's.
 * Exit 2 on bad arguments (rank 0 says why), 0 when every row was written.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PARTIALS 64

static const char *const VARIANTS[] = {"allreduce", "ring", "strong", "weak", NULL};
enum { V_ALLREDUCE, V_RING, V_STRONG, V_WEAK };

typedef struct {
    long *ns;
    int nn;
    long d, repeats, warmup;
    int threads, variant, check;
    int figure;        /* --figure 1: each row also carries a figure of merit (docs/contracts.md#figures-of-merit) */
    unsigned seed;
    const char *out;
} args_t;

static int world_rank = 0;

static void usage(const char *fmt, const char *what)
{
    if (world_rank == 0) {
        fprintf(stderr, "mpi_allreduce: error: ");
        fprintf(stderr, fmt, what);
        fprintf(stderr, " (usage: mpi_allreduce --n N[,N...] --out FILE.csv [--d PASSES] [--threads T] "
                        "[--repeats R] [--warmup W] [--device cpu] [--dtype fp32] "
                        "[--variant allreduce|ring|strong|weak] [--check] [--seed S])\n");
    }
    MPI_Finalize();
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

static void parse_ns(const char *s, args_t *a)
{
    int count = 1;
    for (const char *p = s; *p; p++) count += (*p == ',');
    a->ns = malloc(sizeof(long) * (size_t)count);
    char *copy = strdup(s);
    char *field = copy;
    a->nn = 0;
    for (;;) {
        char *comma = strchr(field, ',');
        if (comma) *comma = '\0';
        if (parse_long(field, 1, &a->ns[a->nn]) != 0)
            usage("--n: '%s' is not a comma-separated list of positive integers", s);
        a->nn++;
        if (!comma) break;
        field = comma + 1;
    }
    free(copy);
}

static void parse(int argc, char **argv, args_t *a)
{
    memset(a, 0, sizeof *a);
    a->d = 1; a->repeats = 5; a->warmup = 1; a->seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--check")) { a->check = 1; continue; }
        if (i + 1 >= argc) usage("'%s' needs a value", k);
        const char *v = argv[++i];
        long x;
        if (!strcmp(k, "--n")) parse_ns(v, a);
        else if (!strcmp(k, "--out")) a->out = v;
        else if (!strcmp(k, "--d")) { if (parse_long(v, 1, &a->d)) usage("--d: '%s' is not a positive integer", v); }
        else if (!strcmp(k, "--threads")) { if (parse_long(v, 1, &x) || x > 4096) usage("--threads: '%s' is not a positive integer", v); a->threads = (int)x; }
        else if (!strcmp(k, "--repeats")) { if (parse_long(v, 1, &a->repeats)) usage("--repeats: '%s' is not a positive integer", v); }
        else if (!strcmp(k, "--warmup")) { if (parse_long(v, 0, &a->warmup)) usage("--warmup: '%s' is not a non-negative integer", v); }
        else if (!strcmp(k, "--figure")) { if (parse_long(v, 0, &x) || x > 1) usage("--figure: '%s' is not 0 or 1", v); a->figure = (int)x; }
        else if (!strcmp(k, "--seed")) { if (parse_long(v, 0, &x) || x > 4294967295L) usage("--seed: '%s' is not a 32-bit seed", v); a->seed = (unsigned)x; }
        else if (!strcmp(k, "--device")) { if (strcmp(v, "cpu")) usage("--device: '%s' is not supported (cpu only)", v); }
        else if (!strcmp(k, "--dtype")) { if (strcmp(v, "fp32")) usage("--dtype: '%s' is not supported (fp32 only)", v); }
        else if (!strcmp(k, "--variant")) {
            a->variant = -1;
            for (int j = 0; VARIANTS[j]; j++) if (!strcmp(v, VARIANTS[j])) a->variant = j;
            if (a->variant < 0) usage("--variant: unknown variant '%s'", v);
        }
        else usage("unknown argument '%s'", k);
    }
    if (!a->ns) usage("%s", "--n is required");
    if (!a->out) usage("%s", "--out is required");
}

/* Env values such as OMP_PLACES="{0,1},{2,3}" hold commas: quoted per RFC 4180, as kernels/c/harness.c does. */
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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The input of rank r at element i: small integers, so that a sum over ranks is exact in float. */
static float input_at(int r, long i, unsigned seed) { return (float)(r + 1) + (float)((i + seed) % 7); }

typedef struct {
    float *buf, *recv;
    long count;        /* elements this rank holds */
    long msg;          /* elements each rank sends per collective */
    long offset;       /* global index of this rank's first element (strong: its share's start) */
    double partial[PARTIALS], reduced[PARTIALS];
} state_t;

static void fill(state_t *s, int rank, unsigned seed)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < s->count; i++) {
        s->buf[i] = input_at(rank, s->offset + i, seed);
        if (s->recv) s->recv[i] = NAN;
    }
}

/* One element after d multiply-add passes (float, as the timed loop computes it). */
static inline float passes(float x, long d)
{
    for (long p = 0; p < d; p++) x = x * 0.999f + 0.001f;
    return x;
}

/* d multiply-add passes over this rank's elements, then 64 partial sums (in
   double, so that a check is not lost in float rounding of long sums); lane
   = global index mod 64, so the reduced lanes do not depend on the rank count. */
static void compute(state_t *s, long d)
{
    double acc[PARTIALS] = {0};
#pragma omp parallel
    {
        double mine[PARTIALS] = {0};
#pragma omp for schedule(static)
        for (long i = 0; i < s->count; i++) {
            float x = passes(s->buf[i], d);
            s->buf[i] = x;
            mine[(s->offset + i) % PARTIALS] += x;
        }
#pragma omp critical
        for (int j = 0; j < PARTIALS; j++) acc[j] += mine[j];
    }
    for (int j = 0; j < PARTIALS; j++) s->partial[j] = acc[j];
}

/* One call: returns compute and comm seconds of this rank. */
static void call(state_t *s, const args_t *a, int rank, int size, double *t_compute, double *t_comm)
{
    double t0 = now(), t1 = t0;
    if (a->variant == V_ALLREDUCE) {
        MPI_Allreduce(s->buf, s->recv, (int)s->msg, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (a->variant == V_RING) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        for (int step = 0; step < size - 1; step++) {
            MPI_Sendrecv(s->buf, (int)s->msg, MPI_FLOAT, right, 0, s->recv, (int)s->msg, MPI_FLOAT, left, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            float *swap = s->buf; s->buf = s->recv; s->recv = swap;
        }
    } else {
        compute(s, a->d);
        t1 = now();
        MPI_Allreduce(s->partial, s->reduced, PARTIALS, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    double t2 = now();
    *t_compute = t1 - t0;
    *t_comm = t2 - t1;
}

/* ||got - want|| / ||want|| of the collective's result on this rank.
   allreduce: the sum over ranks of every element; ring: after size-1 shifts
   this rank holds rank+1's input; strong/weak: the reduced lanes against the
   same passes summed in double from the inputs (a reduction of its own, in
   MPI_DOUBLE, of references that never went through the timed code). */
static double check(const state_t *s, const args_t *a, int rank, int size)
{
    double diff2 = 0.0, ref2 = 0.0;
    int nan = 0;
    if (a->variant >= V_STRONG) {
        double ref[PARTIALS] = {0}, all[PARTIALS];
        for (long i = 0; i < s->count; i++) {
            long g = s->offset + i;
            ref[g % PARTIALS] += (double)passes(input_at(a->variant == V_WEAK ? rank : 0, g, a->seed), a->d);
        }
        MPI_Allreduce(ref, all, PARTIALS, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int j = 0; j < PARTIALS; j++) {
            if (isnan(s->reduced[j])) nan = 1;
            diff2 += (s->reduced[j] - all[j]) * (s->reduced[j] - all[j]);
            ref2 += all[j] * all[j];
        }
        return nan ? NAN : sqrt(diff2 / (ref2 > 0 ? ref2 : 1.0));
    }
    for (long i = 0; i < s->msg; i++) {
        double want, got;
        if (a->variant == V_ALLREDUCE) {
            want = 0.0;
            for (int r = 0; r < size; r++) want += input_at(r, i, a->seed);
            got = s->recv[i];
        } else {
            want = input_at((rank + 1) % size, i, a->seed);
            got = s->buf[i];
        }
        if (isnan(got)) nan = 1;
        diff2 += (got - want) * (got - want);
        ref2 += want * want;
    }
    return nan ? NAN : sqrt(diff2 / (ref2 > 0 ? ref2 : 1.0));
}

/* Distinct hosts of the ranks: Slurm's node name where srun started the rank
   (several slurmd on one machine are several nodes), else the processor name. */
static int count_nodes(int size)
{
    char mine[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    const char *slurm = getenv("SLURMD_NODENAME");
    if (slurm && *slurm) {
        snprintf(mine, sizeof mine, "%s", slurm);
    } else {
        int len = 0;
        MPI_Get_processor_name(mine, &len);
    }
    char *all = calloc((size_t)size, sizeof mine);
    if (!all) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Allgather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, MPI_COMM_WORLD);
    int distinct = 0;
    for (int r = 0; r < size; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++) seen = !strcmp(all + (size_t)r * sizeof mine, all + (size_t)q * sizeof mine);
        distinct += !seen;
    }
    free(all);
    return distinct;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    args_t a;
    parse(argc, argv, &a);
    if (a.threads) omp_set_num_threads(a.threads);
    int threads = omp_get_max_threads();
    int nodes = count_nodes(size);
    const char *bind = getenv("OMP_PROC_BIND"), *places = getenv("OMP_PLACES");
    char tmp[4096];
    FILE *f = NULL;
    if (world_rank == 0) {
        if (snprintf(tmp, sizeof tmp, "%s.tmp", a.out) >= (int)sizeof tmp) usage("--out: '%s' is too long", a.out);
        f = fopen(tmp, "w");
        if (!f) { perror(tmp); MPI_Abort(MPI_COMM_WORLD, 1); }
        fprintf(f, "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err,gpu_model,"
                   "omp_proc_bind,omp_places,l2_flush,backend,ranks,nodes,compute_s,comm_s,msg_bytes%s\n",
                a.figure ? ",metric,value,unit,higher_is_better" : "");
        fflush(f);
    }
    for (int in = 0; in < a.nn; in++) {
        long n = a.ns[in];
        state_t s;
        memset(&s, 0, sizeof s);
        if (a.variant == V_STRONG) {  /* this rank's share of n: the first n % size ranks take one more */
            s.count = n / size + (world_rank < n % size);
            s.offset = (n / size) * world_rank + (world_rank < n % size ? world_rank : n % size);
        } else {
            s.count = n;
        }
        s.msg = (a.variant == V_ALLREDUCE || a.variant == V_RING) ? n : PARTIALS;
        size_t bytes = sizeof(float) * (size_t)(s.count > 0 ? s.count : 1);
        s.buf = malloc(bytes);
        s.recv = (a.variant == V_ALLREDUCE || a.variant == V_RING) ? malloc(bytes) : NULL;
        int ok = s.buf && (s.recv || a.variant >= V_STRONG), all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_ok) {
            if (world_rank == 0) fprintf(stderr, "mpi_allreduce: out of memory at n=%ld\n", n);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fill(&s, a.variant == V_STRONG ? 0 : world_rank, a.seed);
        double tc, tm, mine[3], worst[3];
        MPI_Barrier(MPI_COMM_WORLD);
        call(&s, &a, world_rank, size, &tc, &tm);
        mine[0] = tc + tm;
        MPI_Reduce(mine, worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        double first = worst[0];
        double rel = -1.0, rel_all = -1.0;
        if (a.check) {
            rel = check(&s, &a, world_rank, size);
            /* NaN must win the max: send it as +inf and restore it */
            double send = isnan(rel) ? INFINITY : rel;
            MPI_Reduce(&send, &rel_all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (isinf(rel_all)) rel_all = NAN;
        }
        for (long w = 0; w < a.warmup; w++) call(&s, &a, world_rank, size, &tc, &tm);
        for (long r = 0; r < a.repeats; r++) {
            if (a.variant >= V_STRONG) fill(&s, a.variant == V_STRONG ? 0 : world_rank, a.seed);  /* the same work every repeat */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            call(&s, &a, world_rank, size, &tc, &tm);
            MPI_Barrier(MPI_COMM_WORLD);  /* a repeat ends when the slowest rank is done */
            mine[0] = now() - t0; mine[1] = tc; mine[2] = tm;
            MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (world_rank == 0) {
                char rel_text[64] = "", comp_text[64] = "";
                if (a.check) snprintf(rel_text, sizeof rel_text, "%.6e", rel_all);
                if (a.variant >= V_STRONG) snprintf(comp_text, sizeof comp_text, "%.9e", worst[1]);
                fprintf(f, "mpi_allreduce,c,%s,cpu,fp32,%ld,%ld,%d,%ld,%.9e,%.9e,%s,,",
                        VARIANTS[a.variant], n, a.d, threads, r, worst[0], first, rel_text);
                csv_field(f, bind);
                fputc(',', f);
                csv_field(f, places);
                fprintf(f, ",0,,%d,%d,%s,%.9e,%ld", size, nodes, comp_text, worst[2],
                        (long)(sizeof(float) * (size_t)s.msg));
                if (a.figure && a.variant >= V_STRONG)  /* multiply-adds of all ranks per second: the whole problem */
                    fprintf(f, ",updates_per_s,%.9e,updates/s,1",
                            (double)n * (double)a.d * (a.variant == V_WEAK ? size : 1) / worst[0]);
                else if (a.figure)  /* bytes each rank's message carries per second of the collective */
                    fprintf(f, ",bytes_per_s,%.9e,B/s,1", (double)sizeof(float) * (double)s.msg / worst[0]);
                fputc('\n', f);
            }
        }
        if (world_rank == 0) fflush(f);
        free(s.buf);
        free(s.recv);
    }
    int rc = 0;
    if (world_rank == 0) {
        if (fclose(f) != 0 || rename(tmp, a.out) != 0) { perror(a.out); rc = 1; }
    }
    free(a.ns);
    MPI_Finalize();
    return rc;
}
