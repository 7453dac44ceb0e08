package fabric

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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
