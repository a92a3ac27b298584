# campaign — the two commands that matter: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Compilers/flags for the C and Fortran kernels (no -march=native by default;
# clusters pass their own, e.g. make kernels CFLAGS="-O3 -fopenmp -march=znver3").
# (make predefines CC=cc and FC=f77: replace only those built-in defaults)
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin FC),default)
FC := gfortran
endif
CFLAGS ?= -O3 -fopenmp
FFLAGS ?= -O3 -fopenmp
DEMO   ?= demo
export CAMPAIGN_SLURM_LAB ?= /tmp/campaign-slurm

.PHONY: setup kernels demo test test-unit lint bench bench-scale slurm-up slurm-down clean browser

$(STAMP): pyproject.toml
	@command -v gfortran >/dev/null || { echo "installing gfortran (Debian)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gfortran >/dev/null) \
	  || { echo "error: gfortran not installed: the Fortran kernels and their tests need it"; exit 1; }; }
	@command -v likwid-bench >/dev/null && command -v mbw >/dev/null && command -v sysbench >/dev/null \
	  && command -v hpcc >/dev/null || { \
	  echo "installing likwid, mbw, sysbench and hpcc (Debian): the bring-your-own-benchmark examples of conf/kernel"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    likwid mbw sysbench hpcc >/dev/null) || { echo "error: likwid, mbw, sysbench or hpcc not installed: their tests need them"; exit 1; }; }
	@command -v ch-run >/dev/null || { \
	  echo "installing charliecloud-runtime (Debian): ch-run, the container runtime of the container tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    charliecloud-runtime >/dev/null) || { echo "error: charliecloud not installed: the container tests need it"; exit 1; }; }
	@command -v podman >/dev/null && command -v runc >/dev/null || { \
	  echo "installing podman and runc (Debian): the podman container tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    podman runc >/dev/null) || { echo "error: podman not installed: the podman container tests need it"; exit 1; }; }
	@command -v mpirun >/dev/null && printf '#include <mpi.h>\n' | mpicc -E -x c - >/dev/null 2>&1 \
	  && pkg-config --exists pmix 2>/dev/null || { \
	  echo "installing Open MPI and PMIx (Debian): the MPI kernel and the multi-node tests (srun --mpi=pmix)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    openmpi-bin libopenmpi-dev libpmix-dev >/dev/null) || { echo "error: Open MPI not installed: the MPI kernel and its tests need it"; exit 1; }; }
	@command -v perf >/dev/null || { echo "installing linux-perf (Debian): experiment.profile=perf and its test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    linux-perf >/dev/null) || { echo "error: linux-perf not installed: the perf profiling test needs it"; exit 1; }; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP) kernels

kernels:
	$(MAKE) -C kernels CC="$(CC)" FC="$(FC)" CFLAGS="$(CFLAGS)" FFLAGS="$(FFLAGS)" \
	  $(if $(shell command -v $(FC)),all,c mpi)

# A real small campaign on this machine (cluster=local, no Slurm), ending in a report.
demo: setup
	rm -rf $(DEMO)
	$(BIN)/campaign --ledger $(DEMO)/ledger.sqlite submit experiment=smoke
	$(BIN)/campaign --ledger $(DEMO)/ledger.sqlite status
	$(BIN)/campaign --ledger $(DEMO)/ledger.sqlite report --out $(DEMO)/report
	@echo "demo done: report in $(DEMO)/report/ ; ledger $(DEMO)/ledger.sqlite"
	@echo "try: $(BIN)/campaign --ledger $(DEMO)/ledger.sqlite jobs"

slurm-up:
	bash .ci/slurm-up.sh

slurm-down:
	bash .ci/slurm-down.sh

# Headless Chromium (and a font) for the report's browser test, and zsh for the completion test, from Debian; once.
browser:
	@command -v chromium >/dev/null && command -v zsh >/dev/null && dpkg -s fonts-dejavu-core >/dev/null 2>&1 || { \
	  echo "installing chromium, fonts-dejavu-core and zsh (Debian; zsh: the completion test)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends chromium fonts-dejavu-core zsh >/dev/null; }

# Everything: install, start the real single-node Slurm, run the whole suite: first
# in TEST_WORKERS pytest-xdist workers (most Slurm tests wait on the scheduler, so more
# workers than cores overlap those waits; tests/parallel.py says which tests share a
# worker), then the `serial` tests alone (they stop Slurm daemons or time wall clocks).
# Both parts always run and list their slowest tests (what to look at when the suite grows); the exit
# status is the first failure's. CAMPAIGN_REQUIRE_ALL=1: a skipped test
# fails the run, but for the `cuda` ones on a machine without a GPU (tests/skips.py): green means it all ran.
TEST_WORKERS ?= 4
# The serial part collects only the modules that can hold a `serial` test (each marks its tests in its own
# module, tests/parallel.py): collecting the whole suite again costs it about 10 CPU s.
SERIAL_MODULES = $(shell grep -rlw --include='test_*.py' serial tests | sort)
TEST_ENV := CAMPAIGN_REQUIRE_SLURM=1 CAMPAIGN_REQUIRE_POSTGRES=1 CAMPAIGN_REQUIRE_CHROMIUM=1 \
            CAMPAIGN_REQUIRE_CHARLIECLOUD=1 CAMPAIGN_REQUIRE_ALL=1
test: setup slurm-up browser
	@rc=0; alone=0; \
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder \
	  --durations=25 -m "not serial" tests || rc=$$?; \
	$(TEST_ENV) $(BIN)/python -m pytest -q --durations=13 -m serial $(SERIAL_MODULES) || alone=$$?; \
	[ $$rc != 0 ] || rc=$$alone; exit $$rc

test-unit: setup
	$(BIN)/python -m pytest -q tests -m "not slurm"

lint: $(STAMP)
	$(BIN)/ruff check campaign analysis resultschema kernels tests bench
	$(BIN)/mypy campaign analysis resultschema
	$(BIN)/vulture

bench: setup slurm-up
	$(BIN)/python bench/bench_cli_startup.py
	$(BIN)/python bench/bench_metrics.py
	$(BIN)/python bench/bench_slurm.py
	$(BIN)/python bench/bench_compare_reruns.py
	$(MAKE) bench-scale SCALE_RUNS=10000 SCALE_ROWS=1000000 SCALE_ATTEMPTS=20000 SCALE_INGEST=100000

# Scale: 100k held runs on the test Slurm (its MaxJobCount must exceed
# SCALE_RUNS), ingest, metrics/HTML over a synthetic ledger, jobs/show/status reads; the read of
# every row, metrics and HTML (READ_BASELINE=REV runs that revision beside this tree).
SCALE_RUNS     ?= 100000
SCALE_ROWS     ?= 10000000
SCALE_ATTEMPTS ?= 200000
SCALE_INGEST   ?= 1000000
bench-scale: setup slurm-up
	$(BIN)/python bench/bench_scale.py --runs $(SCALE_RUNS)
	$(BIN)/python bench/bench_scale_ledger.py --rows $(SCALE_ROWS) --attempts $(SCALE_ATTEMPTS) \
	  --ingest-rows $(SCALE_INGEST)
	$(BIN)/python bench/bench_read_all.py --rows $(SCALE_ROWS) --attempts $(SCALE_ATTEMPTS) --repeats 1 --html \
	  $(if $(READ_BASELINE),--baseline-rev $(READ_BASELINE))

clean:
	$(MAKE) -C kernels clean
	rm -rf $(DEMO) report
