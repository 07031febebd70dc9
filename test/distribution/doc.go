// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package distribution tests what a user builds and runs from the
// documentation: the ocb manifest of the README (our components plus the
// collector's core ones) is built with ocb and its components listed;
// the recipes in examples/ pass `validate` with a collector built from that
// manifest plus the contrib components examples/README.md names; every
// complete configuration in a README passes `validate` with the
// distribution of this repository.
package distribution
