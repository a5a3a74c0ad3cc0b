#!/usr/bin/env bash
# Builds Consul from the Go module proxy into <repo>/bin/consul.
#
# Why build from source: the environment reaches only the Go module proxy, not
# releases.hashicorp.com, and the integration tests need a real agent whose
# session/lock/txn semantics are the ones the coordinator is written against.
# Idempotent: does nothing when bin/consul already reports the wanted version.
set -euo pipefail

CONSUL_VERSION="${CONSUL_VERSION:-1.14.8}"
# consul@v1.14.8 replaces its api/sdk/proto-public submodules with local
# directories that the module zip does not contain; pin api to the release that
# shipped with 1.14.x instead.
CONSUL_API_VERSION="${CONSUL_API_VERSION:-1.18.1}"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${repo}/bin/consul"

# Read the whole output before matching: a pipe into head or grep -q can
# end consul with SIGPIPE, which pipefail turns into a needless rebuild.
have="$([[ -x "${out}" ]] && "${out}" version 2>/dev/null || true)"
if [[ "${have%%$'\n'*}" == "Consul v${CONSUL_VERSION}" ]]; then
	echo "consul.sh: ${out} is already v${CONSUL_VERSION}; nothing to do"
	exit 0
fi

command -v go >/dev/null || { echo "consul.sh: go is not on PATH" >&2; exit 1; }

echo "consul.sh: downloading github.com/hashicorp/consul@v${CONSUL_VERSION} from the module proxy"
dir="$(go mod download -json "github.com/hashicorp/consul@v${CONSUL_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')"
if [[ -z "${dir}" || ! -d "${dir}" ]]; then
	echo "consul.sh: go mod download did not report a source directory" >&2
	exit 1
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/consul-build.XXXXXX")"
cleanup() { chmod -R u+w "${tmp}" 2>/dev/null || true; rm -rf "${tmp}"; }
trap cleanup EXIT

# The module cache is read-only; go mod edit needs a writable copy.
cp -R "${dir}/." "${tmp}/src"
chmod -R u+w "${tmp}/src"
cd "${tmp}/src"

go mod edit \
	-dropreplace github.com/hashicorp/consul/api \
	-dropreplace github.com/hashicorp/consul/sdk \
	-dropreplace github.com/hashicorp/consul/proto-public
go mod edit -require="github.com/hashicorp/consul/api@v${CONSUL_API_VERSION}"

mkdir -p "${repo}/bin"
echo "consul.sh: building (takes several minutes on a cold build cache)"
# Build to a temp name and rename, so an interrupted build never leaves a
# half-written bin/consul that the version check would then reject forever.
GOFLAGS=-mod=mod go build -o "${out}.tmp" .
mv -f "${out}.tmp" "${out}"

echo "consul.sh: built $("${out}" version | head -n1) at ${out}"
