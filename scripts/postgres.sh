#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, postgres) are installed,
# for the integration tests and `shardd demo --offsets postgres://...`.
#
# The tests start their own throwaway clusters (internal/harness/pgtest): this script
# only installs. Debian's package is used because it is the one apt can reach
# here; the binaries land in /usr/lib/postgresql/<major>/bin, where pgtest
# looks. Idempotent: does nothing when they are already there.
#
# Installing needs root (or sudo). The package's post-install step may create
# and start a "main" cluster on port 5432; the tests never use it.
set -euo pipefail

have_pg() {
	local d
	if [[ -n "${SHARDLEASE_PG_BIN:-}" ]]; then
		[[ -x "${SHARDLEASE_PG_BIN}/initdb" && -x "${SHARDLEASE_PG_BIN}/postgres" ]]
		return
	fi
	for d in /usr/lib/postgresql/*/bin; do
		if [[ -x "${d}/initdb" && -x "${d}/postgres" ]]; then
			echo "${d}"
			return 0
		fi
	done
	return 1
}

if dir="$(have_pg)"; then
	echo "postgres.sh: PostgreSQL is installed (${dir:-${SHARDLEASE_PG_BIN:-}}); nothing to do"
	exit 0
fi

if ! command -v apt-get >/dev/null; then
	echo "postgres.sh: PostgreSQL is missing and this is not a Debian-like system (no apt-get);" >&2
	echo "postgres.sh: install the PostgreSQL server and set SHARDLEASE_PG_BIN to the directory holding initdb and postgres" >&2
	exit 1
fi

sudo=()
if [[ "$(id -u)" != 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "postgres.sh: PostgreSQL is missing; installing it needs root, and sudo is not available" >&2
		exit 1
	fi
	sudo=(sudo)
fi

echo "postgres.sh: installing Debian's postgresql package"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y postgresql

if ! dir="$(have_pg)"; then
	echo "postgres.sh: apt-get installed postgresql, but no initdb and postgres under /usr/lib/postgresql/*/bin" >&2
	exit 1
fi
# The tests run initdb as the postgres user when they run as root; the
# package creates that user.
if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
	echo "postgres.sh: the postgres user is missing after the install; initdb cannot run as root without it" >&2
	exit 1
fi
echo "postgres.sh: installed ${dir}"
