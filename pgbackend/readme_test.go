package pgbackend

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's configuration table must list every setting with its default.
func TestReadmeListsEverySetting(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(b)
	for _, v := range Vars {
		row := "| `" + v.Env + "` |"
		i := strings.Index(readme, row)
		if !assert.GreaterOrEqual(t, i, 0, "README.md has no table row for %s", v.Env) {
			continue
		}
		line := readme[i:]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		want := "`" + v.Default + "`"
		if v.Default == "" {
			want = "(empty)"
		}
		assert.Contains(t, line, want, "README.md row for %s must show its default", v.Env)
	}
	for _, env := range []string{"HCCL_GO_MAXPROCS", "HCCL_GO_HOST_ID", "HCCL_GO_TORCH_FLIGHT_RECORDER", JobSecretEnv} {
		assert.Contains(t, readme, "`"+env+"`", "README.md must document %s", env)
	}
}
