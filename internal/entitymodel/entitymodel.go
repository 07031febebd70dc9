// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package entitymodel is the one definition of the entities of the
// semantic conventions that the receiver states and the processor
// references on enriched telemetry: their types and the resource attribute
// keys that identify and describe them. Both components read it, so that a
// backend joining entity events with enriched telemetry finds the same ids.
//
// The keys are the semantic conventions' (go.opentelemetry.io/otel/semconv);
// the entities are those of their model/*/entities.yaml, with one choice
// of ours: a service is identified by service.name together with
// service.namespace when it is set, since service.name is unique only
// within its namespace (the service.namespace entity is referenced too).
package entitymodel

import (
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Entity types.
const (
	Process          = "process"
	Service          = "service"
	ServiceInstance  = "service.instance"
	ServiceNamespace = "service.namespace"
	Host             = "host"
	Container        = "container"
	Pod              = "k8s.pod"
)

// Resource attribute keys of the process's identity.
const (
	ProcessPIDKey          = string(semconv.ProcessPIDKey)
	ProcessCreationTimeKey = string(semconv.ProcessCreationTimeKey)
	ProcessCommandLineKey  = string(semconv.ProcessCommandLineKey)
	ProcessCommandArgsKey  = string(semconv.ProcessCommandArgsKey)
	ProcessVPIDKey         = string(semconv.ProcessVpidKey)

	ServiceNameKey        = string(semconv.ServiceNameKey)
	ServiceNamespaceKey   = string(semconv.ServiceNamespaceKey)
	ServiceInstanceIDKey  = string(semconv.ServiceInstanceIDKey)
	ServiceVersionKey     = string(semconv.ServiceVersionKey)
	ServiceCriticalityKey = string(semconv.ServiceCriticalityKey)

	DeploymentEnvironmentNameKey = string(semconv.DeploymentEnvironmentNameKey)
	TelemetrySDKNameKey          = string(semconv.TelemetrySDKNameKey)
	TelemetrySDKLanguageKey      = string(semconv.TelemetrySDKLanguageKey)
	TelemetrySDKVersionKey       = string(semconv.TelemetrySDKVersionKey)

	ContainerIDKey = string(semconv.ContainerIDKey)
	PodUIDKey      = string(semconv.K8SPodUIDKey)
	HostIDKey      = string(semconv.HostIDKey)
	HostNameKey    = string(semconv.HostNameKey)
)

// Entity is an entity type and the resource attribute keys that identify
// it (all present, but those Optional) and describe it (where present).
type Entity struct {
	Type        string
	ID          []string
	Optional    []string // identifying keys used when present
	Description []string
}

// Services returns the service entities a published identity names. A
// function, not a variable: nothing can change them.
func Services() [3]Entity {
	return [...]Entity{
		{Type: Service, ID: []string{ServiceNameKey}, Optional: []string{ServiceNamespaceKey},
			Description: []string{ServiceVersionKey, ServiceCriticalityKey}},
		{Type: ServiceInstance, ID: []string{ServiceInstanceIDKey}},
		{Type: ServiceNamespace, ID: []string{ServiceNamespaceKey}},
	}
}
