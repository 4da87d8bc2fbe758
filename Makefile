# dockyard-k8s — run `make help` for the targets.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help venv tools schema test unit validate demo playground playground-down bench lint package clean record

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

$(STAMP): pyproject.toml charts/dockyard/Chart.yaml  # the package's version is the chart's
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# hatchling's editable install is a plain .pth naming the clone (no import hook: nothing at every start), and
	# it reads the clone's chart and schemas in place (hack/hatch_build.py copies them into wheels only)
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(STAMP) ## create the virtualenv and install the package

# The real node's tests (tests/live/test_real_*.py; pytest marker real_node) need root,
# cgroup v1, overlayfs and network namespaces. auto: run them where the machine can host the real node, skip them
# loudly where it cannot (under $$CI: count them as failed); 1: require them; 0: skip them and the tools only
# they need. `make test` says which in its first line.
REAL_NODE ?= auto

# The tools, their pins and their two build streams: the table generator/tool_table.toml (hack/suite.py builds the
# streams side by side: a cold build overlaps one stream's downloads and links with the other's compiles).
tools: ## build every pinned tool of the table generator/tool_table.toml (cached by version; two streams; REAL_NODE=0: not the real node's)
	python3 hack/suite.py tools --real-node=$(REAL_NODE)

schema: venv ## regenerate values.schema.json, values.yaml, schema/*.json, the chart README's values table, README's versions table and docs/versions.md's tools table
	$(PY) -m generator.maint.schema_export
	$(PY) generator/tool_table.py docs

# hack/suite.py: the tool builds beside the venv, the lint gate (ruff, mypy, helm lint), and each part of the suite
# (the real node's tests, then real Ray's; the session playground's live tests; the offline tests) started as
# soon as its tools are built; a timeline at the end (docs/playground.md says how to read it).
test: ## the lint gate, then every test: unit, chart, validation and live (on the playground); a timeline at the end; REAL_NODE=0: all but the real node's
	python3 hack/suite.py test --real-node=$(REAL_NODE)

unit: venv ## the fast tests only (no playground)
	$(PY) -m pytest -q -m 'not live'

# The version matrix: a session playground per older KubeRay minor (its operator and
# CRDs, $$DOCKYARD_PLAYGROUND_KUBERAY), then per older Kubernetes minor (its control plane,
# $$DOCKYARD_PLAYGROUND_KUBERNETES; the pinned KubeRay), each running the live subset: install, `run --wait`, a
# failed upgrade and rollback, uninstall, doctor's version rows. The pinned KubeRay on the pinned Kubernetes is
# `make test`'s. The minors are the table's rows needed by "matrix" (generator/tool_table.toml: kuberay-<minor> with
# kuberay-crds-<minor>, kubernetes-<minor>). Not in `make test`: docs/versions.md.
MATRIX_KUBERAY ?= $(shell python3 generator/tool_table.py matrix kuberay)
MATRIX_KUBE ?= $(shell python3 generator/tool_table.py matrix kubernetes)
MATRIX_TESTS := tests/live/test_live_versions.py \
  'tests/live/test_live_run.py::test_run_wait_status_logs_history_uninstall[helm3]' \
  'tests/live/test_live_run.py::test_failed_upgrade_keeps_previous_revision_and_rollback_restores_spec[helm3]'
.PHONY: test-matrix
test-matrix: venv ## the live subset under each older KubeRay operator and Kubernetes control plane the table of tools pins, a playground each (not in make test)
	@set -e; for v in $(MATRIX_KUBERAY); do \
	  bash hack/tools.sh helm kubernetes etcd kwok kuberay-crds-$$v kuberay-$$v; \
	  t0=$$(date +%s); echo "== KubeRay $$v: the live subset"; \
	  DOCKYARD_PLAYGROUND_KUBERAY=$$v $(PY) -m pytest -q -p no:cacheprovider $(MATRIX_TESTS); \
	  echo "== KubeRay $$v: passed in $$(( $$(date +%s) - t0 )) s"; \
	done; \
	for k in $(MATRIX_KUBE); do \
	  bash hack/tools.sh helm kubernetes-$$k etcd kwok kuberay-crds kuberay; \
	  t0=$$(date +%s); echo "== Kubernetes $$k: the live subset"; \
	  DOCKYARD_PLAYGROUND_KUBERNETES=$$k $(PY) -m pytest -q -p no:cacheprovider $(MATRIX_TESTS); \
	  echo "== Kubernetes $$k: passed in $$(( $$(date +%s) - t0 )) s"; \
	done

.PHONY: test-random
test-random: venv ## the property tests on a fresh random seed, printed (make test's are derandomized); replay: make test-random SEED=N
	bash hack/tools.sh helm kubeconform kuberay-crds
	@seed=$${SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; echo "hypothesis seed $$seed"; \
	$(PY) -m pytest -q --hypothesis-profile=random --hypothesis-seed=$$seed \
	  $$(grep -rl --include='test_*.py' '^from hypothesis import.*given' tests) \
	  || { echo "failed with hypothesis seed $$seed: replay with make test-random SEED=$$seed"; exit 1; }

validate: venv ## kubeconform over every example's rendered output
	$(PY) -m generator.maint.validate_examples

lint: venv ## ruff (generator, tests, bench, hack), mypy and the import contracts (.importlinter) on the package, helm lint --strict on the chart
	$(PY) -m ruff check --no-fix generator tests bench hack
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache
	bash hack/tools.sh helm
	$$($(PY) -c 'from generator.pinned_tools import binary; print(binary("helm"))') lint --strict charts/dockyard

package: venv ## the chart archive dist/dockyard-<version>.tgz, and the CLI's sdist and wheel (version: charts/dockyard/Chart.yaml; docs/chart-release.md, docs/install.md)
	$(PY) -m build --no-isolation --outdir dist .
	bash hack/package.sh  # last: its last line is the chart archive's path

playground: venv ## bring up the local playground cluster
	$(PY) -m generator playground up

playground-down: venv ## stop the local playground cluster
	$(PY) -m generator playground down

demo: venv ## build only what the demo runs (helm, the control plane), playground, run the example job, status
	bash hack/tools.sh helm kubernetes etcd kwok kuberay
	$(PY) -m generator playground up --gpu-nodes 3
	$(PY) -m generator run values-examples/grpo_swe.yaml values-examples/grpo_swe.infra.yaml --wait --create-namespace
	$(PY) -m generator status grpo-swe

record: venv ## re-record tests/unit/recorded/*.json (the offline live tests' cluster answers) on a playground of its own
	bash hack/tools.sh helm kuberay-crds kubernetes etcd kwok kuberay
	$(PY) -m generator.maint.record_cluster

bench: venv ## benchmarks (not part of make test) -> docs/benchmarks.md
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache
