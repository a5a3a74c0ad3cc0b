#!/usr/bin/env bash
# Builds etcd from the Go module proxy into <repo>/bin/etcd.
#
# Why build from source: the environment reaches only the Go module proxy,
# not GitHub's releases, and the etcd engine's tests need a real etcd server
# (leases, transactions, watches and compaction as etcd implements them).
# The server module (go.etcd.io/etcd/server/v3, whose main package is the
# etcd binary) replaces its sibling modules with local directories that its
# module zip does not contain; the build drops those replaces and takes the
# released siblings of the same version instead.
# Idempotent: does nothing when bin/etcd already reports the wanted version.
set -euo pipefail

ETCD_VERSION="${ETCD_VERSION:-3.6.6}"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${repo}/bin/etcd"

# Read the whole output before matching: a pipe into grep -q can end etcd
# with SIGPIPE, which pipefail turns into a needless rebuild.
have="$([[ -x "${out}" ]] && "${out}" --version 2>/dev/null || true)"
if [[ "${have}" == *"etcd Version: ${ETCD_VERSION}"$'\n'* || "${have}" == *"etcd Version: ${ETCD_VERSION}" ]]; then
	echo "etcd.sh: ${out} is already v${ETCD_VERSION}; nothing to do"
	exit 0
fi

command -v go >/dev/null || { echo "etcd.sh: go is not on PATH" >&2; exit 1; }

echo "etcd.sh: downloading go.etcd.io/etcd/server/v3@v${ETCD_VERSION} from the module proxy"
dir="$(go mod download -json "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')"
if [[ -z "${dir}" || ! -d "${dir}" ]]; then
	echo "etcd.sh: go mod download did not report a source directory" >&2
	exit 1
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/etcd-build.XXXXXX")"
cleanup() { chmod -R u+w "${tmp}" 2>/dev/null || true; rm -rf "${tmp}"; }
trap cleanup EXIT

# The module cache is read-only; go mod edit needs a writable copy.
cp -R "${dir}/." "${tmp}/src"
chmod -R u+w "${tmp}/src"
cd "${tmp}/src"

for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do
	go mod edit -dropreplace "go.etcd.io/etcd/${m}" -require="go.etcd.io/etcd/${m}@v${ETCD_VERSION}"
done

mkdir -p "${repo}/bin"
echo "etcd.sh: building (takes a few minutes on a cold build cache)"
# Build to a temp name and rename, so an interrupted build never leaves a
# half-written bin/etcd that the version check would then reject forever.
GOFLAGS=-mod=mod go build -o "${out}.tmp" .
mv -f "${out}.tmp" "${out}"

echo "etcd.sh: built $("${out}" --version | head -n1) at ${out}"
