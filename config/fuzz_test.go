package config

import (
	"testing"
)

type fuzzTarget struct {
	A int                `yaml:"a"`
	B string             `yaml:"b"`
	C float64            `yaml:"c"`
	D []int              `yaml:"d"`
	E struct{ F bool }   `yaml:"e"`
	G map[string]any     `yaml:"g"`
	H *struct{ I uint8 } `yaml:"h"`
}

// FuzzDecode: no input makes the strict decoder (or --set) panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("a: 1\nb: x\nc: 2.5\nd: [1, 2]\ne: {f: true}\n"), "a=3")
	f.Add([]byte("a: [\n"), "e.f=maybe")
	f.Add([]byte("*x"), "=")
	f.Add([]byte("a: &x 1\nb: *x\n"), "h.i=300")
	f.Add([]byte("- 1\n- 2\n"), "g.k=[1,{a: b}]")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		root, err := Parse(data)
		if err != nil {
			return
		}
		_ = Set(root, set)
		var out fuzzTarget
		_ = Decode(root, &out)
	})
}

func TestUnknownKeySuggests(t *testing.T) {
	root, err := Parse([]byte("e:\n  ff: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out fuzzTarget
	err = Decode(root, &out)
	if err == nil || err.Error() != "e.ff: unknown key (did you mean e.f?)" {
		t.Fatalf("got %v", err)
	}
}
