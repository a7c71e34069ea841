package topo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalIdentity(t *testing.T) {
	dir := t.TempDir()
	bootID := filepath.Join(dir, "boot_id")
	require.NoError(t, os.WriteFile(bootID, []byte("1234-abcd\n"), 0o644))
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == HostIDEnv {
				return v
			}
			return ""
		}
	}
	host := func() (string, error) { return "node7", nil }
	for _, tc := range []struct {
		name string
		src  identitySources
		want string // prefix
		err  string
	}{
		{"override", identitySources{getenv: env(" ns-a "), hostname: host}, "ns-a", ""},
		{"derived", identitySources{getenv: env(""), hostname: host, bootIDPath: bootID, shmPath: dir}, "node7/1234-abcd/", ""},
		{"no boot id", identitySources{getenv: env(""), hostname: host, bootIDPath: filepath.Join(dir, "none"), shmPath: dir}, "node7/-/", ""},
		{"no shm", identitySources{getenv: env(""), hostname: host, bootIDPath: bootID, shmPath: filepath.Join(dir, "none")}, "node7/1234-abcd/-", ""},
		{"hostname fails", identitySources{getenv: env(""), hostname: func() (string, error) { return "", errors.New("boom") }}, "", "hostname: boom"},
		{"boot id unreadable", identitySources{getenv: env(""), hostname: host, bootIDPath: dir, shmPath: dir}, "", "boot id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tc.src.identity()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(id, tc.want), "%q", id)
		})
	}
}

func TestLocalIdentityHere(t *testing.T) {
	t.Setenv(HostIDEnv, "")
	id, err := LocalIdentity()
	require.NoError(t, err)
	again, err := LocalIdentity()
	require.NoError(t, err)
	assert.Equal(t, id, again)
	assert.Len(t, strings.Split(id, "/"), 3)
	t.Setenv(HostIDEnv, "emulated-host-1")
	id, err = LocalIdentity()
	require.NoError(t, err)
	assert.Equal(t, "emulated-host-1", id)
}

func TestGroupHosts(t *testing.T) {
	for _, tc := range []struct {
		ids    []string
		hosts  [][]int
		hostOf []int
	}{
		{nil, nil, []int{}},
		{[]string{"a"}, [][]int{{0}}, []int{0}},
		{[]string{"b", "a", "b", "a"}, [][]int{{0, 2}, {1, 3}}, []int{0, 1, 0, 1}},
		{[]string{"z", "z", "y", "x", "y"}, [][]int{{0, 1}, {2, 4}, {3}}, []int{0, 0, 1, 2, 1}},
	} {
		hosts, hostOf := GroupHosts(tc.ids)
		assert.Equal(t, tc.hosts, hosts, "%v", tc.ids)
		assert.Equal(t, tc.hostOf, hostOf, "%v", tc.ids)
	}
}
