package topo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// HostIDEnv overrides LocalIdentity, for emulating several hosts on one
// machine (network namespaces share hostname, boot id and /dev/shm).
const HostIDEnv = "HCCL_GO_HOST_ID"

// LocalIdentity identifies this process's host for shared memory:
// $HCCL_GO_HOST_ID when set, else "hostname/boot-id/dev:inode of /dev/shm".
// Two processes share memory through /dev/shm exactly when these agree:
// the boot id tells apart machines with one hostname, the /dev/shm identity
// tells apart containers on one kernel.
func LocalIdentity() (string, error) {
	return identitySources{
		getenv:     os.Getenv,
		hostname:   os.Hostname,
		bootIDPath: "/proc/sys/kernel/random/boot_id",
		shmPath:    "/dev/shm",
	}.identity()
}

// identitySources are LocalIdentity's inputs, replaceable in tests.
type identitySources struct {
	getenv     func(string) string
	hostname   func() (string, error)
	bootIDPath string
	shmPath    string
}

func (s identitySources) identity() (string, error) {
	if id := strings.TrimSpace(s.getenv(HostIDEnv)); id != "" {
		return id, nil
	}
	host, err := s.hostname()
	if err != nil {
		return "", fmt.Errorf("host identity: hostname: %w", err)
	}
	// A missing file yields "-": the other parts still tell hosts apart.
	bootID := "-"
	data, err := os.ReadFile(s.bootIDPath)
	switch {
	case err == nil:
		bootID = strings.TrimSpace(string(data))
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("host identity: boot id: %w", err)
	}
	shm := "-"
	fi, err := os.Stat(s.shmPath)
	switch {
	case err == nil:
		shm = fileIdentity(fi)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("host identity: %s: %w", s.shmPath, err)
	}
	return host + "/" + bootID + "/" + shm, nil
}

// GroupHosts groups ranks by host id. hosts[h] lists the ranks of host h in
// increasing order, hosts are ordered by their lowest rank, and hostOf[r]
// is rank r's host: every rank computes the same grouping.
func GroupHosts(hostIDs []string) (hosts [][]int, hostOf []int) {
	index := make(map[string]int)
	hostOf = make([]int, len(hostIDs))
	for r, id := range hostIDs {
		h, ok := index[id]
		if !ok {
			h = len(hosts)
			index[id] = h
			hosts = append(hosts, nil)
		}
		hosts[h] = append(hosts[h], r)
		hostOf[r] = h
	}
	return hosts, hostOf
}
