package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadJSONErrorsNameNoGoType: a results.json hcasim cannot read back
// (merge, --resume) is refused in the file's terms, the field, what it
// holds and what belongs there, or where the text ends; never Go's types
// ("cannot unmarshal string into Go struct field Result.points of type
// []report.Point"). ReadPart (merge) says the same as ReadJSON.
func TestReadJSONErrorsNameNoGoType(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"tool": "hcasim", "points": "x"}`, "field points holds a JSON string, where an array belongs"},
		{`[]`, "the file holds a JSON array, where an object belongs"},
		{`{"points": [{"params": {}, "metrics": {}, "error": 5}]}`, "field points.error holds a JSON number, where a string belongs"},
		{`{"tool": "hcasim", "points": [`, "cut short: the JSON ends inside a value (a write that did not finish?)"},
		{`{"tool": hcasim}`, "broken JSON at byte 10: invalid character 'h' looking for beginning of value"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "results.json")
		require.NoError(t, os.WriteFile(path, []byte(c.text), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "results.csv"), nil, 0o644))
		_, err := ReadJSON(path)
		require.Error(t, err, c.text)
		assert.Equal(t, path+": not a results.json: "+c.want, err.Error())
		assert.NotContains(t, err.Error(), "Go ")
		_, err = ReadPart(dir)
		require.Error(t, err, c.text)
		assert.Equal(t, path+": not a results.json: "+c.want, err.Error())
	}
}
