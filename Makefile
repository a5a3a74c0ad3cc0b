# shardlease — the two commands a new user needs are in README.md:
#   go run ./cmd/shardd demo      the main job
#   make test                     everything below, against real servers
GO ?= go

.PHONY: test vet consul postgres chromium demo dashboard-screenshot bench

# test builds the real Consul the integration tests start (seconds when
# bin/consul is already there), installs Debian's PostgreSQL and Chromium when
# missing (the tests start their own throwaway servers and browser), vets, and
# runs every test with the race detector.
test: consul postgres chromium vet
	$(GO) test -race -count=1 -timeout 25m ./...

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

consul:
	bash scripts/consul.sh

postgres:
	bash scripts/postgres.sh

chromium:
	bash scripts/chromium.sh

# What the fence costs each offsets backend, against the same write unchecked
# (docs/benchmarks.md, "Fenced offsets").
bench: consul postgres
	$(GO) test -run '^$$' -bench FenceCost -benchtime 1s -count 8 ./offsets/postgres ./offsets/consul ./offsets/offsetstest/fencecost

# Refresh the README's screenshot from the browser test.
dashboard-screenshot: chromium
	SHARDLEASE_SCREENSHOT=$(CURDIR)/docs/img/dashboard.png $(GO) test -count=1 -run TestDashboardInChromium ./internal/dashboard

demo:
	$(GO) run ./cmd/shardd demo
