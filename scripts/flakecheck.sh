#!/usr/bin/env bash
# Runs the full `make test` N times on a clean clone of this repository's
# HEAD and prints every test that failed in any run, with how many runs it
# failed in: a test that fails in some runs only is a flake, a bug to fix at
# its cause.
#
#   scripts/flakecheck.sh [-n N] [--beside 'CMD'] [--keep]
#
#   -n N           runs (default 10)
#   --beside CMD   run CMD in a loop beside every run, as a second heavy job
#                  on the machine (e.g. 'make chaos FAULTS=20'); it is
#                  stopped when the run ends
#   --keep         keep the clone and the logs (kept anyway when a run failed)
#
# Each run is CI's: SHARDLEASE_REQUIRE_CONSUL=1 make test, in the clone. The
# first run builds Consul and nats-server into the clone's bin/ (minutes);
# the others reuse them. Exit status: 0 when every run passed.
set -euo pipefail

runs=10
beside=""
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n) runs="$2"; shift 2 ;;
	--beside) beside="$2"; shift 2 ;;
	--keep) keep=1; shift ;;
	*) echo "flakecheck.sh: unknown argument $1 (want -n N, --beside 'CMD' or --keep)" >&2; exit 2 ;;
	esac
done
if ! [[ "${runs}" =~ ^[1-9][0-9]*$ ]]; then
	echo "flakecheck.sh: -n ${runs} is not a positive number of runs" >&2
	exit 2
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/flakecheck.XXXXXX")"
git clone -q "${repo}" "${work}/clone"
commit="$(git -C "${work}/clone" rev-parse --short HEAD)"
echo "flakecheck.sh: ${runs} runs of make test at ${commit} in ${work}/clone${beside:+, beside: ${beside}}"

besidepid=""
stop_beside() {
	if [[ -n "${besidepid}" ]]; then
		kill -- "-${besidepid}" 2>/dev/null || true
		wait "${besidepid}" 2>/dev/null || true
		besidepid=""
	fi
}
trap stop_beside EXIT

failed_runs=0
for i in $(seq 1 "${runs}"); do
	log="${work}/run-${i}.log"
	if [[ -n "${beside}" ]]; then
		# A process group of its own, so that stopping it stops its children.
		setsid bash -c "cd '${repo}' && while true; do ${beside}; done" >"${work}/beside-${i}.log" 2>&1 &
		besidepid=$!
	fi
	start=$(date +%s)
	if (cd "${work}/clone" && SHARDLEASE_REQUIRE_CONSUL=1 make test) >"${log}" 2>&1; then
		status=pass
	else
		status=FAIL
		failed_runs=$((failed_runs + 1))
	fi
	stop_beside
	echo "run ${i}/${runs}: ${status} in $(($(date +%s) - start)) s"
done

# Every failing test (subtests included) and package, counted once per run.
echo
echo "runs: ${runs}, failed: ${failed_runs}"
summary="$(for log in "${work}"/run-*.log; do
	{
		grep -oE -- '--- FAIL: [^ ]+' "${log}" | sed 's/--- FAIL: /test /' || true
		grep -oE '^FAIL[[:space:]]+[^[:space:]]+' "${log}" | awk '$2 != "" {print "package " $2}' || true
		grep -oE 'panic: test timed out after [^ ]+' "${log}" | sed 's/^/timeout: /' || true
		grep -oE '^make: \*\*\* \[[^]]+\]' "${log}" | sed 's/^/make target: /' || true
	} | sort -u
done | sort | uniq -c | sort -rn)"
if [[ -n "${summary}" ]]; then
	echo "failures (runs failed in, what):"
	echo "${summary}"
else
	echo "no test failed in any run"
fi

if [[ "${failed_runs}" -gt 0 || "${keep}" -eq 1 ]]; then
	echo "logs: ${work}/run-*.log"
else
	chmod -R u+w "${work}" 2>/dev/null || true
	rm -rf "${work}"
fi
[[ "${failed_runs}" -eq 0 ]]
