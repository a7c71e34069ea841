package pgbackend

import (
	"fmt"
	"strings"
)

// ifFilter selects network interfaces by name the way NCCL_SOCKET_IFNAME
// does, so that a job's existing setting carries over:
//
//	eth           interfaces whose name starts with "eth"
//	=eth0         exactly eth0
//	eth,ib        either prefix
//	^docker,lo    every interface except those (and except loopback)
//	^=docker0     every interface except exactly docker0
type ifFilter struct {
	spec    string
	exclude bool
	exact   bool
	names   []string
}

func parseIfFilter(spec string) (ifFilter, error) {
	f := ifFilter{spec: spec}
	s := strings.TrimSpace(spec)
	s, f.exclude = strings.CutPrefix(s, "^")
	s, f.exact = strings.CutPrefix(s, "=")
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			f.names = append(f.names, n)
		}
	}
	if len(f.names) == 0 {
		return f, fmt.Errorf("want interface names or prefixes (eth, =eth0, ^docker,lo), got %q", spec)
	}
	return f, nil
}

// selects reports whether the filter picks ifc. An exclusion list never
// picks loopback: "everything but docker" means a real network.
func (f ifFilter) selects(ifc netIface) bool {
	if f.exclude && ifc.Loopback {
		return false
	}
	named := false
	for _, n := range f.names {
		if ifc.Name == n || (!f.exact && strings.HasPrefix(ifc.Name, n)) {
			named = true
			break
		}
	}
	return named != f.exclude
}

func setIfname(c *Config, v string) error {
	if strings.TrimSpace(v) == "" {
		c.SocketIfname = ""
		return nil
	}
	if _, err := parseIfFilter(v); err != nil {
		return err
	}
	c.SocketIfname = strings.TrimSpace(v)
	return nil
}
