//go:build unix

package idleconn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// envBurstLimit, set, makes TestBurstChild the server of
// TestBurstAtFilesLimit, under that descriptor limit.
const envBurstLimit = "IDLECONN_BURST_LIMIT"

// envBurstReusePort says whether TestBurstChild runs gnet with
// WithReusePort.
const envBurstReusePort = "IDLECONN_BURST_REUSEPORT"

// burstReport is what TestBurstChild prints once its server has stood the
// burst, on a line starting "BURST ".
type burstReport struct {
	MaxConns int    // the server's MaxConns, its default under the limit
	Refused  uint64 // connections refused
	Open     int    // connections the echo server had open at most
}

// TestBurstAtFilesLimit checks that a server with the default MaxConns,
// under a descriptor limit of 256, stands a burst of connections dialed as
// fast as the kernel takes them: its engine keeps running, it holds no
// more than MaxConns, and it refuses the rest. An accept that fails for
// want of a descriptor stops gnet's whole engine.
//
//   - With gnet.WithReusePort, each event loop accepts from a listener of
//     its own and refuses a connection before it accepts the next: 1,500
//     dials from 64 goroutines at once.
//   - Without it, gnet's main reactor accepts every connection waiting
//     before a loop can refuse one, and the listener's backlog, cut to
//     what the limit leaves beyond MaxConns (connectionsKind's boot),
//     bounds that burst: 1,000 dials one after another. Left at gnet's,
//     net.core.somaxconn (4,096), the engine stopped in every run. A
//     flood dialed in parallel faster than the loops refuse can outrun
//     the cut backlog (MaxConns's documentation).
//
// The server runs in a child process, the test binary again, so that the
// limit is its own.
func TestBurstAtFilesLimit(t *testing.T) {
	t.Run("reuseport", func(t *testing.T) { burstAtFilesLimit(t, true, 1500, 64) })
	t.Run("one-dialer", func(t *testing.T) { burstAtFilesLimit(t, false, 2000, 1) })
}

func burstAtFilesLimit(t *testing.T, reusePort bool, dials, dialers int) {
	const limit = 256
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBurstChild$", "-test.v")
	cmd.Env = append(os.Environ(), envBurstLimit+"="+strconv.Itoa(limit), envBurstReusePort+"="+strconv.FormatBool(reusePort))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	var addr string
	for addr == "" && lines.Scan() {
		if a, ok := strings.CutPrefix(lines.Text(), "ADDR "); ok {
			addr = a
		}
	}
	require.NotEmpty(t, addr, "the child reported no address")

	// The burst: every dialer dials as fast as the kernel lets it, for 3 s
	// at most, and keeps what it got open until the end, as clients that
	// mean to stay. A dial the full backlog turns away waits for its SYN's
	// retry, a second later.
	var mu sync.Mutex
	var held []net.Conn
	var timedOut atomic.Int64
	var wg sync.WaitGroup
	stopDialing := time.Now().Add(3 * time.Second)
	for range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range dials / dialers {
				if time.Now().After(stopDialing) {
					return
				}
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					timedOut.Add(1)
					continue
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()

	// The server is up, and serves a connection beyond the burst once
	// the connections it refused have gone.
	echo := func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		_, err = io.ReadFull(c, make([]byte, 4))
		return err
	}
	// Room for the echo below: the connections the server holds are
	// among those whose read waits, as a refused one ends at once.
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
			_ = c.Close()
		}
	}
	var echoErr error
	for range 50 {
		if echoErr = echo(); echoErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, echoErr, "the engine stopped under the burst (its log is above)")

	_, err = io.WriteString(stdin, "report\n")
	require.NoError(t, err)
	var report *burstReport
	for report == nil && lines.Scan() {
		if j, ok := strings.CutPrefix(lines.Text(), "BURST "); ok {
			report = new(burstReport)
			require.NoError(t, json.Unmarshal([]byte(j), report))
		}
	}
	require.NotNil(t, report, "the child reported nothing")
	t.Logf("dialed %d (%d timed out); child: %+v", len(held), timedOut.Load(), *report)
	if reusePort {
		// Each loop's listener keeps gnet's backlog: a dial waits for no
		// SYN's retry (limitBacklog, acceptsOneByOne).
		require.Equal(t, dials/dialers*dialers, len(held), "dials taken within 3 s")
	}
	require.Equal(t, limit-32-64, report.MaxConns, "the limit less an eighth, spare, and a quarter, for the burst")
	require.LessOrEqual(t, report.Open, report.MaxConns, "connections open at once")
	require.Positive(t, report.Refused, "the burst was refused beyond MaxConns")
}

// TestBurstChild is TestBurstAtFilesLimit's server, run by it in a child
// process: an echo server with idleconn's defaults, under the descriptor
// limit the parent gives. It prints its address, then its report once the
// parent asks, and stops.
func TestBurstChild(t *testing.T) {
	limit, err := strconv.Atoi(os.Getenv(envBurstLimit))
	if err != nil {
		t.Skip("run by TestBurstAtFilesLimit")
	}
	var r syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r))
	r.Cur = uint64(limit)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r))
	s := &echoServer{}
	h, err := New(s, Options{Timeout: time.Minute})
	require.NoError(t, err)
	reusePort, err := strconv.ParseBool(os.Getenv(envBurstReusePort))
	require.NoError(t, err)
	addr := serve(t, s, h, 2, gnet.WithReusePort(reusePort))
	os.Stdout.WriteString("ADDR " + addr + "\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	s.mu.Lock()
	report := burstReport{MaxConns: h.Stats().MaxConns, Refused: h.Stats().Refused, Open: s.peak}
	s.mu.Unlock()
	j, err := json.Marshal(report)
	require.NoError(t, err)
	os.Stdout.WriteString("BURST " + string(j) + "\n")
}
