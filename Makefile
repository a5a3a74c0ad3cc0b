# shardlease — the two commands a new user needs are in README.md:
#   go run ./cmd/shardd demo      the main job
#   make test                     everything below, against real servers
GO ?= go

.PHONY: test vet consul nats etcd postgres chromium systemd demo dashboard-screenshot bench shardbench sim chaos fuzz flakecheck stepdowns zoneprop

# test builds the real Consul, nats-server and etcd the integration tests start
# (seconds when bin/ has them already), installs Debian's PostgreSQL and Chromium when
# missing (the tests start their own throwaway servers and browser) and
# systemd-analyze (deploy's units are verified with it), vets, and runs every
# test with the race detector; then the tests of the Kubernetes manifests and
# the Prometheus alerting rules, each a module of its own (deploy/kubernetes,
# deploy/prometheus) so that the library never requires their APIs.
test: consul nats etcd postgres chromium systemd vet
	$(GO) test -race -count=1 -timeout 25m ./...
	cd deploy/kubernetes && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd deploy/prometheus && $(GO) vet ./... && $(GO) test -count=1 ./...

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

consul:
	bash scripts/consul.sh

nats:
	bash scripts/nats-server.sh

etcd:
	bash scripts/etcd.sh

postgres:
	bash scripts/postgres.sh

chromium:
	bash scripts/chromium.sh

systemd:
	bash scripts/systemd.sh

# What the fence costs each offsets backend, against the same write unchecked
# (docs/benchmarks.md, "Fenced offsets").
bench: consul postgres
	$(GO) test -run '^$$' -bench FenceCost -benchtime 1s -count 8 ./offsets/postgres ./offsets/consul ./offsets/offsetstest/fencecost

# Every shardbench scenario, shardlease against the api.Lock baselines on one
# Consul agent it starts itself, about an hour. It writes the run's JSON
# (docs/bench/run.json), its plot (docs/img/ownership.svg) and the generated
# section of docs/benchmarks.md, and fails when a row misses its goal.
shardbench: consul nats postgres
	$(GO) run ./cmd/shardbench --scenario all --check --docs docs/benchmarks.md

# Refresh the README's screenshot from the browser test.
dashboard-screenshot: chromium
	SHARDLEASE_SCREENSHOT=$(CURDIR)/docs/img/dashboard.png $(GO) test -count=1 -run TestDashboardInChromium ./internal/dashboard

demo:
	$(GO) run ./cmd/shardd demo

# make sim [SEEDS=5000] [FIRST=1]: more seeds of the fault simulation, with its
# figures; make sim SEED=n [RUNS=20] replays one seed RUNS times and says how
# many runs failed (the goroutine order is not fixed by the seed), with the
# trace of the first that did (make test runs seeds 1-500).
sim:
	cd internal/harness/sim && $(GO) test -count=1 -timeout 0 -run 'TestSim$$' $(if $(SEED),-seed=$(SEED) -runs=$(or $(RUNS),20) -v,-seeds=$(or $(SEEDS),5000) -seed.first=$(or $(FIRST),1))

# make zoneprop [STEPS=1000000]: the zone and placement-rule property tests,
# each over that many rebalance.Step calls (generated fleets in zones, with
# labels and rules, joins, crashes, drains, cordons, rules changed;
# docs/reliability.md, "Zones"); make test runs 20,000 of each.
zoneprop:
	$(GO) test ./rebalance -run 'TestZoneProperty$$|TestRuleProperty$$' -count=1 -timeout 0 -v \
		-zones.steps=$(or $(STEPS),1000000) -rules.steps=$(or $(STEPS),1000000)

# make chaos [FAULTS=100]: real faults (SIGSTOP, kill -9, partitions, slow and
# failing renewals, sessions destroyed, the assignor's worker killed and
# stopped, client agents killed, stopped and made to leave, Raft leader kills,
# WIPES times the whole cluster replaced by one rebuilt empty and RESTORES
# times by one restored from a snapshot SNAPSHOT_AGE old, each then
# recovered) against shardd workers on a three-server Consul with client agents, offsets
# in PostgreSQL, whose stream state takes 2 s to restore, with a standby side and one
# standby for failover per shard (-chaos.restore, -chaos.standbys), so moves go warm; prints the summary table and fails on any stale commit
# accepted, a non-linearizable history, an instant at which two workers ran one
# shard, or no new assignor after an assignor fault (docs/reliability.md).
# About 40 min at 100 faults of each kind (35 before the two assignor kinds, so
# an estimate); make test runs 3 of each (about 70 s); 2 of each took 63 s.
# Then the same fleet on a three-member etcd (shardd worker --etcd, each worker
# behind a TCP proxy) through etcd's kinds: SIGSTOP, kill -9, a partition from
# etcd, the lease revoked by a third party (also while cut off), the assignor
# killed and stopped, the etcd leader killed; ENGINES=consul or ENGINES=etcd
# runs one.
empty :=
space := $(empty) $(empty)
FAULTS ?= 100
WIPES ?= 10
RESTORES ?= 3
SNAPSHOT_AGE ?= 2m
ENGINES ?= consul etcd
chaos: consul etcd postgres
	@for e in $(ENGINES); do case $$e in consul|etcd) ;; *) echo "make chaos: ENGINES=$(ENGINES): want consul, etcd or both, space-separated" >&2; exit 2;; esac; done
	@test -n "$(strip $(ENGINES))" || { echo "make chaos: ENGINES is empty: want consul, etcd or both" >&2; exit 2; }
	$(GO) test ./internal/harness/chaos -run '$(subst $(space),|,$(strip $(patsubst consul,TestChaos$$,$(patsubst etcd,TestChaosEtcd$$,$(ENGINES)))))' \
		-count=1 -timeout 0 -v -chaos.faults=$(FAULTS) \
		-chaos.wipes=$(WIPES) -chaos.restores=$(RESTORES) -chaos.snapshot-age=$(SNAPSHOT_AGE)

# make flakecheck [N=10] [BESIDE='make chaos FAULTS=20']: the whole make test N
# times on a clean clone of HEAD, every test that failed in any run with its
# count; BESIDE runs a second heavy job in a loop beside each run
# (docs/reliability.md, "Flake check").
N ?= 10
flakecheck:
	bash scripts/flakecheck.sh -n $(N) $(if $(BESIDE),--beside '$(BESIDE)')

# make stepdowns [DURATION=10m] [HOGS=4]: two fleets of shardd workers on a
# Consul dev agent, shard.DefaultPolicy beside shard.SessionTTLPolicy, with
# busy loops taking the CPU; prints each fleet's spurious step-downs
# (docs/tuning.md, "Step-downs on a starved machine").
DURATION ?= 10m
HOGS ?= 4
stepdowns: consul
	bash scripts/stepdowns.sh -d $(DURATION) -hogs $(HOGS)

# make fuzz [FUZZTIME=1000000x]: every fuzz target in turn. A count, not a
# duration: Go 1.26's -fuzztime deadline races its workers (golang/go#75804).
FUZZTIME ?= 1000000x
fuzz:
	@for t in shard:FuzzLeasePolicyValidate shard:FuzzConfig shard/consul:FuzzDecode offsets:FuzzDecodeRecord offsets/bolt:FuzzDecode \
		cmd/shardd:FuzzWorkerFlags cmd/shardctl:FuzzPolicyCommand internal/demo:FuzzOptionsValidate rebalance:FuzzStep internal/keycodec:FuzzSetEncoding; do \
		(cd $${t%%:*} && $(GO) test -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) .) || exit 1; done
