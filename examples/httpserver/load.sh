#!/usr/bin/env bash
# load.sh measures examples/httpserver under wrk at 100 and 10,000
# keep-alive connections, with its timeouts on and off, in alternating
# runs, and prints requests/s, latency and the on/off ratio of each round
# with their median and spread. It is a benchmark, not a test: CI does not
# run it. If others share the machine, run it under the measure lock
# (bench/README.md, "The measure lock"), one measurement at a time:
#
#   flock /tmp/measure.lock examples/httpserver/load.sh [duration-per-run] [rounds]   # default 5s, 10
#
# It runs 2 x 2 x ROUNDS wrk runs of DURATION each, plus about a second
# each to start and stop the server: 3 min 40 s with the defaults. If wrk
# is missing it installs Debian's package with apt-get, which needs root,
# and it raises the open-files limit as far as the hard limit allows:
# 10,000 connections need 10,000 descriptors in wrk and as many in the
# server. bench/cmd/httpload measures more (net/http beside it,
# Connection: close, attacks).
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-5s}
rounds=${2:-10}

if ! command -v wrk >/dev/null; then
	echo "load.sh: installing wrk with apt-get (as root)" >&2
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

echo "# examples/httpserver under wrk: $(go version | cut -d' ' -f3), $(nproc) CPUs, $duration per run, $rounds rounds, $(git describe --always --dirty)"
echo "# one event loop and wrk's threads share the machine; compare within this file"
echo "# conns timeouts requests/s latency-avg latency-p99"
for conns in 100 10000; do
	threads=$(( conns < 2 ? 1 : 2 ))
	for round in $(seq "$rounds"); do
		order="true false" # alternate which goes first, so that drift cancels
		if ((round % 2 == 0)); then order="false true"; fi
		for timeouts in $order; do
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
echo "# per conns: requests/s medians with timeouts on and off, then on/off of each round's pair: median [lowest-highest]"
python3 - "$bin.runs" <<'PY'
import sys, statistics
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault((f[0], f[1]), []).append(float(f[2]))
for conns in sorted({c for c, _ in runs}, key=int):
    on, off = runs[(conns, "true")], runs[(conns, "false")]
    ratios = sorted(a / b for a, b in zip(on, off))
    print(f"{conns} {statistics.median(on):.0f} {statistics.median(off):.0f} "
          f"{statistics.median(ratios):.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]")
PY
