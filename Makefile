# shardlease — the two commands a new user needs are in README.md:
#   go run ./cmd/shardd demo      the main job
#   make test                     everything below, against real servers
GO ?= go

.PHONY: test vet consul demo

# test builds the real Consul the integration tests start (seconds when
# bin/consul is already there), vets, and runs every test with the race
# detector.
test: consul vet
	$(GO) test -race -count=1 -timeout 25m ./...

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

consul:
	bash scripts/consul.sh

demo:
	$(GO) run ./cmd/shardd demo
