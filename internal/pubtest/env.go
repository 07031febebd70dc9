// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// EnvInt returns the positive integer the environment variable name holds
// (a benchmark's or soak's size, set by hand), def when it is unset.
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	return envPositive(t, name, def, strconv.Atoi, "integer")
}

// EnvDuration returns the positive duration the environment variable name
// holds, def when it is unset.
func EnvDuration(t testing.TB, name string, def time.Duration) time.Duration {
	t.Helper()
	return envPositive(t, name, def, time.ParseDuration, "duration")
}

func envPositive[T int | time.Duration](t testing.TB, name string, def T, parse func(string) (T, error), what string) T {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := parse(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive %s", name, s, what)
	}
	return v
}
