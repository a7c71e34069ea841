package pgbackend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJobSecret(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	cases := []struct {
		name     string
		explicit string
		env      map[string]string
		unauth   bool
		want     string
		err      string
	}{
		{name: "explicit", explicit: "s3", want: "s3"},
		{name: "explicit over environment", explicit: "s3", env: map[string]string{JobSecretEnv: "e"}, want: "s3"},
		{name: "environment", env: map[string]string{JobSecretEnv: "e"}, want: "e"},
		{name: "none anywhere", err: "auth=none"},
		{name: "empty environment", env: map[string]string{JobSecretEnv: ""}, err: JobSecretEnv},
		{name: "unauthenticated", unauth: true, env: map[string]string{JobSecretEnv: "e"}, want: ""},
		{name: "unauthenticated with a secret", unauth: true, explicit: "s3", err: "one or the other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JobSecret(tc.explicit, env(tc.env), tc.unauth)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func TestAuthOption(t *testing.T) {
	var c Config
	require.NoError(t, c.ApplyOptions("auth=none"))
	assert.True(t, c.Unauthenticated)
	require.NoError(t, c.ApplyOptions("auth=secret"))
	assert.False(t, c.Unauthenticated)
	err := c.ApplyOptions("auth=maybe")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want secret or none")
	_, ok := lookupVar("HCCL_GO_AUTH")
	assert.False(t, ok, "auth=none is an option only, never an environment variable")
}
