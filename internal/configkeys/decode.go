// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package configkeys

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"go.opentelemetry.io/collector/confmap"
)

// Leftovers is what decoding a component's section found that is none of
// its settings: keys that are no setting (Unknown) and values of the wrong
// type. A component's Config embeds it (`mapstructure:",squash"`), its
// Unmarshal calls Decode and its Validate returns Err: the collector then
// says each by the component's path and the key
// (extensions::process_context: collection_interval: expected a duration
// such as 5s, got "fast"), where an error of Unmarshal comes under three
// lines of "decoding failed" and an empty key (”).
type Leftovers struct {
	// Unknown holds the keys that are none of the Config's settings.
	Unknown map[string]any `mapstructure:",remain"`
	// wrongType holds the values Decode could not take, one error a key.
	wrongType []error
}

// Err returns the errors of l: the values of the wrong type, then the
// keys of l.Unknown, each with the setting of cfg it most likely
// misspells or the component of others it belongs to (Unknown).
func (l *Leftovers) Err(cfg any, others ...Elsewhere) error {
	return errors.Join(errors.Join(l.wrongType...), Unknown(cfg, l.Unknown, others...))
}

// Decode unmarshals conf into cfg (a pointer to a component's Config, from
// its confmap.Unmarshaler) as the collector would, and keeps in left, for
// Validate, what a value of the wrong type is: its key, what the setting
// takes with an example, and what was written (collection_interval:
// expected a duration such as 5s, got "fast"), never a Go type. Such a
// setting keeps its default meanwhile. left is cfg's own Leftovers.
func Decode(conf *confmap.Conf, cfg any, left *Leftovers) error {
	defaults := reflect.New(reflect.TypeOf(cfg).Elem())
	defaults.Elem().Set(reflect.ValueOf(cfg).Elem())
	left.wrongType = nil
	err := conf.Unmarshal(cfg)
	if err == nil {
		return nil
	}
	var wrongType []error
	if !collect(err, func(name string, err error) {
		wrongType = append(wrongType, describe(conf, defaults.Elem(), name, err))
	}) {
		// Not only values of the wrong type (a setting's own Unmarshal
		// failed): all of it now, as the collector says it.
		return err
	}
	left.wrongType = wrongType
	return nil
}

// collect calls add with each one key's decoding error of err's tree,
// with the key, and reports whether every error of the tree was one. It
// walks the tree node by node (errors.As would jump to a descendant).
func collect(err error, add func(name string, err error)) bool {
	if de, ok := err.(*mapstructure.DecodeError); ok && !isJoin(de.Unwrap()) { //nolint:errorlint // this node, not a descendant
		add(de.Name(), de.Unwrap())
		return true
	}
	switch e := err.(type) { //nolint:errorlint // this node's children
	case interface{ Unwrap() []error }:
		all := true
		for _, x := range e.Unwrap() {
			all = collect(x, add) && all
		}
		return all
	case interface{ Unwrap() error }:
		if u := e.Unwrap(); u != nil {
			return collect(u, add)
		}
	}
	return false
}

func isJoin(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

// describe says the error err of the key name (mapstructure's dotted
// path) by what the setting takes and what was written, when name is a
// setting of a plain kind in defaults (cfg's value before decoding);
// else err's own text, its Go type names replaced by kinds.
func describe(conf *confmap.Conf, defaults reflect.Value, name string, err error) error {
	field, ok := fieldAt(defaults, name)
	wanted := ""
	if ok {
		wanted = expected(field)
	}
	if wanted == "" {
		return fmt.Errorf("%s: %w", name, readable(err))
	}
	return fmt.Errorf("%s: expected %s, got %s", name, wanted, written(conf.Get(strings.ReplaceAll(name, ".", confmap.KeyDelimiter))))
}

// fieldAt returns the field of the struct v whose key path is name
// (dotted, as mapstructure names it), through squashed fields.
func fieldAt(v reflect.Value, name string) (reflect.Value, bool) {
	key, rest, nested := strings.Cut(name, ".")
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v = reflect.New(v.Type().Elem())
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		tag, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if strings.Contains(opts, "squash") {
			if found, ok := fieldAt(v.Field(i), name); ok {
				return found, true
			}
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		if tag != key {
			continue
		}
		if nested {
			return fieldAt(v.Field(i), rest)
		}
		return v.Field(i), true
	}
	return reflect.Value{}, false
}

// expected says what a setting whose default is v takes, with an example
// (its default, where it has one to show); "" for a setting that is not
// of a plain kind, or reads text its own way (its errors say what it
// takes).
func expected(v reflect.Value) string {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		return "a duration such as 5s"
	}
	if readsText(v.Type()) {
		return ""
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() != "" {
			return fmt.Sprintf("a string such as %s", v.String())
		}
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("a whole number such as %d", max(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number such as %d", max(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		return "a number such as 0.5"
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String && !readsText(v.Type().Elem()) {
			return ""
		}
		if v.Len() == 0 {
			return "a list such as [a, b]"
		}
		items := make([]string, v.Len())
		for i := range items {
			items[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "a list such as [" + strings.Join(items, ", ") + "]"
	}
	return ""
}

// readsText reports whether a value of type t is read from text by its
// own method (encoding.TextUnmarshaler).
func readsText(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// written says a value as its author wrote it: a scalar itself (a string
// quoted), a list or a mapping by its kind.
func written(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("%q", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprint(v)
}

// readable says err without Go type names.
func readable(err error) error {
	var unconvertible *mapstructure.UnconvertibleTypeError
	var parse *mapstructure.ParseError
	switch {
	case errors.As(err, &unconvertible):
		return fmt.Errorf("expected %s, got %s", kindOf(unconvertible.Expected.Kind()), kindOf(reflect.ValueOf(unconvertible.Value).Kind()))
	case errors.As(err, &parse):
		return fmt.Errorf("cannot read %v as %s: %w", parse.Value, kindOf(parse.Expected.Kind()), parse.Err)
	}
	return err
}

// kindOf names a kind of value as a configuration's author writes it.
func kindOf(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, not negative"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Invalid:
		return "nothing"
	}
	return "a " + k.String()
}
