//go:build tools

// Package tools pins the Pulumi CLI (github.com/pulumi/pulumi/pkg/v3/cmd/pulumi), which tests/e2e runs with a
// file backend against the local control plane.
package tools

import (
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
