// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package configkeys

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/go-viper/mapstructure/v2"
	"go.opentelemetry.io/collector/confmap"
)

// Decode unmarshals conf into cfg (a pointer to a component's Config, from
// its confmap.Unmarshaler) as the collector would, and says a value of the
// wrong type by its key and the kind of value wanted ('discovery' expected
// a string, got a list), where mapstructure names the Go type that refused
// it ('hostopen.Discovery'). Other errors keep their text.
func Decode(conf *confmap.Conf, cfg any) error {
	err := conf.Unmarshal(cfg)
	if err == nil {
		return nil
	}
	var leaves []error
	collect(err, &leaves)
	if len(leaves) == 0 {
		return err
	}
	return fmt.Errorf("decoding failed: %w", errors.Join(leaves...))
}

// collect appends the decoding errors of err's tree, each one key's, with
// Go type names replaced by kinds of values. It walks the tree node by
// node (errors.As would jump to a descendant).
func collect(err error, leaves *[]error) {
	if de, ok := err.(*mapstructure.DecodeError); ok && !isJoin(de.Unwrap()) { //nolint:errorlint // this node, not a descendant
		*leaves = append(*leaves, fmt.Errorf("'%s' %w", de.Name(), readable(de.Unwrap())))
		return
	}
	switch e := err.(type) { //nolint:errorlint // this node's children
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			collect(x, leaves)
		}
	case interface{ Unwrap() error }:
		if u := e.Unwrap(); u != nil {
			collect(u, leaves)
			return
		}
		*leaves = append(*leaves, err)
	default:
		*leaves = append(*leaves, err)
	}
}

func isJoin(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
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
