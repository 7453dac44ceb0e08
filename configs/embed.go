// Package configs embeds the shipped design points, so that
// `hcasim -config ndr.yaml` finds one by name from any directory.
package configs

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed *.yaml bench/*.yaml examples/*.yaml examples/*.trace
var files embed.FS

// Lookup returns a shipped config by name: "ndr.yaml", "ndr", or a path
// ending in configs/ndr.yaml.
func Lookup(name string) ([]byte, bool) {
	b, err := fs.ReadFile(files, shippedName(name))
	return b, err == nil
}

// shippedName is a shipped config's path among the embedded files.
func shippedName(name string) string {
	name = strings.TrimPrefix(name, "./")
	if i := strings.LastIndex(name, "configs/"); i >= 0 {
		name = name[i+len("configs/"):]
	}
	if !strings.HasSuffix(name, ".yaml") {
		name += ".yaml"
	}
	return name
}

// Beside returns a file shipped beside the shipped config named config
// (Lookup's names), file a path relative to that config's directory: the
// message trace of a replay example (workload.trace_file).
func Beside(config, file string) ([]byte, bool) {
	b, err := fs.ReadFile(files, path.Join(path.Dir(shippedName(config)), file))
	return b, err == nil
}

// Names lists the shipped configs.
func Names() []string {
	var out []string
	_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}
