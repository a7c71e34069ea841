package topo

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// NUMANode is the NUMA node this process runs on, from sysfs: the node of
// every CPU the process may run on when they all lie in one node (a pinned
// process), else the node of the CPU the calling thread last ran on. It is
// -1 when unknown (no sysfs, or a CPU in no node).
func NUMANode() int {
	return numaSources{
		nodeDir:    "/sys/devices/system/node",
		statusPath: "/proc/self/status",
		statPath:   "/proc/thread-self/stat",
	}.node()
}

// PinnedNUMANode is the NUMA node every CPU this process may run on lies
// in (a process bound to one node, as numactl --cpunodebind or a
// launcher's NUMA binding leaves it), else -1: an unbound process moves
// between nodes, so its node says nothing about where its memory is.
func PinnedNUMANode() int {
	return numaSources{
		nodeDir:    "/sys/devices/system/node",
		statusPath: "/proc/self/status",
	}.pinned()
}

// NUMANodes is the number of NUMA nodes of this machine with CPUs (0 when
// sysfs says nothing).
func NUMANodes() int {
	return numaSources{nodeDir: "/sys/devices/system/node"}.nodes()
}

func (s numaSources) nodes() int {
	nodeOf, err := cpuNodes(s.nodeDir)
	if err != nil {
		return 0
	}
	seen := map[int]bool{}
	for _, n := range nodeOf {
		seen[n] = true
	}
	return len(seen)
}

// numaSources are NUMANode's inputs, replaceable in tests.
type numaSources struct {
	nodeDir    string // holds node<N>/cpulist
	statusPath string // has the Cpus_allowed_list line
	statPath   string // field 39 is the CPU last run on
}

func (s numaSources) node() int {
	nodeOf, err := cpuNodes(s.nodeDir)
	if err != nil || len(nodeOf) == 0 {
		return -1
	}
	if allowed, err := allowedCPUs(s.statusPath); err == nil {
		if n, ok := commonNode(allowed, nodeOf); ok {
			return n
		}
	}
	cpu, err := lastCPU(s.statPath)
	if err != nil {
		return -1
	}
	if n, ok := nodeOf[cpu]; ok {
		return n
	}
	return -1
}

func (s numaSources) pinned() int {
	nodeOf, err := cpuNodes(s.nodeDir)
	if err != nil || len(nodeOf) == 0 {
		return -1
	}
	allowed, err := allowedCPUs(s.statusPath)
	if err != nil {
		return -1
	}
	if n, ok := commonNode(allowed, nodeOf); ok {
		return n
	}
	return -1
}

// cpuNodes maps each CPU to its NUMA node from dir/node<N>/cpulist.
func cpuNodes(dir string) (map[int]int, error) {
	entries, err := filepath.Glob(filepath.Join(dir, "node[0-9]*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(entries)
	nodeOf := make(map[int]int)
	for _, e := range entries {
		node, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(e), "node"))
		if err != nil {
			continue // e.g. a file named node0abc: not a node
		}
		data, err := os.ReadFile(filepath.Join(e, "cpulist"))
		if err != nil {
			return nil, fmt.Errorf("numa: %w", err)
		}
		cpus, err := parseCPUList(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("numa: %s: %w", e, err)
		}
		for _, c := range cpus {
			nodeOf[c] = node
		}
	}
	return nodeOf, nil
}

// commonNode is the node of all cpus, when they share one.
func commonNode(cpus []int, nodeOf map[int]int) (int, bool) {
	node := -1
	for _, c := range cpus {
		n, ok := nodeOf[c]
		if !ok || (node >= 0 && n != node) {
			return -1, false
		}
		node = n
	}
	return node, node >= 0
}

// allowedCPUs reads the Cpus_allowed_list line of /proc/<pid>/status.
func allowedCPUs(statusPath string) ([]int, error) {
	data, err := os.ReadFile(statusPath)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return parseCPUList(strings.TrimSpace(v))
		}
	}
	return nil, fmt.Errorf("%s: no Cpus_allowed_list", statusPath)
}

// lastCPU reads field 39 ("processor") of /proc/<pid>/stat. The command
// name (field 2) may hold spaces and parentheses, so count from its last ')'.
func lastCPU(statPath string) (int, error) {
	data, err := os.ReadFile(statPath)
	if err != nil {
		return -1, err
	}
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return -1, fmt.Errorf("%s: malformed", statPath)
	}
	fields := strings.Fields(s[end+1:]) // fields[0] is field 3
	const processor = 39 - 3
	if len(fields) <= processor {
		return -1, fmt.Errorf("%s: only %d fields", statPath, len(fields)+2)
	}
	return strconv.Atoi(fields[processor])
}

// maxCPUs bounds a CPU range, so a corrupt file cannot make us allocate
// without limit.
const maxCPUs = 1 << 16

// parseCPUList parses the kernel's list format: "0-3,8,10-11".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	if s == "" {
		return cpus, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if a < 0 || b < a || b-a > maxCPUs {
			return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
