// Package config reads YAML design points strictly: every key is checked
// against the Go struct it fills, an unknown key is an error naming its full
// dotted path and the nearest valid key, and a value of the wrong type is an
// error naming the key, the value and the type wanted. `--set key=value`
// overrides go through the same path, so they are checked the same way.
//
// The structs themselves (link.Config, hca.Config, switchasic.Config, …) and
// their defaults and range checks live with the blocks they configure; this
// package only decodes.
package config
