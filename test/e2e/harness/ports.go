package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// handedOut are the ports freePort gave out in this process, never given twice.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago, for a process the
// stack starts later. It picks below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range): a port from that range (what listening on port 0 gives) can
// be taken, before the process binds it, by any outgoing connection on the host, which a
// cluster of a hundred kubelets opens by the hundred.
func freePort() (int, error) {
	low := ephemeralLow()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	const first = 10000
	for range 200 {
		port := first + rand.IntN(low-first)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		handedOut.ports[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("harness: no free port found between %d and %d", first, low)
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when unreadable).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= 10001 {
		return 32768
	}
	return low
}
