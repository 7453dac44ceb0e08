package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAcronymsInAnyCase: the config values that are IB acronyms
// (link.generation, link.width, workload.connection) and hca.profile are
// accepted in any case and decoded to one spelling, which is what params and results show;
// a name that is none is refused as written, and lower-case names (kinds,
// media) stay exact.
func TestAcronymsInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		set  string
		key  string
		want string
	}{
		{"link.generation=ndr", "link.generation", "NDR"},
		{"link.generation=Fdr10", "link.generation", "FDR10"},
		{"link.width=4X", "link.width", "4x"},
		{"link.width=12X", "link.width", "12x"},
		{"workload.connection=ud", "workload.connection", "UD"},
		{"workload.connection=Rc", "workload.connection", "RC"},
		{"hca.profile=CX7", "hca.profile", "cx7"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			l, err := Load(nil, []string{tc.set})
			require.NoError(t, err)
			v, ok := Value(&l.Config, tc.key)
			require.True(t, ok)
			assert.Equal(t, tc.want, v)
		})
	}
	for _, tc := range []struct{ set, want string }{
		{"workload.connection=uc", `workload.connection: "uc" is not a transport (RC, UD)`},
		{"link.generation=ndr2", `link.generation: "ndr2" is not a generation`},
		{"link.width=4y", `link.width: "4y" is not a width`},
		{"link.medium=Copper", `link.medium: "Copper" is not a medium (copper, fibre)`},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := Load(nil, []string{tc.set})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
