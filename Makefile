# shardlease — the two commands a new user needs are in README.md:
#   go run ./cmd/shardd demo      the main job
#   make test                     everything below, against real servers
GO ?= go

.PHONY: test vet consul chromium demo dashboard-screenshot

# test builds the real Consul the integration tests start (seconds when
# bin/consul is already there), installs Debian's Chromium for the dashboard's
# browser test when missing, vets, and runs every test with the race detector.
test: consul chromium vet
	$(GO) test -race -count=1 -timeout 25m ./...

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

consul:
	bash scripts/consul.sh

chromium:
	bash scripts/chromium.sh

# Refresh the README's screenshot from the browser test.
dashboard-screenshot: chromium
	SHARDLEASE_SCREENSHOT=$(CURDIR)/docs/img/dashboard.png $(GO) test -count=1 -run TestDashboardInChromium ./internal/dashboard

demo:
	$(GO) run ./cmd/shardd demo
