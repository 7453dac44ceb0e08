package fabric

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Value returns the value of a dotted key in cfg (for report params). A
// list of entries (switch.vlarb_high, switch.sl2vl_pairs) comes back as
// the config spells it, a []any of maps keyed by the YAML keys, so params
// print {vl: 0, weight: 4}, not the Go field names.
func Value(cfg *Config, key string) (any, bool) {
	v := reflect.ValueOf(cfg).Elem()
	for _, part := range strings.Split(key, ".") {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil, false
		}
		found := false
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == part {
				v = v.Field(i)
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	if v.Kind() == reflect.Pointer {
		// An optional key (workload.sges, workload.background_sl): its
		// value when set; nil, no param, when not.
		if v.IsNil() {
			return nil, true
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct {
		b, err := yaml.Marshal(v.Interface())
		if err != nil {
			panic(fmt.Sprintf("fabric: marshal %s: %v", key, err))
		}
		var out []any
		if err := yaml.Unmarshal(b, &out); err != nil {
			panic(fmt.Sprintf("fabric: unmarshal %s: %v", key, err))
		}
		return out, true
	}
	return v.Interface(), true
}
