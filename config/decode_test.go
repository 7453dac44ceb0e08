package config

import (
	"strings"
	"testing"
)

type numbers struct {
	I   int     `yaml:"i"`
	I8  int8    `yaml:"i8"`
	U   uint64  `yaml:"u"`
	U16 uint16  `yaml:"u16"`
	F   float64 `yaml:"f"`
}

func decodeNumbers(t *testing.T, text string) (numbers, error) {
	t.Helper()
	root, err := Parse([]byte(text))
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	var out numbers
	return out, Decode(root, &out)
}

// TestDecodeWholeNumbers: an integer key takes a whole number that fits its
// type, written as an integer or as a whole float (1e3); a fraction, a
// boolean or a value beyond the type is refused, never truncated or wrapped
// (YAML's own decoding turns 4096.7 into 4096 and 2^64 into 2^63).
func TestDecodeWholeNumbers(t *testing.T) {
	good := map[string]numbers{
		"i: 4096":                 {I: 4096},
		"i: 1e3":                  {I: 1000},
		"i: -2.0e1":               {I: -20},
		"i: 0x10":                 {I: 16},
		"i8: -128":                {I8: -128},
		"u: 18446744073709551615": {U: 18446744073709551615}, // 2^64-1: exact, not via float64
		"u16: 65535":              {U16: 65535},
	}
	for text, want := range good {
		got, err := decodeNumbers(t, text)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", text, got, err, want)
		}
	}
	bad := map[string]string{
		"i: 4096.7":               `i: "4096.7" is not a whole number`,
		"i: 1.5":                  `i: "1.5" is not a whole number`,
		"i: .nan":                 `i: ".nan" is not a whole number`,
		"i: .inf":                 `i: ".inf" is not a whole number`,
		"i: true":                 `i: "true" is not a whole number`,
		"i: four":                 `i: "four" is not a whole number`,
		"i8: 128":                 "i8: 128 is out of range (-128 to 127)",
		"i8: 1e3":                 "i8: 1e3 is out of range (-128 to 127)",
		"u: 18446744073709551616": "u: 18446744073709551616 is out of range (0 to 18446744073709551615)",
		"u: -1":                   "u: -1 is out of range (0 to 18446744073709551615)",
		"u16: 65536":              "u16: 65536 is out of range (0 to 65535)",
		"u16: 2.5":                `u16: "2.5" is not a non-negative whole number`,
	}
	for text, want := range bad {
		got, err := decodeNumbers(t, text)
		if err == nil || err.Error() != want {
			t.Errorf("%q: got %+v, %v; want error %q", text, got, err, want)
		}
	}
}

// TestDecodeFiniteFloats: NaN and infinities are refused for every float
// key (a range check written as "v < 0" lets NaN through).
func TestDecodeFiniteFloats(t *testing.T) {
	for _, v := range []string{".nan", ".NaN", ".inf", "-.inf", "+.Inf"} {
		_, err := decodeNumbers(t, "f: "+v)
		if err == nil || err.Error() != `f: "`+v+`" is not a finite number` {
			t.Errorf("f: %s: got %v", v, err)
		}
	}
	got, err := decodeNumbers(t, "f: 2.5e-3")
	if err != nil || got.F != 0.0025 {
		t.Errorf("f: 2.5e-3: got %v, %v", got.F, err)
	}
}

