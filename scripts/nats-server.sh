#!/usr/bin/env bash
# Builds nats-server from the Go module proxy into <repo>/bin/nats-server.
#
# Why build from source: the environment reaches only the Go module proxy,
# not GitHub's releases, and examples/jetstream's test must run against a
# real nats-server process (JetStream on a loopback port), not only the
# in-process server `go run` uses. The version is the one go.mod requires
# (the example embeds the same module), so the binary and the embedded
# server never differ.
# Idempotent: does nothing when bin/nats-server already reports that version.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${repo}/bin/nats-server"
cd "${repo}"

command -v go >/dev/null || { echo "nats-server.sh: go is not on PATH" >&2; exit 1; }
version="$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)"

# Read the whole output before matching (a pipe into grep -q can end the
# binary with SIGPIPE, which pipefail turns into a needless rebuild).
have="$([[ -x "${out}" ]] && "${out}" --version 2>/dev/null || true)"
if [[ "${have%%$'\n'*}" == "nats-server: ${version}" ]]; then
	echo "nats-server.sh: ${out} is already ${version}; nothing to do"
	exit 0
fi

mkdir -p "${repo}/bin"
echo "nats-server.sh: building github.com/nats-io/nats-server/v2@${version} (a minute on a cold build cache)"
# Build to a temp name and rename, so an interrupted build never leaves a
# half-written binary that the version check would then reject forever.
go build -o "${out}.tmp" github.com/nats-io/nats-server/v2
mv -f "${out}.tmp" "${out}"

echo "nats-server.sh: built $("${out}" --version) at ${out}"
