# The README's two commands: `make lab` and `make test`. Everything else is a building block.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
JOBS   ?= 2
LAB_PORT ?= 8888
# Jupyter refuses to run as root (containers, CI machines) unless told to.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test install bench cluster clean labs-release

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Reinstall when the dependency list changes.
# The bytecode is compiled here, as pip does for a regular install: an editable install leaves it to the
# first import, which never caches it where PYTHONDONTWRITEBYTECODE is set (and then every start pays).
$(STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e '.[course,test]'
	$(PY) -m compileall -q gpulab
	touch $(STAMP)

install: $(STAMP)

cluster: install
	$(VENV)/bin/gpulab cluster up

## make lab: set up, start the embedded cluster and JupyterLab on the course, course/ and labs/ (prints the URL)
lab: cluster
	@echo "Starting JupyterLab: course/ holds the modules, labs/ the graded labs ..."
	KUBECONFIG=$$($(VENV)/bin/gpulab cluster kubeconfig) PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
	  $(VENV)/bin/jupyter lab --no-browser --port=$(LAB_PORT) --ServerApp.root_dir=$(CURDIR) \
	  --LabApp.default_url=/lab/tree/course/00-setup.ipynb $(ALLOW_ROOT)

## make test: set up and run the whole suite
test: install
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -n $(JOBS) --dist loadfile -q

## make bench: the benchmarks (figures go to bench/results/ and docs/benchmarks.md)
bench: install
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m bench

## make labs-release: regenerate labs/ from solutions/ with nbgrader generate_assignment
labs-release: install
	$(PY) tools/labs_release.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache bench/results
