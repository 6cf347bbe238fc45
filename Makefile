# Berth's build. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
K8S_BIN := $(BIN)/k8s
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
# -trimpath keys the build cache on module versions rather than on where
# the module cache is, so that a run with a module cache of its own (as
# .ci/run's) reuses what earlier runs compiled.
export GOFLAGS ?= -buildvcs=false -trimpath
# Static binaries, as the release's images ship them: the local cluster, the
# tests and the release then share one compilation (the race detector alone
# needs cgo, and compiles on its own anyway).
export CGO_ENABLED ?= 0
# envtest finds etcd, kube-apiserver and kubectl here; nothing is downloaded.
export KUBEBUILDER_ASSETS := $(K8S_BIN)

GO_TEST_FLAGS ?=

##@ General

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## Start the local cluster, install Berth, apply the samples and show them.
	hack/demo.sh

# WORKERS is the number of worker clusters make local-up starts beside the
# local cluster (hack/local-worker.sh).
WORKERS ?= 0

.PHONY: local-up
local-up: ## Start the local cluster (idempotent), with WORKERS=N worker clusters beside it; prints the KUBECONFIG to use.
	WORKERS=$(WORKERS) hack/local-up.sh

.PHONY: local-down
local-down: ## Stop the local cluster and every process of it.
	hack/local-down.sh

##@ Development

.PHONY: toolchain
toolchain: ## Build the pinned Kubernetes binaries and tools into bin/ (reused while the pins hold).
	hack/toolchain.sh all

.PHONY: generate
generate: ## Generate deepcopy code.
	@hack/toolchain.sh controller-gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: ## Generate CRDs and RBAC from the markers.
	@hack/toolchain.sh controller-gen
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./apis/berth/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./apis/autoscaling/... output:crd:artifacts:config=config/components/provisioningrequest
	$(CONTROLLER_GEN) rbac:roleName=berth-controller paths="{./pkg/controller/...,./pkg/certs/...,./pkg/provisioning/...,./pkg/multicluster/...,./pkg/controllermanager/...}" output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./pkg/jobs/... output:webhook:artifacts:config=config/webhook

.PHONY: apiref
apiref: ## Generate the site's reference pages from the code: the API, the configuration, keys, metrics, events and conditions, kubectl berth.
	go run ./hack/apiref -pkg apis/berth/v1alpha1 -title "API reference" -weight 95 \
		-intro "Every kind of the berth.dev/v1alpha1 API and every field, from the types' own documentation. The contract they keep is in [concepts](concepts.md)." \
		-out site/content/reference-api.md
	go run ./hack/apiref -pkg apis/config/v1alpha1 -title "Configuration reference" -weight 96 \
		-intro "The controller's configuration file (config.berth.dev/v1alpha1 Configuration), passed with --config: every field, from the types' own documentation. [Operating Berth](operations.md) shows the file with its defaults." \
		-out site/content/reference-config.md
	go run ./hack/refdocs -out site/content

.PHONY: fmt
fmt: ## Format the code.
	@hack/toolchain.sh golangci-lint
	$(GOLANGCI_LINT) fmt ./...

.PHONY: verify
verify: ## Regenerate everything and fail on any difference.
	hack/verify.sh

# The linters that type-check every package a module imports. berth-scheduler
# imports kube-scheduler, about 1,500 packages: type-checking them from source
# took golangci-lint 9 minutes on 2 cores, cold. That module is linted for
# style and checked by go vet instead, which reads the packages compiled for
# its build.
TYPED_LINTERS := govet,staticcheck,errcheck,unused,unconvert

.PHONY: lint
lint: ## Run golangci-lint on every module (berth-scheduler: its style linters and go vet).
	@hack/toolchain.sh golangci-lint
	$(GOLANGCI_LINT) run ./...
	cd cmd/berth-scheduler && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yaml --disable $(TYPED_LINTERS) ./... && go vet ./...

.PHONY: build
build: ## Build Berth's binaries into bin/.
	go build -o $(BIN)/ ./cmd/...

##@ Release

.PHONY: images
images: ## Build the OCI image layouts of berth and berth-scheduler (linux/amd64 and linux/arm64) into _output/release/images.
	IMAGES_ONLY=1 hack/release.sh

.PHONY: release
release: ## Build a release into _output/release: images, berth.yaml, berth-scheduler.yaml, kubectl-berth archives, krew manifest, checksums. VERSION=vX.Y.Z
	hack/release.sh

.PHONY: push
push: ## Push the images built by make release or make images to REGISTRY, tagged VERSION.
	PUSH=1 hack/release.sh

##@ Testing

.PHONY: test
test: verify lint test-unit test-release test-integration test-e2e ## Run every check and test.

.PHONY: test-unit
# berth-scheduler's tests call its plugins from one goroutine; with the race
# detector, the 1,500 kube-scheduler packages they import would be compiled a
# second time (5 minutes cold), without sharing the build of bin/berth-scheduler.
test-unit: ## Run the unit tests of every module (Berth's with the race detector), then every fuzz target for FUZZ_TIME (20s) each.
	CGO_ENABLED=1 go test -race $(GO_TEST_FLAGS) ./apis/... ./pkg/... ./cmd/berth/... ./hack/... ./test/performance/...
	cd cmd/berth-scheduler && go test $(GO_TEST_FLAGS) ./...
	hack/fuzz.sh

.PHONY: test-release
test-release: ## Build the release for this machine twice and compare the bytes; lint the chart and check it against berth.yaml.
	hack/test-release.sh

.PHONY: test-integration
test-integration: ## Run the integration tests against a real kube-apiserver.
	@hack/toolchain.sh etcd kube
	go test $(GO_TEST_FLAGS) -count=1 -v ./test/integration/...

.PHONY: test-e2e
test-e2e: ## Run the end-to-end tests with kubectl against the local cluster (started and stopped if not up).
	hack/e2e.sh

##@ Performance

.PHONY: perf
perf: ## Run the scheduler benchmark's baseline (15,000 workloads); summary in _output/perf/baseline. PERF_FLAGS=--profile adds CPU and heap profiles.
	hack/perf.sh baseline $(PERF_FLAGS)

.PHONY: perf-large
perf-large: ## Run the scheduler benchmark's large scenario (50,000 workloads); summary in _output/perf/large.
	hack/perf.sh large $(PERF_FLAGS)

.PHONY: perf-pods
perf-pods: ## On the local cluster (started if need be): admit 1,000 single pods, pods in groups of four, one-pod Jobs, then RayJobs and TrainJobs; then 500 Jobs against 500 elastic ones, and an elastic Job grown by 50 slices; admissions per second and controller CPU per admission.
	hack/local-up.sh
	go test -count=1 -run '^$$' -bench 'AdmitPodsBesideJobs|ElasticJobs' -benchtime 1x -timeout 45m ./test/e2e/

.PHONY: perf-dispatch
perf-dispatch: ## Against real API servers: admit 200 one-pod Jobs in the manager's own ClusterQueue, then dispatch 200 to two worker clusters, each with its own Berth; admissions per second each way (BERTH_DISPATCH_JOBS=N for another count).
	@hack/toolchain.sh etcd kube
	go test -count=1 -run '^$$' -bench Dispatch -benchtime 1x ./test/integration/controller/

.PHONY: perf-check
perf-check: ## Fail when the last baseline summary misses the benchmark's targets.
	go run ./test/performance/scheduler/cmd/perf check

##@ Documentation

.PHONY: site
site: ## Render the documentation site (site/content) into _output/site; fails on a broken link or include.
	go run ./hack/site -out _output/site
