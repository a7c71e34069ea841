package netns_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// bed is a set of network namespaces built by one test: emulated hosts on
// this machine, joined by veth pairs whose both ends live in the test's
// namespaces (nothing is added to the machine's own namespace, nothing is
// routed outside), with tc tbf shaping each direction. Addresses are in
// 10.199.0.0/16, which exists only inside the namespaces. Every namespace
// carries the test's unique prefix and is deleted in t.Cleanup, even when
// the test fails.
type bed struct {
	t      *testing.T
	prefix string
}

// newBed checks that this process may create namespaces and shape links,
// and skips the test with the reason when it may not.
func newBed(t *testing.T) *bed {
	t.Helper()
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("netns testbed: %s not found: %v", tool, err)
		}
	}
	var id [3]byte
	_, _ = rand.Read(id[:])
	b := &bed{t: t, prefix: fmt.Sprintf("hg%s", hex.EncodeToString(id[:]))}
	t.Cleanup(b.cleanup)
	probe := b.prefix + "probe"
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("netns testbed needs root (ip netns add refused: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("ip", "-n", probe, "link", "add", "s0", "type", "veth", "peer", "name", "s1").CombinedOutput(); err != nil {
		t.Skipf("netns testbed: veth pairs refused: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("tc", "-n", probe, "qdisc", "add", "dev", "s0", "root", "tbf", "rate", "1gbit", "burst", "256kb", "latency", "100ms").CombinedOutput(); err != nil {
		t.Skipf("netns testbed: tc tbf refused: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return b
}

// cleanup deletes every namespace of this bed (and with them their links).
func (b *bed) cleanup() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		b.t.Logf("netns cleanup: ip netns list: %v", err)
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.HasPrefix(fields[0], b.prefix) {
			if out, err := exec.Command("ip", "netns", "del", fields[0]).CombinedOutput(); err != nil {
				b.t.Errorf("netns cleanup: ip netns del %s: %v: %s", fields[0], err, out)
			}
		}
	}
}

// ns is the full name of the bed's namespace called name.
func (b *bed) ns(name string) string { return b.prefix + name }

// run runs a command and fails the test on error.
func (b *bed) run(args ...string) {
	b.t.Helper()
	if out, err := b.cmd(args...); err != nil {
		b.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// cmd runs a command and returns its output.
func (b *bed) cmd(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// addHost creates namespace name with loopback up.
func (b *bed) addHost(name string) {
	b.t.Helper()
	b.run("ip", "netns", "add", b.ns(name))
	b.run("ip", "-n", b.ns(name), "link", "set", "lo", "up")
}

// addAddress gives host name the address addr (CIDR) on a device of its
// own called dev (a veth whose peer stays in the namespace: this kernel
// may lack the dummy device), for HCCL_GO_SOCKET_IFNAME=dev.
func (b *bed) addAddress(name, dev, addr string) {
	b.t.Helper()
	n := b.ns(name)
	b.run("ip", "-n", n, "link", "add", dev, "type", "veth", "peer", "name", dev+"p")
	b.run("ip", "-n", n, "addr", "add", addr, "dev", dev)
	b.run("ip", "-n", n, "link", "set", dev, "up")
	b.run("ip", "-n", n, "link", "set", dev+"p", "up")
}

// shape limits what leaves dev in host name to rate (tc tbf; burst big
// enough for the rate at this kernel's timer granularity).
func (b *bed) shape(name, dev, rate, burst string) {
	b.t.Helper()
	b.run("tc", "-n", b.ns(name), "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", burst, "latency", "100ms")
}

// link joins hosts a and b by a veth pair (devA in a, devB in b), both ends
// up and shaped to rate.
func (b *bed) link(a, devA, bb, devB, rate, burst string) {
	b.t.Helper()
	b.run("ip", "link", "add", devA, "netns", b.ns(a), "type", "veth", "peer", "name", devB, "netns", b.ns(bb))
	b.run("ip", "-n", b.ns(a), "link", "set", devA, "up")
	b.run("ip", "-n", b.ns(bb), "link", "set", devB, "up")
	b.shape(a, devA, rate, burst)
	b.shape(bb, devB, rate, burst)
}

// route sends traffic for addr (a /32) from host name out of dev, from src.
func (b *bed) route(name, addr, dev, src string) {
	b.t.Helper()
	b.run("ip", "-n", b.ns(name), "route", "add", addr+"/32", "dev", dev, "src", src)
}

// exists reports whether the namespace exists (for the cleanup test).
func namespaceExists(full string) bool {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == full {
			return true
		}
	}
	return false
}

// assign gives dev in host name the address cidr.
func (b *bed) assign(name, dev, cidr string) {
	b.t.Helper()
	b.run("ip", "-n", b.ns(name), "addr", "add", cidr, "dev", dev)
}
