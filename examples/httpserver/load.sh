#!/usr/bin/env bash
# load.sh measures examples/httpserver under wrk at 100 and 10,000
# keep-alive connections, with its timeouts on and off, in alternating
# runs, and prints requests/s, latency and the on/off ratio. It is a
# benchmark, not a test: CI does not run it.
#
#   examples/httpserver/load.sh [duration-per-run] [rounds]   # default 10s, 3
#
# It installs wrk from Debian's packages if it is missing (as root), and
# raises the open-files limit as far as the hard limit allows: 10,000
# connections need 10,000 descriptors in wrk and as many in the server.
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-10s}
rounds=${2:-3}

if ! command -v wrk >/dev/null; then
	echo "installing wrk" >&2
	apt-get update -qq >/dev/null && apt-get install -y -qq wrk >/dev/null
fi
ulimit -n "$(ulimit -Hn)"

bin=$(mktemp -d)/httpserver
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./examples/httpserver

addr=127.0.0.1:18080
serve() { # serve TIMEOUTS: start the server and wait until it listens
	"$bin" -addr "$addr" -timeouts="$1" -loops 1 >"$bin.log" 2>&1 &
	server=$!
	for _ in $(seq 100); do grep -q "listening on" "$bin.log" && return; sleep 0.1; done
	echo "the server did not start:" >&2; cat "$bin.log" >&2; exit 1
}

echo "# examples/httpserver under wrk: $(go version | cut -d' ' -f3), $(nproc) CPUs, $duration per run, $rounds rounds"
echo "# one event loop and wrk's threads share the machine; compare within this file"
echo "# conns timeouts requests/s latency-avg latency-p99"
for conns in 100 10000; do
	threads=$(( conns < 2 ? 1 : 2 ))
	for round in $(seq "$rounds"); do
		for timeouts in true false; do
			serve "$timeouts"
			out=$(wrk -t"$threads" -c"$conns" -d"$duration" --latency --timeout 10s "http://$addr/" 2>&1) || {
				echo "wrk failed: $out" >&2; exit 1
			}
			kill "$server"; wait "$server" 2>/dev/null || true; server=
			rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
			avg=$(awk '/^    Latency/ {print $2; exit}' <<<"$out")
			p99=$(awk '/^     99%/ {print $2}' <<<"$out")
			errs=$(grep -E "Socket errors|Non-2xx" <<<"$out" | tr -s ' ' | tr '\n' ';' || true)
			echo "$conns $timeouts $rps $avg $p99 ${errs}" | tee -a "$bin.runs"
		done
	done
done

echo
echo "# medians: conns, requests/s with timeouts on, off, on/off"
awk '{ k=$1" "$2; v[k]=v[k]" "$3 } END { for (k in v) print k, v[k] }' "$bin.runs" |
	sort -n | python3 -c '
import sys, statistics
m = {}
for line in sys.stdin:
    f = line.split()
    m[(f[0], f[1])] = statistics.median(float(x) for x in f[2:])
for conns in sorted({c for c, _ in m}, key=int):
    on, off = m[(conns, "true")], m[(conns, "false")]
    print(f"{conns} {on:.0f} {off:.0f} {on/off:.3f}")
'