// TestParseOneDocument: a second YAML document would be ignored, so it is
// refused; a trailing "---" with nothing after it is harmless.
func TestParseOneDocument(t *testing.T) {
	_, err := Parse([]byte("i: 1\n---\nfoo: bar\n"))
	if err == nil || err.Error() != "line 2: a second YAML document (after ---); a config is one document" {
		t.Errorf("two documents: got %v", err)
	}
	for _, text := range []string{"---\ni: 1\n", "i: 1\n---\n", "i: 1\n...\n"} {
		if _, err := decodeNumbers(t, text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
	if _, err := Parse([]byte("i: 1\n---\n[\n")); err == nil || !strings.HasPrefix(err.Error(), "broken YAML") {
		t.Errorf("broken second document: got %v", err)
	}
}

type shapes struct {
	L []int          `yaml:"l"`
	M map[string]any `yaml:"m"`
	S struct {
		A int `yaml:"a"`
	} `yaml:"s"`
}

// TestDecodeShapes: a null list entry is refused (it decoded as 0; a key
// left empty keeps its default, an entry has none); a scalar where a
// mapping belongs names the key without Go's type names; a value from
// --set names no line (its text is one line of its own, "line 1" misled).
func TestDecodeShapes(t *testing.T) {
	decodeShapes := func(text string, sets ...string) error {
		root, err := Parse([]byte(text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		for _, s := range sets {
			if err := Set(root, s); err != nil {
				return err
			}
		}
		var out shapes
		return Decode(root, &out)
	}
	for _, tc := range []struct {
		text string
		sets []string
		want string
	}{
		{"l: [1, null, 3]\n", nil, "l[1]: line 1: an empty value (null); give one"},
		{"l:\n  - 1\n  -\n", nil, "l[1]: line 3: an empty value (null); give one"},
		{"s: {a: 1}\n", []string{"l=[1, ~]"}, "l[1]: an empty value (null); give one"},
		{"m: 5\n", nil, `m: line 1: want a mapping of keys, got the value "5"`},
		{"s: {a: 1}\n", []string{"m=5"}, `m: want a mapping of keys, got the value "5"`},
		{"s: {a: 1}\n", []string{"s=3"}, `s: want a mapping of keys, got the value "3"`},
		{"s: 3\n", nil, `s: line 1: want a mapping of keys, got the value "3"`},
		{"s: {a: 1}\n", []string{"l=4"}, `l: want a list, got the value "4"`},
		// A list entry cannot be set by index ("unknown key" of the whole
		// "l[1]" told nothing of how to set it).
		{"l: [1, 2]\n", []string{"l[1]=5"}, `--set l[1]: a list is set whole, not by index: --set 'l=[...]' with every entry`},
		{"s: {a: 1}\n", []string{"s.b[0].c=5"}, `--set s.b[0].c: a list is set whole, not by index: --set 's.b=[...]' with every entry`},
	} {
		err := decodeShapes(tc.text, tc.sets...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q %v: got %v, want %q", tc.text, tc.sets, err, tc.want)
		}
	}
	if err := decodeShapes("l: [1, 2]\nm: {k: v}\n", "s.a=2"); err != nil {
		t.Errorf("valid shapes: %v", err)
	}
}

// TestDecodeQuotedScalars: a quoted number or boolean is a string to
// YAML, and refused, with the reason: '"5" is not a number' alone read as
// nonsense to a user whose templating tool quotes every value. A quoted
// value that is no number unquoted either gets no such hint, and an
// unquoted one decodes.
func TestDecodeQuotedScalars(t *testing.T) {
	type scalars struct {
		N int     `yaml:"n"`
		F float64 `yaml:"f"`
		B bool    `yaml:"b"`
	}
	const hint = " (it is quoted, so YAML reads it as a string: write it without quotes)"
	for _, tc := range []struct {
		text, set, want string
	}{
		{"n: \"4096\"\n", "", `n: "4096" is not a whole number` + hint},
		{"n: '4096'\n", "", `n: "4096" is not a whole number` + hint},
		{"f: \"1e-9\"\n", "", `f: "1e-9" is not a number` + hint},
		{"b: \"true\"\n", "", `b: "true" is not true or false` + hint},
		{"n: 1\n", `f="5"`, `f: "5" is not a number` + hint},
		{"n: \"abc\"\n", "", `n: "abc" is not a whole number`},
		{"n: \"4096.5\"\n", "", `n: "4096.5" is not a whole number`},
		{"f: \"fast\"\n", "", `f: "fast" is not a number`},
		{"n: 4096\nf: 1e-9\nb: true\n", "", ""},
	} {
		root, err := Parse([]byte(tc.text))
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if tc.set != "" {
			if err := Set(root, tc.set); err != nil {
				t.Fatalf("%q: %v", tc.set, err)
			}
		}
		var out scalars
		err = Decode(root, &out)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.text, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%q %q: got %v, want %q", tc.text, tc.set, err, tc.want)
		}
	}
}

// TestDecodeItems: an Items key takes its comma-separated string or the
// same items as a YAML list (a list is its items joined by commas); a
// list that is empty, nests, or hides a comma in an item is refused.
func TestDecodeItems(t *testing.T) {
	type items struct {
		P Items `yaml:"p"`
	}
	for _, tc := range []struct {
		text, want, err string
	}{
		{"p: \"1-4,7\"\n", "1-4,7", ""},
		{"p: [1-4, 7]\n", "1-4,7", ""},
		{"p: [1, 2]\n", "1,2", ""},
		{"p: host\n", "host", ""},
		{"p: []\n", "", "p: line 1: an empty list; give at least one item, or leave the key out"},
		{"p: [1, [2]]\n", "", "p[1]: line 1: want one item (a number or a word), got a list"},
		{"p: [1, ~]\n", "", "p[1]: line 1: want one item (a number or a word), got the value \"~\""},
		{"p: [\"1,2\"]\n", "", `p[0]: "1,2" holds a comma; in a list give each item as its own entry`},
		{"p: {a: 1}\n", "", "p: line 1: want a string, got a mapping"},
	} {
		root, err := Parse([]byte(tc.text))
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		var out items
		err = Decode(root, &out)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.text, err)
		case tc.err == "" && out.P != Items(tc.want):
			t.Errorf("%q: %q, want %q", tc.text, out.P, tc.want)
		}
	}
}
