# The README's two commands: `make lab` and `make test`. Everything else is a building block.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
JOBS   ?= 2
LAB_PORT ?= 8888

.PHONY: lab instructor test install upstream bench cluster clean labs-release learner-release course-outputs

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

## make lab: set up, start the embedded cluster and the learner's JupyterLab (course/ and labs/ only; prints the URL)
lab: cluster
	@echo "Starting JupyterLab: course/ holds the modules, labs/ the graded labs ..."
	KUBECONFIG=$$($(VENV)/bin/gpulab cluster kubeconfig) PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
	  $(PY) -m gpulab.learner.jupyterlab learner --port=$(LAB_PORT)

## make instructor: the same cluster, JupyterLab on the whole repository with nbgrader's instructor tools
instructor: cluster
	@echo "Starting JupyterLab for instructors: nbgrader's course directory is grader/ ..."
	KUBECONFIG=$$($(VENV)/bin/gpulab cluster kubeconfig) PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
	  $(PY) -m gpulab.learner.jupyterlab instructor --port=$(LAB_PORT)

## make upstream: build the upstream engine (kube-apiserver, controller manager, scheduler, etcd, KWOK and the
## scheduler-plugins scheduler) from the Go modules pinned in cluster-setup/upstream/; seconds once built
upstream: install
	$(PY) -m gpulab.upstream.build

## make test: set up and run the whole suite (on a machine without Go, everything but the upstream engine's runs)
test: install
	$(PY) -m gpulab.upstream.build --if-go
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -n $(JOBS) --dist loadfile -q

## make bench: the benchmarks (figures go to bench/results/ and docs/benchmarks.md)
bench: install
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m bench

## make course-outputs: rerun course notebooks (all, or NOTEBOOKS="course/03-h100-pod.ipynb") and keep the outputs
## the narrative quotes (cells marked # NBVAL_CHECK_OUTPUT), which make test then holds every run to
course-outputs: install
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) tests/test_notebooks.py $(NOTEBOOKS)

## make labs-release: regenerate labs/ from solutions/ with nbgrader generate_assignment
labs-release: install
	$(PY) tools/labs_release.py

## make learner-release: what learners get (README, "Learners work in the learner release"): this repository without
## solutions, answer keys or tests, in dist/gpulab-learner/
learner-release:
	$(PYTHON) tools/learner_release.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache bench/results
