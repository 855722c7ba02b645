//go:build tools

// Package tools pins the Pulumi Kubernetes provider, which tests/e2e runs against the local control plane.
package tools

import (
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
)
