// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package manifests checks the deployment files against each other and
// against what they deploy: deploy/kubernetes/daemonset.yaml decoded
// strictly into the Kubernetes API types, deploy/helm/values.yaml against
// the opentelemetry-collector chart's values schema, both against the image
// that `make image` builds (Makefile, Containerfile) and against the
// collector config they carry, which the built collector must accept.
package manifests
