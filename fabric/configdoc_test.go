package fabric

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/config"
)

// TestConfigDocsCoverEveryKey: every config key is documented, in
// docs/config.md or in the page of the block it configures.
func TestConfigDocsCoverEveryKey(t *testing.T) {
	var docs strings.Builder
	for _, f := range []string{"config.md", "hca.md", "switch.md", "fabric.md"} {
		b, err := os.ReadFile("../docs/" + f)
		if err == nil {
			docs.Write(b)
		}
	}
	text := docs.String()
	keys := config.Keys(reflect.TypeOf(Config{}))
	assert.Greater(t, len(keys), 50)
	for _, k := range keys {
		last := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(text, "`"+k+"`") && !strings.Contains(text, "`"+last+"`") {
			t.Errorf("config key %s is not documented in docs/", k)
		}
	}
}
