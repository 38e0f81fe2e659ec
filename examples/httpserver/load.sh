#!/usr/bin/env bash
# load.sh measures examples/httpserver beside net/http serving the same
# routes (httpserver -nethttp), each with its default flags as a user runs
# them, under wrk at 10,000 keep-alive connections, and httpserver with
# its timeouts off (-timeouts=false), in alternating runs. It prints each
# run, then per server the medians, then the ratios of each round
# (httpserver over net/http, timeouts on over off) with their median and
# range. Its last run is bench/results/httpserver.txt, the figure README.md
# gives. It is a benchmark, not a test: CI does not run it.
#
#   examples/httpserver/load.sh [duration] [rounds] [connections]  # default 20s, 5, 10000: 6 min
#   examples/httpserver/load.sh | tee bench/results/httpserver.txt # README's figure
#
# Each run starts a fresh server, runs `wrk -t2 -cCONNS -dDURATION` against
# GET / and stops the server with SIGINT; a round runs the three servers
# in turn, each round in the next order, so that drift falls on all alike.
# A run's requests/s counts the seconds wrk spends opening its
# connections: past the listen backlog (net.core.somaxconn) they wait for
# the kernel's SYN retries, and their cost varies from run to run and is
# higher for net/http, so that short runs scatter (README.md says how
# far); 20 s runs keep it small. wrk and the server share the machine's CPUs, and anything else
# running takes from both: each run says how much CPU other processes
# used during it.
#
# If wrk is missing it says so and installs Debian's package with apt-get,
# which needs root. It raises the open-files limit as far as the hard limit
# allows: 10,000 connections need 10,000 descriptors in wrk and as many in
# the server. On a machine where others measure too, MEASURE_LOCK=FILE has
# it hold the flock(1) lock FILE while it measures, not while it builds
# (bench/README.md, "The measure lock").
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-20s}
rounds=${2:-5}
conns=${3:-10000}

if ! command -v wrk >/dev/null; then
	echo "load.sh: wrk is missing: installing Debian's wrk with apt-get (as root)" >&2
	apt-get update -qq >/dev/null && apt-get install -y -qq wrk >/dev/null
fi
ulimit -n "$(ulimit -Hn)"

dir=$(mktemp -d)
bin=$dir/httpserver
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$dir"' EXIT
go build -o "$bin" ./examples/httpserver
if [ -n "${MEASURE_LOCK:-}" ]; then
	exec 9>"$MEASURE_LOCK"
	flock 9
fi

addr=127.0.0.1:18080
# serve NAME: start the server NAME names and wait until it listens.
serve() {
	local args=(-addr "$addr")
	case $1 in
	net/http) args+=(-nethttp) ;;
	httpserver-off) args+=(-timeouts=false) ;;
	esac
	"$bin" "${args[@]}" >"$dir/log" 2>&1 &
	server=$!
	for _ in $(seq 100); do grep -q "listening on" "$dir/log" && return; sleep 0.1; done
	echo "$1 did not start:" >&2
	cat "$dir/log" >&2
	exit 1
}
# ticks PID: the CPU time, in clock ticks, of PID, or of the whole machine
# (all CPUs, not idle) if PID is empty.
ticks() {
	if [ -z "${1:-}" ]; then
		awk '/^cpu / {print $2+$3+$4+$7+$8+$9; exit}' /proc/stat
	else
		awk '{print $14+$15}' "/proc/$1/stat"
	fi
}
# childTicks FILE: the CPU time, in clock ticks, that FILE, the output of
# bash's times (run in this shell, not a subshell), gives this shell's
# children that have ended: wrk's, once it has.
childTicks() {
	awk -v hz="$(getconf CLK_TCK)" 'NR==2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%d\n", (u[1]*60 + u[2] + s[1]*60 + s[2]) * hz }' "$1"
}

