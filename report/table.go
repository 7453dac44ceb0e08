package report

import (
	"encoding/csv"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteCSV writes one row per point: params, metrics (flattened), error.
func WriteCSV(w io.Writer, r *Result) error {
	params, metrics := Columns(r.Points)
	cw := csv.NewWriter(w)
	header := append(append(append([]string{}, params...), metrics...), "error")
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, p := range r.Points {
		if err := cw.Write(pointRow(p, params, metrics, FormatValue)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable writes the points as a table: a single point as metric/value
// rows, several as one row per point with the chosen metric columns (all
// when cols is empty). Metrics are rounded for reading (TableValue); the CSV
// and JSON keep nine significant digits.
func WriteTable(w io.Writer, r *Result, cols []string) error {
	params, metrics := Columns(r.Points)
	if len(cols) > 0 {
		metrics = intersect(cols, metrics)
	}
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	if len(r.Points) == 1 && r.Points[0].Error == "" {
		p := r.Points[0]
		t.Header("key", "value")
		for _, k := range params {
			if err := t.Append(k, FormatValue(p.Params[k])); err != nil {
				return err
			}
		}
		flat := map[string]string{}
		walkLeaves("", p.Metrics, func(key string, v any) { flat[key] = TableValue(v) })
		for _, k := range metrics {
			if err := t.Append(k, flat[k]); err != nil {
				return err
			}
		}
		return t.Render()
	}
	header := make([]any, 0, len(params)+len(metrics)+1)
	for _, k := range params {
		header = append(header, k)
	}
	for _, k := range metrics {
		header = append(header, k)
	}
	header = append(header, "error")
	t.Header(header...)
	for _, p := range r.Points {
		cells := pointRow(p, params, metrics, TableValue)
		row := make([]any, len(cells))
		for i, c := range cells {
			row[i] = c
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	return t.Render()
}

// pointRow is one point's cells: its params, its flattened metrics rendered
// by format, its error.
func pointRow(p Point, params, metrics []string, format func(any) string) []string {
	flat := map[string]string{}
	walkLeaves("", p.Metrics, func(key string, v any) { flat[key] = format(v) })
	row := make([]string, 0, len(params)+len(metrics)+1)
	for _, k := range params {
		row = append(row, FormatValue(p.Params[k]))
	}
	for _, k := range metrics {
		row = append(row, flat[k])
	}
	return append(row, p.Error)
}

func intersect(want, have []string) []string {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var out []string
	for _, w := range want {
		if set[w] {
			out = append(out, w)
		}
	}
	return out
}
