package fabric

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// docSectionRef is a reference to a section of a doc page as the docs
// write one: the page (`hca.md`, [hca.md](hca.md), docs/hca.md), a comma,
// and the section's title in quotes.
var docSectionRef = regexp.MustCompile("(?:docs/)?([a-z0-9-]+\\.md)`?(?:\\]\\([^)]*\\))?,\\s+\"([^\"]+)\"")

// TestDocsSectionReferencesExist: every `page.md, "Title"` reference in the
// docs and the README names a heading of that page (a line starting with #
// that holds the title) or a paragraph it opens in bold (**Title.**), so a
// reader sent there finds it. docs/config.md, fabric.md and hca.md sent
// readers to hca.md's "Service levels and VLs", which did not exist.
func TestDocsSectionReferencesExist(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	pages = append(pages, "../README.md")
	text := map[string]string{}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		text[p] = string(b)
	}
	checked := 0
	for _, p := range pages {
		for _, m := range docSectionRef.FindAllStringSubmatch(text[p], -1) {
			page, title := m[1], strings.Join(strings.Fields(m[2]), " ") // a title may wrap
			target, ok := text["../docs/"+page]
			if !ok {
				t.Errorf("%s refers to %s, %q: no such page in docs/", filepath.Base(p), page, title)
				continue
			}
			checked++
			found := strings.Contains(target, "**"+title+".**") || strings.Contains(target, "**"+title+"**")
			for _, line := range strings.Split(target, "\n") {
				if strings.HasPrefix(line, "#") && strings.Contains(line, title) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s refers to %s, %q: %s has no such heading", filepath.Base(p), page, title, page)
			}
		}
	}
	// The docs hold a dozen such references; matching none would check nothing.
	assert.GreaterOrEqual(t, checked, 10)
}

// TestConfigDocsDefaults: the default a docs table gives a key is the
// default the code has. Each page's table puts the default in its own
// column (config.md: | key | unit | default |; hca.md and switch.md: | Key
// | Default |, switch.md's keys without their "switch." prefix). A cell's
// first token (up to a space or "/": "20 / 2" is latency / interval) is
// compared with the key's value in a config that sets nothing; a default
// the code leaves empty or nil, to resolve later ("" for `ring` (unset),
// nil for workload.sges' 1), and a list or mapping (a VL arbitration
// table) are not compared. config.md gave workload.rx_depth's default as
// 512, which is what the code's 0 stands for, while its allowed range
// left 0 out.
func TestConfigDocsDefaults(t *testing.T) {
	l, err := Load([]byte("seed: 1\n"), nil)
	require.NoError(t, err)
	pages := []struct {
		file, prefix string
		col          int // the default's column, after the key's
	}{{"config.md", "", 2}, {"hca.md", "", 1}, {"switch.md", "switch.", 1}}
	keyCell := regexp.MustCompile("^`([a-z][a-z0-9_.]*)`")
	compared := 0
	for _, pg := range pages {
		b, err := os.ReadFile("../docs/" + pg.file)
		require.NoError(t, err)
		for n, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "| `") {
				continue
			}
			cells := strings.Split(strings.Trim(line, "| "), "|")
			m := keyCell.FindStringSubmatch(strings.TrimSpace(cells[0]))
			if m == nil || len(cells) <= pg.col {
				continue
			}
			key := m[1]
			if pg.prefix != "" && !strings.HasPrefix(key, pg.prefix) {
				key = pg.prefix + key
			}
			v, ok := Value(&l.Config, key)
			if !ok || v == nil {
				continue // not a key, or a table of something else
			}
			code := fmt.Sprint(v)
			if code == "" || strings.HasPrefix(code, "[") || strings.HasPrefix(code, "map[") {
				continue
			}
			doc := strings.TrimSpace(cells[pg.col])
			doc = strings.Trim(strings.FieldsFunc(doc, func(r rune) bool { return r == ' ' || r == '/' })[0], "`")
			doc = strings.ReplaceAll(strings.ReplaceAll(doc, "−", "-"), ",", "")
			same := doc == code
			if df, err1 := strconv.ParseFloat(doc, 64); err1 == nil {
				cf, err2 := strconv.ParseFloat(code, 64)
				same = err2 == nil && df == cf
			}
			if !same {
				t.Errorf("docs/%s:%d: %s: the docs give the default %q, the code has %q", pg.file, n+1, key, doc, code)
			}
			compared++
		}
	}
	// The three pages tabulate well over a hundred defaults.
	assert.Greater(t, compared, 100)
}
