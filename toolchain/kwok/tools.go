//go:build tools

// Package tools pins kwok, which runs the local cluster's simulated nodes and their pods (scripts/local-cluster).
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
