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
# `make run`'s input: the sample plus real pages and designed cases, so that every stage acts (tests/data/README.md);
# near-duplicate removal is off by default and switched on here to show it.
STAGES := tests/data/stages.warc.gz
OUT    ?= out

.PHONY: setup setup-browser run test test-fast models lm-tools dist clean bench bench-scale bench-nights bench-quality blocks-model calibrate

setup: $(STAMP)
	@$(PY) -m pipeline.spark.cds $(SAMPLE)  # the driver JVM's class-data archive (pipeline/spark/cds.py), made once

$(STAMP): pyproject.toml setup.py $(wildcard pipeline/_native/*.pyx pipeline/_native/*.pxd pipeline/_native/*.pxi) pipeline/_native/__init__.py
	@command -v java >/dev/null 2>&1 || [ -n "$$JAVA_HOME" ] || { echo "error: Java 17 is required (install openjdk-17-jre-headless or set JAVA_HOME)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: setup
	$(VENV)/bin/warcplex run --input $(STAGES) --output $(OUT) --config conf/local.yaml --dropped $(OUT)/dropped \
		--sentences $(OUT)/sentences --set corpus.dedup.near=true --overwrite

test: setup setup-browser lm-tools
	$(PY) -m pytest

# No Spark, cluster, S3, browser or long runs (pytest markers, see pyproject.toml).
# One pytest worker per core (pytest-xdist); a test file's tests stay in one worker, with their module fixtures.
test-fast: setup
	$(PY) -m pytest -q -n auto --dist loadfile -m "not (spark or cluster or s3 or browser or slow)"

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

# The cost curve (scripts/bench_scale.py, a script, not a test): whole-tree CPU and peak RSS per role at 1x, 5x
# and 15x bench dev (15x: one ~1 GB WARC, and cut into 40 shards), and 2,000 small shards with a rerun that skips
# them; SCALE_ARGS e.g. "--points 1x,shards-2000". Draws docs/bench-scale.png.
bench-scale: setup
	$(PY) scripts/bench_scale.py --plot docs/bench-scale.png $(SCALE_ARGS)

# Ten nights of equal size (scripts/bench_nights.py, a script, not a test): the corpus stages' CPU of each night of
# `warcplex nightly`, adding to the corpus and rebuilding it, and the rows against one build over all the nights.
bench-nights: setup
	$(PY) scripts/bench_nights.py $(NIGHTS_ARGS)

# Extraction quality of warcplex (real Spark runs) vs trafilatura, resiliparse, readability on ../shared/bench,
# then what the corpus stage's repeated-line removal does to ROUGE-5 and to boilerplate (bench dev, wcxb, sites).
bench-quality: setup
	$(PY) scripts/bench_quality.py
	$(PY) scripts/bench_corpus.py

# Builders of shipped files (maintainer tools; they read the bench pages in ../shared/bench, BENCH=... elsewhere,
# and train on their dev side only: scripts/benchpages.py holds the split). Review `git diff` before committing.
BENCH ?= ../shared/bench

# pipeline/steps/blocks/blocks_model.json and blocks_heldout_ids.txt: the block classifier refitted, then its page
# types fitted on it (scripts/train_blocks.py; deterministic; the parsed pages are cached in build/blocks_raw.pkl).
blocks-model: setup
	$(PY) scripts/train_blocks.py --bench $(BENCH) --cache build/blocks_raw.pkl
	$(PY) scripts/train_blocks.py --bench $(BENCH) --cache build/blocks_raw.pkl --rules-only --tune-folds 5 --page-types
	$(PY) scripts/train_blocks.py --bench $(BENCH) --cache build/blocks_raw.pkl --rules-only --tune-folds 5 --comments

# The perplexity thresholds of conf/models.yaml: English from `warcplex calibrate --objective corpus` on the dev
# pages of data-wcxb, the other languages from scripts/calibrate_languages.py on the dev pages of data-ml. Writes
# the distributions, curves and plots to build/calibration/ (en/calibration.{json,png}, languages.json) and, with
# CALIBRATE_WRITE=--write, the thresholds into conf/models.yaml.
calibrate: setup
	mkdir -p build/calibration
	$(PY) scripts/benchpages.py ids data-wcxb --bench $(BENCH) > build/calibration/wcxb-dev.ids
	$(VENV)/bin/warcplex calibrate --data $(BENCH)/data-wcxb --ids build/calibration/wcxb-dev.ids --objective corpus \
		--out build/calibration/en $(CALIBRATE_WRITE)
	$(PY) scripts/calibrate_languages.py --data $(BENCH)/data-ml --out build/calibration/languages.json $(CALIBRATE_WRITE)

# Headless Chromium renders report.html in tests/test_report.py (Debian package). Nothing to do when chromium or
# chromium-browser is on PATH; else installed when running as root, and otherwise one line says how (the browser
# test then skips, naming the reason).
setup-browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y --no-install-recommends chromium; \
	  else echo "setup-browser: chromium is not installed (as root: apt-get install chromium); the report's browser test will skip"; fi

# Rebuild every KenLM model from registry corpora (needs apt build deps; see lm_models/README.md).
models: setup
	$(MAKE) -C lm_models all PYTHON=$(abspath $(PY))

# KenLM's lmplz and build_binary (for `warcplex train-lm` and its tests; skipped when built).
lm-tools: setup
	$(MAKE) -C lm_models tools PYTHON=$(abspath $(PY))

# dist/warcplex.zip for --py-files, dist/files/ + dist/files.txt (the model files) for --files.
dist: setup
	$(PY) scripts/make_dist.py $(if $(CONFIG),--config $(CONFIG))

# docs/configuration.md from the settings models; the model cards and lm_models/README.md's tables from
# conf/models.yaml (tests/test_docs.py fails when either is stale).
.PHONY: docs
docs: setup
	$(PY) scripts/config_reference.py
	$(PY) lm_models/train.py card $(patsubst lm_models/%/card.json,%,$(wildcard lm_models/*/card.json))

clean:
	rm -rf $(OUT) build dist .pytest_cache
