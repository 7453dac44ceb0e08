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

// TestTableValue: the terminal table's rounding. Each want follows the
// rule: below 1,000 four significant digits with trailing zeros dropped,
// from 1,000 up the nearest integer, whole numbers exactly, below 0.001
// four digits in exponent form; non-floats as FormatValue.
func TestTableValue(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{0.183631898, "0.1836"},     // 1.836e-1: four digits are 4 decimals
		{0.00607714337, "0.006077"}, // 6.077e-3: 6 decimals
		{0.9978687, "0.9979"},       // rounds up in the fourth digit
		{1.254, "1.254"},
		{555.752, "555.8"},
		{17507.272, "17507"},        // ≥ 1,000: the integer
		{8.49874261e+06, "8498743"}, // no exponent form
		{1021.5, "1022"},            // half away from zero
		{999.96, "1000"},            // rounding carries to a fifth digit; no "1e+03"
		{0.0099996, "0.01"},         // the same below 1
		{0.25, "0.25"},              // trailing zeros dropped
		{-0.5, "-0.5"},
		{3.0, "3"},                 // a count stays exact
		{123456789.0, "123456789"}, // so does a large one
		{6.0771e-05, "6.077e-05"},  // below 0.001
		{0.0, "0"},
		{float32(0.5), "0.5"},
		{int64(12345678), "12345678"},
		{"1.23 ± 0.04", "1.23 ± 0.04"},
		{true, "true"},
		// Read back from results.json: as the float it was written from.
		{json.Number("555.752"), "555.8"},
		{json.Number("15695"), "15695"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, TableValue(tc.v), "%v", tc.v)
	}
}

// TestTableRoundsCSVKeeps: the table shows a metric rounded for reading,
// the CSV the same point's nine significant digits.
func TestTableRoundsCSVKeeps(t *testing.T) {
	r := &Result{Tool: "hcasim", Points: []Point{
		{Params: map[string]any{"workload.offered_load": 0.2}, Metrics: map[string]any{"accepted_load": 0.183631898, "credit_stall_ns": 8.49874261e+06}},
		{Params: map[string]any{"workload.offered_load": 0.4}, Metrics: map[string]any{"accepted_load": 0.385082332, "credit_stall_ns": 674.776}},
	}}
	var tb bytes.Buffer
	require.NoError(t, WriteTable(&tb, r, nil))
	for _, s := range []string{"0.1836", "8498743", "0.3851", "674.8", "0.2", "0.4"} {
		assert.Contains(t, tb.String(), s)
	}
	assert.NotContains(t, tb.String(), "0.183631898")
	var c bytes.Buffer
	require.NoError(t, WriteCSV(&c, r))
	assert.Contains(t, c.String(), "0.183631898")
	assert.Contains(t, c.String(), "8.49874261e+06")

	one := &Result{Tool: "hcasim", Points: r.Points[:1]}
	tb.Reset()
	require.NoError(t, WriteTable(&tb, one, nil))
	assert.Contains(t, tb.String(), "0.1836", "a single point's key/value table rounds too")
}
