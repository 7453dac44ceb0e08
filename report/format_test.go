package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestFormatValueFlow: lists and mappings print in YAML flow form, and that
// text read back as YAML (what --set does) gives the value again.
func TestFormatValueFlow(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"scalar int", 8192, "8192"},
		{"scalar float", 0.1 + 0.2, "0.3"},
		{"scalar string", "4x", "4x"},
		{"nil", nil, ""},
		{"sl2vl", []any{0, 0, 1, 15}, "[0, 0, 1, 15]"},
		{"empty list", []any{}, "[]"},
		{"floats", []any{0.25, 1e-7}, "[0.25, 1e-07]"},
		{"strings", []any{"fifo", "voq"}, "[fifo, voq]"},
		{"strings YAML would misread", []any{"a, b", "true", "1", "", " x", "#c"}, `["a, b", "true", "1", "", " x", "#c"]`},
		{"nested", []any{[]any{0, 1}, []any{}}, "[[0, 1], []]"},
		{"mapping, keys sorted", map[string]any{"b": 2, "a": []any{1}}, "{a: [1], b: 2}"},
		{"typed slice", []int{3, 4}, "[3, 4]"},
		{"bool in a list", []any{true, false}, "[true, false]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FormatValue(tc.v)
			assert.Equal(t, tc.want, got)
			if _, ok := tc.v.([]any); ok {
				var back any
				require.NoError(t, yaml.Unmarshal([]byte(got), &back), got)
				assert.Equal(t, tc.v, back, "%s read back as YAML", got)
			}
		})
	}
}

// TestListParamOutputs: a swept list (switch.sl2vl) is the same flow text
// in the table and in the CSV, and stays an array in the JSON.
func TestListParamOutputs(t *testing.T) {
	sl2vl := []any{0, 0, 1}
	r := &Result{Tool: "hcasim", Points: []Point{
		{Params: map[string]any{"switch.sl2vl": sl2vl}, Metrics: map[string]any{"goodput_gbps": 1.5}},
		{Params: map[string]any{"switch.sl2vl": []any{0, 1, 1}}, Metrics: map[string]any{"goodput_gbps": 2.5}},
	}}
	var c bytes.Buffer
	require.NoError(t, WriteCSV(&c, r))
	rows, err := csv.NewReader(&c).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 3)
	assert.Equal(t, "[0, 0, 1]", rows[1][0])
	assert.Equal(t, "[0, 1, 1]", rows[2][0])

	var tb bytes.Buffer
	require.NoError(t, WriteTable(&tb, r, nil))
	assert.Contains(t, tb.String(), "[0, 0, 1]")
	assert.NotContains(t, tb.String(), "[0 0 1]")

	var j bytes.Buffer
	require.NoError(t, WriteJSON(&j, r))
	var back struct {
		Points []struct {
			Params map[string]any `json:"params"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal(j.Bytes(), &back))
	assert.Equal(t, []any{0.0, 0.0, 1.0}, back.Points[0].Params["switch.sl2vl"], "JSON keeps a real array")
}
