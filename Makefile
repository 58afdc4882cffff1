# warcplex: `make run` (set up + run the main job on the bundled sample), `make test` (set up + the full
# suite CI runs), `make test-fast` (pure Python tiers only, for daily work).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

SAMPLE := tests/data/sample.warc.gz
OUT    ?= out

.PHONY: setup setup-browser run test test-fast models lm-tools dist clean bench bench-quality

setup: $(STAMP)
	@$(PY) -m pipeline.spark.cds $(SAMPLE)  # the driver JVM's class-data archive (pipeline/spark/cds.py), made once

$(STAMP): pyproject.toml setup.py $(wildcard pipeline/_native/*.pyx pipeline/_native/*.pxd) pipeline/_native/__init__.py
	@command -v java >/dev/null 2>&1 || [ -n "$$JAVA_HOME" ] || { echo "error: Java 17 is required (install openjdk-17-jre-headless or set JAVA_HOME)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: setup
	$(VENV)/bin/warcplex run --input $(SAMPLE) --output $(OUT) --config conf/local.yaml --dropped $(OUT)/dropped \
		--sentences $(OUT)/sentences
	@echo "Parquet: $(OUT)/data/language=*/  stats: $(OUT)/stats.json  summary: $(OUT)/summary.txt"

test: setup setup-browser lm-tools
	$(PY) -m pytest

# No Spark, cluster, S3, browser or long runs (pytest markers, see pyproject.toml).
test-fast: setup
	$(PY) -m pytest -q -m "not (spark or cluster or s3 or browser or slow)"

# Whole-process-tree CPU of the floor, warcplex and the datatrove peer on ../shared/bench
# (a script, not a test; BENCH_ARGS e.g. "--repeats 5" or "--fixed-cost").
DT_VENV  := build/datatrove-venv
DT_STAMP := $(DT_VENV)/.installed-stamp

$(DT_STAMP): scripts/bench-datatrove-requirements.txt
	test -x $(DT_VENV)/bin/python || $(PYTHON) -m venv $(DT_VENV)
	$(DT_VENV)/bin/python -m pip install --quiet -r scripts/bench-datatrove-requirements.txt
	touch $(DT_STAMP)

bench: setup $(DT_STAMP)
	$(PY) scripts/bench.py $(BENCH_ARGS)

# Extraction quality of warcplex (real Spark runs) vs trafilatura, resiliparse, readability on ../shared/bench,
# then what the corpus stage's repeated-line removal does to ROUGE-5 and to boilerplate (bench dev, wcxb, sites).
bench-quality: setup
	$(PY) scripts/bench_quality.py
	$(PY) scripts/bench_corpus.py

# Headless Chromium renders report.html in tests/test_report.py (Debian package; skipped when present).
setup-browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update && apt-get install -y --no-install-recommends chromium)

# Rebuild every KenLM model from registry corpora (needs apt build deps; see lm_models/README.md).
models: setup
	$(MAKE) -C lm_models all PYTHON=$(abspath $(PY))

# KenLM's lmplz and build_binary (for `warcplex train-lm` and its tests; skipped when built).
lm-tools: setup
	$(MAKE) -C lm_models tools PYTHON=$(abspath $(PY))

# dist/warcplex.zip for --py-files, dist/files/ + dist/files.txt (the model files) for --files.
dist: setup
	$(PY) scripts/make_dist.py $(if $(CONFIG),--config $(CONFIG))

clean:
	rm -rf $(OUT) build dist .pytest_cache
