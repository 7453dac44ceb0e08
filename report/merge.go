package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Part is one shard's output read back for merging: its result with every
// number kept as written, and each point's CSV cells by column.
type Part struct {
	Result *Result
	Rows   []map[string]string
}

// ReadPart reads dir/results.json and dir/results.csv. Numbers stay
// json.Number, so that writing the result again reproduces the shard's
// bytes exactly, and the CSV cells are kept as the shard wrote them from its
// typed values (a float that happens to be whole prints differently from
// an integer, which JSON no longer tells apart).
func ReadPart(dir string) (*Part, error) {
	jpath := filepath.Join(dir, "results.json")
	b, err := os.ReadFile(jpath)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a results.json: %s", jpath, JSONError(err))
	}
	for i := range r.Points {
		if r.Points[i].Params == nil {
			r.Points[i].Params = map[string]any{}
		}
		if r.Points[i].Metrics == nil {
			r.Points[i].Metrics = map[string]any{}
		}
	}
	cpath := filepath.Join(dir, "results.csv")
	f, err := os.Open(cpath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: not a results.csv: %v", cpath, err)
	}
	if len(recs) != len(r.Points)+1 {
		return nil, fmt.Errorf("%s: %d rows for the %d points of results.json", cpath, max(len(recs)-1, 0), len(r.Points))
	}
	p := &Part{Result: &r}
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for j, col := range recs[0] {
			row[col] = rec[j]
		}
		p.Rows = append(p.Rows, row)
	}
	return p, nil
}

// Cells returns a point's results.csv cells by column, as WriteCSV
// writes them from the point's typed values: every param, every flattened
// metric and "error". WriteCSVCells writes them back.
func Cells(p Point) map[string]string {
	row := map[string]string{"error": p.Error}
	for k, v := range p.Params {
		row[k] = FormatValue(v)
	}
	Flatten("", p.Metrics, row)
	return row
}

// WriteCSVCells writes points as WriteCSV does — the same header, computed
// from the points — but takes each cell from rows[i], the cells the point
// was first written with.
func WriteCSVCells(w io.Writer, points []Point, rows []map[string]string) error {
	if len(points) != len(rows) {
		panic(fmt.Sprintf("report: WriteCSVCells with %d points and %d rows", len(points), len(rows)))
	}
	params, metrics := Columns(points)
	header := append(append(append([]string{}, params...), metrics...), "error")
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, row := range rows {
		rec := make([]string, len(header))
		for j, col := range header {
			rec[j] = row[col]
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteMerged writes a merged result into dir: results.json from r,
// results.csv from the points' original cells.
func WriteMerged(dir string, r *Result, rows []map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var jb, cb bytes.Buffer
	if err := WriteJSON(&jb, r); err != nil {
		return err
	}
	if err := WriteCSVCells(&cb, r.Points, rows); err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, "results.json"), jb.Bytes()); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, "results.csv"), cb.Bytes())
}
