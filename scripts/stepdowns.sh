#!/usr/bin/env bash
# Counts the step-downs a lease policy costs on a starved machine: two
# fleets of `shardd worker` processes run side by side on one Consul dev
# agent for the same minutes, one on shard.DefaultPolicy and one on
# shard.SessionTTLPolicy (the default of earlier releases), while busy
# loops take the CPU from them. Nothing injects a fault: every step-down
# is spurious, a renewal that did not succeed within the pause budget.
#
#   scripts/stepdowns.sh [-d 10m] [-w 12] [-hogs 4] [-shards 64]
#
#   -d DURATION   how long both fleets run (default 10m)
#   -w N          workers per fleet (default 12)
#   -hogs N       busy loops beside them at the same priority (default 4;
#                 0 for a machine loaded by something else)
#   -shards N     shards per fleet (default 64)
#
# Prints, per fleet: step-downs, failed renewals and pauses the workers
# noticed (their warnings), and the load average. Servers listen on
# loopback.
set -euo pipefail

duration=10m
workers=12
hogs=4
shards=64
while [[ $# -gt 0 ]]; do
	case "$1" in
	-d) duration="$2"; shift 2 ;;
	-w) workers="$2"; shift 2 ;;
	-hogs) hogs="$2"; shift 2 ;;
	-shards) shards="$2"; shift 2 ;;
	*) echo "stepdowns.sh: unknown argument $1 (want -d DURATION, -w N, -hogs N or -shards N)" >&2; exit 2 ;;
	esac
done
for n in "${workers}" "${hogs}" "${shards}"; do
	if ! [[ "${n}" =~ ^[0-9]+$ ]]; then
		echo "stepdowns.sh: ${n} is not a whole number" >&2
		exit 2
	fi
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "${repo}/scripts/consul.sh" >/dev/null
work="$(mktemp -d "${TMPDIR:-/tmp}/stepdowns.XXXXXX")"
echo "stepdowns.sh: building shardd; logs in ${work}"
(cd "${repo}" && go build -o "${work}/shardd" ./cmd/shardd)

pids=()
stop() {
	for p in "${pids[@]}"; do kill "${p}" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT

port=$((20000 + RANDOM % 20000))
"${repo}/bin/consul" agent -dev -node stepdowns -bind 127.0.0.1 -client 127.0.0.1 -http-port "${port}" \
	-serf-lan-port $((port + 1)) -serf-wan-port $((port + 2)) -server-port $((port + 3)) \
	-dns-port -1 -grpc-port -1 -grpc-tls-port -1 -https-port -1 >"${work}/consul.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
	curl -sf "http://127.0.0.1:${port}/v1/status/leader" | grep -q : && break
	sleep 0.1
done
if ! curl -sf "http://127.0.0.1:${port}/v1/status/leader" | grep -q :; then
	echo "stepdowns.sh: the Consul dev agent did not start (port ${port} taken?); its log: ${work}/consul.log" >&2
	exit 1
fi

declare -A lease=(
	[default]=""
	[sessionttl]="--ttl 10s --renew 2s --pause-budget 5s"
)
for fleet in default sessionttl; do
	for i in $(seq 1 "${workers}"); do
		# shellcheck disable=SC2086 # the lease flags are words
		"${work}/shardd" worker --consul "127.0.0.1:${port}" --prefix "stepdowns/${fleet}" --shards "${shards}" \
			--id "w${i}" ${lease[${fleet}]} >"${work}/${fleet}-w${i}.log" 2>&1 &
		pids+=($!)
	done
done
sleep 5 # every worker joined before the CPU goes
for _ in $(seq 1 "${hogs}"); do
	bash -c 'while :; do :; done' &
	pids+=($!)
done
echo "stepdowns.sh: ${workers} workers per fleet, ${hogs} busy loops, for ${duration}"
sleep "${duration}"
load="$(cut -d' ' -f1-3 /proc/loadavg)"
stop
trap - EXIT

printf '%-11s %-36s %10s %16s %7s\n' fleet lease step-downs failed-renewals pauses
for fleet in default sessionttl; do
	count() { cat "${work}/${fleet}"-w*.log | grep -c "$1" || true; }
	printf '%-11s %-36s %10s %16s %7s\n' "${fleet}" "${lease[${fleet}]:-(none given: shard.DefaultPolicy)}" \
		"$(count '"stepped down')" "$(count 'session renewal failed')" "$(count 'process paused')"
done
echo "load average at the end: ${load}"