hz=$(getconf CLK_TCK)
echo "# examples/httpserver beside net/http under wrk -t2 -c$conns -d$duration, keep-alive, GET /"
echo "# $(go version | cut -d' ' -f3), $(nproc) CPUs, $rounds rounds, $(git describe --always --dirty), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# servers with default flags (httpserver: $(nproc) event loops; net/http: GOMAXPROCS $(nproc)); wrk and the server share the CPUs"
echo "# server round requests/s p99 server-CPU-us/request wrk-CPU-us/request peak-RSS-MiB other-processes-CPUs errors"
servers=(httpserver net/http httpserver-off)
for round in $(seq "$rounds"); do
	for i in 0 1 2; do
		name=${servers[$(((round - 1 + i) % 3))]}
		serve "$name"
		times >"$dir/times0"
		m0=$(ticks) s0=$(ticks "$server") t0=$(date +%s.%N)
		out=$(wrk -t2 -c"$conns" -d"$duration" --latency --timeout 10s "http://$addr/" 2>&1) || {
			echo "wrk failed: $out" >&2
			exit 1
		}
		m1=$(ticks) s1=$(ticks "$server") t1=$(date +%s.%N)
		times >"$dir/times1"
		w=$(($(childTicks "$dir/times1") - $(childTicks "$dir/times0")))
		hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$server/status")
		kill -INT "$server"
		wait "$server" 2>/dev/null || true
		server=
		awk -v name="$name" -v round="$round" -v hz="$hz" -v hwm="$hwm" \
			-v m="$((m1 - m0))" -v s="$((s1 - s0))" -v w="$w" -v t0="$t0" -v t1="$t1" '
			/^Requests\/sec:/ {rps = $2}
			/ requests in / {n = $1}
			/^     99%/ {p99 = $2}
			/Socket errors|Non-2xx/ {errs = errs $0 ";"}
			END {
				gsub(/  +/, " ", errs)
				printf "%s %d %.0f %s %.1f %.1f %.1f %.2f %s\n", name, round, rps, p99, s / hz * 1e6 / n,
					w / hz * 1e6 / n, hwm / 1024, (m - s - w) / hz / (t1 - t0), errs == "" ? "0" : errs
			}' <<<"$out" | tee -a "$dir/runs"
	done
done

echo
echo "# medians over the rounds: requests/s, p99, server and wrk CPU us/request, peak RSS MiB, other processes' CPUs"
echo "# then each round's ratios: median [lowest-highest]"
python3 - "$dir/runs" <<'PY'
import sys, statistics
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault(f[0], []).append(f)
med = statistics.median
def ms(p):  # wrk's p99: 512.00ms, 1.20s, 900.00us
    for unit, k in (("us", 1e-3), ("ms", 1), ("s", 1e3)):
        if p.endswith(unit) and p[:-len(unit)].replace(".", "").isdigit():
            return float(p[:-len(unit)]) * k
    return float("nan")
for name in ("httpserver", "net/http", "httpserver-off"):
    r = runs[name]
    print(f"{name} {med(float(x[2]) for x in r):.0f} {med(ms(x[3]) for x in r):.0f}ms "
          + " ".join(f"{med(float(x[i]) for x in r):.{2 if i == 7 else 1}f}" for i in (4, 5, 6, 7)))
def ratios(a, b, col):
    xs = sorted(float(x[col]) / float(y[col]) for x, y in zip(runs[a], runs[b]))
    return f"{med(xs):.2f} [{xs[0]:.2f}-{xs[-1]:.2f}]"
print(f"httpserver / net/http requests/s {ratios('httpserver', 'net/http', 2)}")
print(f"httpserver / net/http peak RSS {ratios('httpserver', 'net/http', 6)}")
print(f"httpserver / net/http server CPU per request {ratios('httpserver', 'net/http', 4)}")
print(f"httpserver timeouts on / off requests/s {ratios('httpserver', 'httpserver-off', 2)}")
PY
