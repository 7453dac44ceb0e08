package fabric

import (
	"reflect"
	"strings"
)

// Value returns the value of a dotted key in cfg (for report params).
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
	return v.Interface(), true
}
